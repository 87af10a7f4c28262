"""Retrying transient failures of remote services: one decision, the backoff policy and the server's wait.

Every transport retries through :class:`Retrying` (synchronous :meth:`Retrying.call`, asynchronous
:meth:`Retrying.acall`): dataset downloads (:mod:`beirx.data.download`), the cloud translation APIs
(:mod:`beirx.translate.backends.http_api`), the OpenAI-compatible LLM client and its Batch API
(:mod:`beirx.models.llm`). A transport supplies only how to classify what an attempt returned or raised:
:class:`Transient` (with the server's wait, if it sent one) to try again, or final. The decision itself (try
again or give up, how long to wait) is made here once, in the way openai-python makes it in one place
(``_should_retry``, ``_parse_retry_after_header``).

429, 5xx (:data:`RETRY_STATUSES`), timeouts and dropped connections are transient; we retry with
exponential backoff and "equal jitter" (half the capped exponential delay, plus a uniform random half; AWS
Architecture Blog, "Exponential Backoff And Jitter", 2015) so parallel clients do not retry in lock-step, and
honour the server's wait (``retry-after-ms``, else ``Retry-After``, RFC 9110 §10.2.3: :func:`retry_after`,
the one reader of both) when it sends one.
"""
from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from beirx.errors import BeirxError

T = TypeVar("T")

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


@dataclass(frozen=True)
class Transient:
    """An attempt that may succeed when tried again: ``reason`` says what happened (in the log and, when the
    attempts run out, in the final error); ``kind`` sorts it for meters and breakers (``rate_limited``,
    ``server_error``, ``timeout``, ``connection``, ``interrupted``); ``wait`` is the server's own wait in
    seconds (:func:`retry_after`), which replaces the backoff delay."""

    reason: str
    kind: str = "server_error"
    wait: float | None = None


def transient_status(status: int, headers: Mapping[str, str], reason: str, retry: bool | None = None
                     ) -> Transient | None:
    """The HTTP answer ``status`` as a :class:`Transient`, with the server's wait read from ``headers``, when it
    is worth retrying: one of :data:`RETRY_STATUSES`, unless the transport says otherwise with ``retry`` (a
    service that documents another status as temporary); else None (the transport decides what a refusal means)."""
    if not (status in RETRY_STATUSES if retry is None else retry):
        return None
    return Transient(reason, "rate_limited" if status == 429 else "server_error", retry_after(headers))


#: What an attempt returned or raised, as a transport classifies it: a :class:`Transient` to try again, None
#: to accept a result (or re-raise an exception as it is); raising its own error makes the failure final.
Classify = Callable[[Any], "Transient | None"]


@dataclass
class Retrying:
    """The one retry decision: run an attempt, classify its outcome, wait and try again or give up.

    ``policy`` says how many attempts and how long between them. The hooks let a transport keep its own
    wording and bookkeeping without deciding anything: ``retried(attempt, transient, wait)`` after attempt
    ``attempt`` (1-based) failed and before waiting (a log line, a meter); ``failed(transient, last)`` after
    every transient failure (a circuit breaker, which may raise to stop at once); ``exhausted(transient,
    attempts)`` builds the error raised when the attempts run out. ``asleep`` is the asynchronous form's
    wait (the synchronous form sleeps with ``policy.sleep``); both are injectable so tests run in
    milliseconds.
    """

    policy: RetryPolicy
    retried: Callable[[int, Transient, float], None] | None = None
    failed: Callable[[Transient, bool], None] | None = None
    exhausted: Callable[[Transient, int], BaseException] | None = None
    asleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

    def call(self, attempt: Callable[[int], T], classify: Classify) -> T:
        """``attempt(n)`` (n = 1, 2, ...) until its outcome is not :class:`Transient`; its result."""
        for number in range(1, self.policy.attempts + 1):
            try:
                outcome, raised = attempt(number), False
            except Exception as exc:  # noqa: BLE001 - decide() classifies it
                outcome, raised = exc, True
            if (wait := self.decide(number, classify, outcome, raised)) is None:
                return outcome
            self.policy.sleep(wait)
        raise AssertionError("unreachable: decide() raises after the last attempt")

    async def acall(self, attempt: Callable[[int], Awaitable[T]], classify: Classify) -> T:
        """The asynchronous form of :meth:`call`: ``await attempt(n)``, waiting with ``asleep``."""
        for number in range(1, self.policy.attempts + 1):
            try:
                outcome, raised = await attempt(number), False
            except Exception as exc:  # noqa: BLE001 - decide() classifies it
                outcome, raised = exc, True
            if (wait := self.decide(number, classify, outcome, raised)) is None:
                return outcome
            await self.asleep(wait)
        raise AssertionError("unreachable: decide() raises after the last attempt")

    def decide(self, number: int, classify: Classify, outcome: Any, raised: bool) -> float | None:
        """After attempt ``number`` returned (or ``raised``) ``outcome``: None to accept the result, else the
        seconds to wait before the next attempt. A final exception is raised as it is (``classify`` may raise
        its own instead); out of attempts, the ``exhausted`` error."""
        transient = classify(outcome)
        if transient is None:
            if raised:
                raise outcome
            return None
        last = number >= self.policy.attempts
        if self.failed is not None:
            self.failed(transient, last)
        if last:
            raise (self.exhausted(transient, self.policy.attempts) if self.exhausted is not None else
                   RetriesExhausted(f"failed after {self.policy.attempts} attempts (last: {transient.reason})"))
        wait = self.policy.delay(number - 1, transient.wait)
        if self.retried is not None:
            self.retried(number, transient, wait)
        return wait


class RetriesExhausted(BeirxError):
    """Every attempt failed transiently (the default error; transports raise their own)."""
