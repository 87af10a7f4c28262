"""The unit engine: ask an LLM about one unit of work until an answer passes the caller's check.

Translation units (live or through the Batch API) and the judge's rows all go through it:

1. the task builds the unit's request (:meth:`Task.request`; after a rejection it names the reasons) and
   checks the answer (:meth:`Task.check`): accepted, or rejected with reasons (and, when only softly wrong,
   a *candidate* worth keeping if nothing better comes);
2. a rejected answer is asked again, up to ``retries`` times. An answer cut at ``max_tokens`` (reason
   ``truncated``) or a request the server refused (``request_refused``, e.g. over its context) *splits*
   the unit in two (:meth:`Task.halves`), each half going through the same loop, up to
   :data:`MAX_SPLIT_DEPTH` levels; a unit that cannot split gets twice the ``max_tokens`` instead;
3. what happens to a unit whose retries are spent (fall back, flag, record as missing) is the caller's.

The state of a unit (:class:`Attempts`) is plain data: the Batch executor saves it between rounds, so a
killed run resumes where it stopped. Drivers: :meth:`UnitEngine.run` (a coroutine: live translation and the
judge's rows; the halves of a split unit are asked concurrently), and :meth:`UnitEngine.record` one answer at a
time (the Batch API's rounds of requests).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from beirx.models.llm.calls import Reply, Request

#: Rejection reasons the engine acts on (the task's check or the driver gives them).
TRUNCATED, REFUSED, RESPLIT = "truncated", "request_refused", "resplit"
#: What :meth:`UnitEngine.record` says comes next for a unit.
ACCEPTED, AGAIN, SPLIT, SPENT = "accepted", "again", "split", "spent"
MAX_SPLIT_DEPTH = 4


@dataclass(frozen=True)
class Unit:
    """What is asked about: the task's ``kind`` and ``text`` (for the judge, the row), and how deep in splits."""

    kind: str
    text: str
    depth: int = 0


@dataclass
class Attempts:
    """How one unit (or half of one) fared so far (JSON-able: :func:`dataclasses.asdict` and back)."""

    text: Any = None  # the accepted answer (the task's value)
    candidate: Any = None  # the last answer that was only softly wrong
    reasons: list[str] = field(default_factory=list)  # why the last answer was rejected
    details: dict[str, Any] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)  # every rejection reason met
    attempts: int = 0
    usage: list[int] = field(default_factory=lambda: [0, 0, 0])  # prompt tokens, completion tokens, requests
    stripped: list[str] = field(default_factory=list)  # wrappers removed from the accepted answer(s)
    max_tokens: int | None = None  # this unit's answer limit (None: the task's first)
    last: str | None = None  # the text of the last rejected answer


@dataclass
class Verdict:
    """A task's check of one answer: ``accepted`` with ``value``, else ``reasons`` (and a soft ``candidate``)."""

    accepted: bool
    value: Any = None
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    candidate: Any = None
    stripped: list[str] = field(default_factory=list)


class Task(Protocol):
    def max_tokens(self, unit: Unit) -> int:
        """The first answer limit of ``unit``."""

    def request(self, unit: Unit, attempts: Attempts) -> Request:
        """The next request for ``unit`` (``attempts.reasons``: why the last answer was rejected, if any)."""

    def check(self, unit: Unit, reply: Reply) -> Verdict:
        """Accept or reject an answer."""

    def halves(self, unit: Unit) -> tuple[str, str, str] | None:
        """``(left, separator, right)`` of a unit's text, or None when it cannot be split."""


class UnitEngine:
    def __init__(self, task: Task, retries: int):
        self.task, self.retries = task, retries

    def request(self, unit: Unit, attempts: Attempts) -> Request:
        if attempts.max_tokens is None:
            attempts.max_tokens = self.task.max_tokens(unit)
        return self.task.request(unit, attempts)

    def record(self, unit: Unit, attempts: Attempts, reply: Reply | str) -> str:
        """Check ``reply`` (or a failure reason instead of one) into ``attempts``; what comes next:
        :data:`ACCEPTED`, :data:`AGAIN` (ask :meth:`request` again), :data:`SPLIT` (:meth:`split`) or
        :data:`SPENT` (rejected, retries spent)."""
        attempts.attempts += 1
        if isinstance(reply, str):
            verdict = Verdict(False, reasons=[reply])
        else:
            attempts.usage[0] += reply.usage.prompt_tokens
            attempts.usage[1] += reply.usage.completion_tokens
            attempts.usage[2] += 1
            verdict = self.task.check(unit, reply)
            if verdict.accepted:
                attempts.text, attempts.stripped = verdict.value, list(verdict.stripped)
                return ACCEPTED
            attempts.last = reply.text
            if verdict.candidate is not None:
                attempts.candidate = verdict.candidate
        attempts.reasons, attempts.details = list(verdict.reasons), dict(verdict.details)
        attempts.rejected += verdict.reasons
        if TRUNCATED in verdict.reasons or REFUSED in verdict.reasons:
            if self.split(unit) is not None:
                return SPLIT
            attempts.max_tokens = 2 * (attempts.max_tokens or self.task.max_tokens(unit))
        return AGAIN if attempts.attempts <= self.retries else SPENT

    def split(self, unit: Unit) -> tuple[Unit, str, Unit] | None:
        """The two halves of ``unit`` and the separator between them, or None (too deep, or one sentence)."""
        halves = self.task.halves(unit) if unit.depth < MAX_SPLIT_DEPTH else None
        if not halves:
            return None
        left, gap, right = halves
        return Unit(unit.kind, left, unit.depth + 1), gap, Unit(unit.kind, right, unit.depth + 1)

    @staticmethod
    def join(whole: Attempts, gap: str, left: Attempts, right: Attempts) -> Attempts:
        """The unit's attempts once both halves are over: their answers joined with the source's separator."""
        parts = (left, right)
        joined = Attempts(attempts=whole.attempts + max(p.attempts for p in parts),
                          rejected=whole.rejected + [r for p in parts for r in p.rejected] + [RESPLIT],
                          usage=[a + b + c for a, b, c in zip(whole.usage, left.usage, right.usage)],
                          stripped=[w for p in parts for w in p.stripped])
        if all(p.text is not None for p in parts):
            joined.text = left.text + gap + right.text
        else:
            joined.reasons = list(dict.fromkeys(r for p in parts for r in p.reasons))
            texts = [p.text if p.text is not None else p.candidate for p in parts]
            if all(t is not None for t in texts):
                joined.candidate = texts[0] + gap + texts[1]
        return joined

    async def run(self, unit: Unit, ask: Callable[[Request], Awaitable[Reply | str]],
                  attempts: Attempts | None = None) -> Attempts:
        """Ask about ``unit`` until it is accepted or its retries are spent, splitting it when needed. ``ask``
        returns the reply, or a rejection reason (e.g. :data:`REFUSED`) instead of one; what it raises
        propagates (the unit is not concluded: a rerun asks again). ``attempts``: the caller's, filled in place,
        so what a unit cost is known even when ``ask`` raises."""
        attempts = attempts or Attempts()
        while True:
            step = self.record(unit, attempts, await ask(self.request(unit, attempts)))
            if step == SPLIT:
                left, gap, right = self.split(unit)
                parts = await asyncio.gather(self.run(left, ask), self.run(right, ask))
                return self.join(attempts, gap, *parts)
            if step != AGAIN:
                return attempts
