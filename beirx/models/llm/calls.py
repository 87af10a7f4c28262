"""What is sent to an OpenAI-compatible server and what comes back, independent of how it travels (a live
request through the client, or a line of an OpenAI Batch file)."""

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
        """The JSON body (the client's keyword arguments; a Batch line's ``body``)."""
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
    def from_body(cls, kind: str, body: dict[str, Any], attempts: int = 1) -> Reply:
        """From a response's JSON (a live answer's ``model_dump()`` or a Batch output line's body)."""
        choices = body.get("choices") or [{}]
        choice = choices[0] or {}
        if kind == CHAT:
            message = choice.get("message") or {}
            text, refusal = message.get("content") or "", message.get("refusal") or None
        else:
            text, refusal = choice.get("text") or "", None
        return cls(text, choice.get("finish_reason"), Usage.from_payload(body.get("usage")), refusal, attempts)
