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
#: Tokens of chat framing (role markers of chat templates) per message.
CHAT_FRAMING_TOKENS = 4


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
        prompt = approx_tokens(self.text) + CHAT_FRAMING_TOKENS * len(self.messages)
        return Usage(prompt, self.max_tokens if self.max_tokens is not None else 2 * prompt)


@dataclass(frozen=True)
class Reply:
    """The first choice of an answer: its text, why generation stopped (``stop``, ``length``,
    ``content_filter`` ...), a chat model's explicit ``refusal`` if any, the usage, the attempts it took, and
    when the request asked for ``logprobs``, the first token's ``top_logprobs`` as ``(token, logprob)``."""

    text: str
    finish_reason: str | None
    usage: Usage
    refusal: str | None = None
    attempts: int = 1
    top_logprobs: tuple[tuple[str, float], ...] | None = None

    @classmethod
    def from_body(cls, kind: str, body: Any, attempts: int = 1) -> Reply:
        """From a response's JSON (a live answer, or a Batch output line's body); :class:`BadAnswer` saying
        what is wrong when it is not a completion of ``kind``."""
        text, refusal, finish_reason, top = _first_choice(kind, body, "message") or ("", None, None, None)
        return cls(text, finish_reason, Usage.from_payload(body.get("usage")), refusal, attempts, top)


class BadAnswer(Exception):
    """A 200 answer that is not a completion (the message says what is wrong; the client names the server)."""


def _first_choice(kind: str, body: Any, key: str) -> tuple[str, str | None, str | None, Any] | None:
    """``(text, refusal, finish_reason, top_logprobs)`` of the first choice of a response's JSON (``key``:
    ``message``, or ``delta`` in a streamed event), None when it has no choice; :class:`BadAnswer` when it is
    malformed."""
    if not isinstance(body, dict):
        raise BadAnswer(f"a JSON {type(body).__name__} instead of an object")
    choices = body.get("choices")
    if choices is None or choices == []:
        if "error" in body:
            raise BadAnswer(f"an error instead of a completion: {str(body['error'])[:200]}")
        return None
    if not isinstance(choices, list):
        raise BadAnswer(f"'choices' is a {type(choices).__name__}, not a list")
    choice = node = choices[0]
    where = "choices[0]"
    for _ in range(2 if kind == CHAT else 1):  # the choice, then a chat choice's message (or delta)
        if not isinstance(node, dict):
            raise BadAnswer(f"{where} is a {type(node).__name__}, not an object")
        if kind == CHAT and node is choice:
            node, where = {} if choice.get(key) is None else choice[key], f"{where}.{key}"
    text, refusal = node.get("content" if kind == CHAT else "text"), node.get("refusal")
    if text is not None and not isinstance(text, str):
        raise BadAnswer(f"{where}.{'content' if kind == CHAT else 'text'} is a {type(text).__name__}, not a string")
    return (text or "", refusal if isinstance(refusal, str) and refusal else None, choice.get("finish_reason"),
            _top_logprobs(choice.get("logprobs")))


def _top_logprobs(logprobs: Any) -> tuple[tuple[str, float], ...] | None:
    """The first token's alternatives: chat's ``logprobs.content[0].top_logprobs`` (a list of ``{token,
    logprob}``) or completions' ``logprobs.top_logprobs[0]`` (``{token: logprob}``); None when not sent."""
    try:
        if logprobs and logprobs.get("content"):
            return tuple((t["token"], float(t["logprob"])) for t in logprobs["content"][0]["top_logprobs"])
        if logprobs and logprobs.get("top_logprobs"):
            return tuple((t, float(p)) for t, p in logprobs["top_logprobs"][0].items())
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise BadAnswer(f"malformed logprobs ({type(exc).__name__}: {exc})") from None
    return None


class StreamedReply:
    """Assembles a streamed answer (server-sent ``chat.completion.chunk``/``text_completion`` events): the text
    deltas joined, the last finish reason, the usage if the server sent it (``stream_options.include_usage``)."""

    def __init__(self, kind: str):
        self.kind, self.parts, self.refusal, self.finish_reason, self.usage, self.chunks = kind, [], [], None, None, 0
        self.top_logprobs = None

    def add(self, chunk: Any) -> None:
        if isinstance(chunk, dict) and chunk.get("usage"):
            self.usage = chunk["usage"]
        choice = _first_choice(self.kind, chunk, "delta")
        if choice is not None:
            self.chunks += 1
            self.parts.append(choice[0])
            self.refusal.append(choice[1] or "")
            self.finish_reason = choice[2] or self.finish_reason
            self.top_logprobs = self.top_logprobs or choice[3]  # the first token's

    def reply(self, attempts: int, usage: Usage) -> Reply:
        """The answer (``usage``: what counts when the server sent none)."""
        return Reply("".join(self.parts), self.finish_reason,
                     usage if self.usage is None else Usage.from_payload(self.usage), "".join(self.refusal) or None,
                     attempts, self.top_logprobs)
