"""Retrying transient failures of remote services: the backoff policy and the server's ``Retry-After``.

Shared by dataset downloads (:mod:`beirx.data.download`), the cloud translation APIs
(:mod:`beirx.translate.backends.http_api`) and the OpenAI-compatible LLM client (:mod:`beirx.models.llm`). 429, 5xx, timeouts and dropped connections are transient; we retry
with exponential backoff and "equal jitter" (half the capped exponential delay, plus a uniform random half;
AWS Architecture Blog, "Exponential Backoff And Jitter", 2015) so parallel clients do not retry in
lock-step, and honour the server's ``Retry-After`` (RFC 9110 §10.2.3) when it sends one.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

#: HTTP statuses worth retrying: rate limiting and server-side failures (DeepL uses 529 for overload).
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 529})


@dataclass
class RetryPolicy:
    """How often and how long to wait between attempts of one request.

    ``attempts`` counts every try (first one included). The wait before retry ``n`` (0-based) is
    ``d/2 + U(0, d/2)`` with ``d = min(max_delay, base_delay * 2**n)``, or the server's ``Retry-After``
    (capped at ``max_retry_after``) when it sent one. ``sleep`` and ``rng`` are injectable so tests run
    in milliseconds (async callers take only :meth:`delay` and sleep themselves).
    """

    attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 600.0
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        capped = min(self.max_delay, self.base_delay * (2 ** retry))
        return capped / 2 + self.rng.uniform(0, capped / 2)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date, RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The server's wait in seconds: ``retry-after-ms`` (OpenAI and Azure send it, finer than the standard
    header's whole seconds) when present, else ``Retry-After``."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"))
