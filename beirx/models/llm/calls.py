"""What is asked of an LLM and what comes back, independent of how it travels (a live request through the
client, a line of an OpenAI Batch file, or a prompt generated in process by :mod:`.local`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from beirx.models.llm.tokens import approx_tokens
from beirx.models.llm.usage import Usage

CHAT, COMPLETIONS = "chat", "completions"
#: The path of each API under the base URL (also the ``url`` of a Batch file line).
PATHS = {CHAT: "/v1/chat/completions", COMPLETIONS: "/v1/completions"}


@dataclass(frozen=True)
class Request:
    """One chat (``messages``) or plain-completions (``prompt``) request; build with :meth:`chat` or
    :meth:`completion`. Temperature 0 and a fixed ``seed`` by default: servers that honour them answer
    the same request the same way. ``extra`` goes into the JSON body as is (server-specific parameters)."""

    kind: str
    messages: tuple[dict[str, str], ...] = ()
    prompt: str = ""
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    temperature: float = 0.0
    seed: int | None = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def chat(cls, messages: list[dict[str, str]] | tuple[dict[str, str], ...], **params: Any) -> Request:
        return cls(CHAT, messages=tuple(messages), **params)

    @classmethod
    def completion(cls, prompt: str, **params: Any) -> Request:
        return cls(COMPLETIONS, prompt=prompt, **params)

    @property
    def text(self) -> str:
        """Everything the model reads."""
        return "\n".join(m.get("content", "") for m in self.messages) if self.kind == CHAT else self.prompt

    def body(self, model: str) -> dict[str, Any]:
        """The JSON body: what the client posts (it adds ``stream``), and a Batch file line's ``body``."""
        body: dict[str, Any] = {"model": model, "temperature": self.temperature}
        if self.kind == CHAT:
            body["messages"] = [dict(m) for m in self.messages]
        else:
            body["prompt"] = self.prompt
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.stop:
            body["stop"] = list(self.stop)
        if self.seed is not None:
            body["seed"] = self.seed
        return {**body, **self.extra}

    def worst_case(self) -> Usage:
        """An upper estimate of the usage, for the spending cap: the prompt by :func:`approx_tokens` (plus
        a few tokens of chat framing per message), and ``max_tokens`` (or twice the prompt) generated."""
        prompt = approx_tokens(self.text) + 4 * len(self.messages)
        return Usage(prompt, self.max_tokens if self.max_tokens is not None else 2 * prompt)


@dataclass(frozen=True)
class Reply:
    """The first choice of an answer: its text, why generation stopped (``stop``, ``length``,
    ``content_filter`` ...), a chat model's explicit ``refusal`` if any, the usage, and the attempts it took."""

    text: str
    finish_reason: str | None
    usage: Usage
    refusal: str | None = None
    attempts: int = 1

    @classmethod
    def from_body(cls, kind: str, body: Any, attempts: int = 1) -> Reply:
        """From a response's JSON (a live answer, or a Batch output line's body); :class:`BadAnswer` saying
        what is wrong when it is not a completion of ``kind``."""
        if not isinstance(body, dict):
            raise BadAnswer(f"a JSON {type(body).__name__} instead of an object")
        choice = _first_choice(body)
        if kind == CHAT:
            message = choice.get("message")
            if message is None:
                message = {}
            if not isinstance(message, dict):
                raise BadAnswer(f"choices[0].message is a {type(message).__name__}, not an object")
            text, refusal = _string(message, "content", "choices[0].message"), message.get("refusal") or None
        else:
            text, refusal = _string(choice, "text", "choices[0]"), None
        return cls(text, choice.get("finish_reason"), Usage.from_payload(body.get("usage")),
                   refusal if isinstance(refusal, str) else None, attempts)


class BadAnswer(Exception):
    """A 200 answer that is not a completion (the message says what is wrong; the client names the server)."""


def _first_choice(body: dict[str, Any]) -> dict[str, Any]:
    choices = body.get("choices")
    if choices is None or choices == []:
        if "error" in body:
            raise BadAnswer(f"an error instead of a completion: {str(body['error'])[:200]}")
        return {}
    if not isinstance(choices, list):
        raise BadAnswer(f"'choices' is a {type(choices).__name__}, not a list")
    if not isinstance(choices[0], dict):
        raise BadAnswer(f"choices[0] is a {type(choices[0]).__name__}, not an object")
    return choices[0]


def _string(node: dict[str, Any], key: str, where: str) -> str:
    value = node.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadAnswer(f"{where}.{key} is a {type(value).__name__}, not a string")
    return value


class StreamedReply:
    """Assembles a streamed answer (server-sent ``chat.completion.chunk``/``text_completion`` events) into
    the body :meth:`Reply.from_body` reads: the text deltas joined, the last finish reason, the usage if the
    server sent it (``stream_options.include_usage``), else ``None``."""

    def __init__(self, kind: str):
        self.kind = kind
        self.parts: list[str] = []
        self.refusal: list[str] = []
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.chunks = 0

    def add(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise BadAnswer(f"a streamed event is a JSON {type(chunk).__name__}, not an object")
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        if "error" in chunk and not chunk.get("choices"):
            raise BadAnswer(f"an error in the stream: {str(chunk['error'])[:200]}")
        choice = _first_choice(chunk)
        if not choice:
            return
        self.chunks += 1
        if self.kind == CHAT:
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise BadAnswer(f"choices[0].delta is a {type(delta).__name__}, not an object")
            self.parts.append(_string(delta, "content", "choices[0].delta"))
            if isinstance(delta.get("refusal"), str):
                self.refusal.append(delta["refusal"])
        else:
            self.parts.append(_string(choice, "text", "choices[0]"))
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]

    def body(self) -> dict[str, Any]:
        text = "".join(self.parts)
        choice = {"finish_reason": self.finish_reason}
        if self.kind == CHAT:
            choice["message"] = {"content": text, "refusal": "".join(self.refusal) or None}
        else:
            choice["text"] = text
        return {"choices": [choice], "usage": self.usage}
