"""Where an OpenAI-compatible server is and how to talk to it: base URL, model, limits. Never the key.

The base URL comes from the caller (``--llm-base-url``, ``--judge-base-url``), else ``OPENAI_BASE_URL``, else
OpenAI's own API. The key comes only from ``OPENAI_API_KEY``, read when the client starts: it is never an
argument, never part of :meth:`Endpoint.describe` (which artifacts record), never logged. A local server (vLLM,
llama.cpp's ``llama-server``, Ollama, TGI) needs none; :data:`NO_KEY` is sent in its place, which those
servers ignore unless they were started with a key.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from beirx.errors import BeirxError
from beirx.redact import redact_url

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
OPENAI_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "no-key"
HOSTED_NEEDING_KEY = ("api.openai.com",)
#: Requests one client keeps in flight at most (beyond it a server queues them and timeouts fire).
MAX_CONCURRENCY = 256


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server and the limits of one client's traffic to it.

    ``concurrency``: requests in flight at once (at most :data:`MAX_CONCURRENCY`); ``timeout``: seconds an
    attempt may go without progress (until the answer starts, between two streamed tokens); ``deadline``:
    seconds an attempt may take in all (default 10 x ``timeout``); ``attempts``: tries per
    request on 429/5xx/timeouts/dropped connections; ``backoff``: first backoff delay in seconds (doubling,
    with jitter; ``Retry-After`` wins when sent); ``breaker_failures``: consecutive server failures that
    stop every request, once nothing has succeeded for ``breaker_seconds`` (:mod:`beirx.models.llm.breaker`).
    """

    model: str
    base_url: str = OPENAI_BASE_URL
    concurrency: int = 8
    timeout: float = 120.0
    deadline: float | None = None
    attempts: int = 6
    backoff: float = 1.0
    breaker_failures: int = 10
    breaker_seconds: float = 30.0

    def __post_init__(self):
        if not self.model:
            raise BeirxError("an LLM endpoint needs a model name (--model), as the server lists it")
        shape = f"the LLM base URL must be http(s)://HOST[:PORT]/PATH, got {redact_url(self.base_url)!r}"
        try:
            parts = urlsplit(self.base_url)
            parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
        except ValueError as exc:
            raise BeirxError(f"{shape} ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BeirxError(shape)
        for name in ("concurrency", "attempts", "breaker_failures"):
            if int(getattr(self, name)) < 1:
                raise BeirxError(f"LLM endpoint: {name} must be at least 1, got {getattr(self, name)}")
        if self.concurrency > MAX_CONCURRENCY:
            raise BeirxError(f"LLM endpoint: concurrency must be at most {MAX_CONCURRENCY} requests in flight, got "
                             f"{self.concurrency}")
        for name, least in (("timeout", "above 0"), ("deadline", "above 0"), ("backoff", "0 or more"),
                            ("breaker_seconds", "0 or more")):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and (value > 0 or (value == 0 and least != "above 0"))):
                raise BeirxError(f"LLM endpoint: {name} must be a finite number of seconds {least}, got {value}")

    @property
    def total_seconds(self) -> float:
        """The most one attempt may take (``deadline``, else 10 x ``timeout``)."""
        return self.deadline if self.deadline is not None else 10 * self.timeout

    @classmethod
    def resolve(cls, model: str, base_url: str | None = None, **limits: Any) -> Endpoint:
        """``base_url`` as given, else ``$OPENAI_BASE_URL``, else OpenAI's API (trailing ``/`` dropped)."""
        url = (base_url or os.environ.get(BASE_URL_ENV, "").strip() or OPENAI_BASE_URL).rstrip("/")
        return cls(model=model, base_url=url, **limits)

    def api_key(self) -> str:
        """The key from ``$OPENAI_API_KEY``; a hosted API without one is an error naming the variable."""
        key = os.environ.get(KEY_ENV, "").strip()
        if not key and urlsplit(self.base_url).hostname in HOSTED_NEEDING_KEY:
            raise BeirxError(f"{redact_url(self.base_url)} needs an API key: set the environment variable {KEY_ENV} "
                             "(it is never read from an argument or a file)")
        return key or NO_KEY

    def describe(self) -> dict[str, Any]:
        """What identifies the server and model in artifacts (credentials in the URL redacted; no key)."""
        return {"base_url": redact_url(self.base_url), "model": self.model}
