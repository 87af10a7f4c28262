"""The unit engine: ask an LLM about one unit of work until an answer passes the caller's check.

Translation units (live or through the Batch API) and the judge's rows all go through it:

1. the task builds the unit's request (:meth:`Task.request`; after a rejection it names the reasons) and
   checks the answer (:meth:`Task.check`): accepted, or rejected with reasons (and, when only softly wrong,
   a *candidate* worth keeping if nothing better comes);
2. what no task should have to repeat is the engine's (:meth:`UnitEngine.verdict`): an answer cut at
   ``max_tokens`` (``finish_reason`` ``length``: :attr:`Reason.TRUNCATED`) or refused by the model (the API's
   ``refusal``: :attr:`Reason.REFUSED`) is rejected, whatever the task's check says, and never kept as a
   candidate;
3. a rejected answer is asked again, up to ``retries`` times: the one retry counter (:attr:`Attempts.attempts`),
   kept here for every driver (live, Batch, the judge), never by a caller. A request that got no answer at all
   (a Batch round without one: :attr:`Reason.TRANSPORT`) is the transport's failure, not the unit's: it is asked
   again up to the connection's ``transport_attempts`` (the live client's retry policy bounds the same), never
   spending an answer's retry, then left unconcluded. A truncated answer or a request the server refused
   (:attr:`Reason.REQUEST_REFUSED`, e.g. over its context) *splits* the unit in two (:meth:`Task.halves`),
   each half going through the same loop, up to :data:`MAX_SPLIT_DEPTH` levels; a unit that cannot split
   (a judge's row) is asked again with twice the ``max_tokens``;
4. what happens to a unit whose retries are spent (fall back, flag, record as missing) is the caller's.

Reasons are named values (:class:`Reason` for those the engine acts on; a task adds its own, e.g. the
translation check's :class:`beirx.translate.llm.validator.Problem`); both are ``str`` enums whose values are the
words notes and reports have always recorded, and the prose of a rejection (what a retry prompt quotes back,
what a report shows) travels beside them as ``message``.

The state of a unit (:class:`Attempts`) is plain data: the Batch executor saves it between rounds, so a
killed run resumes where it stopped. Drivers: :meth:`UnitEngine.run` (a coroutine: live translation and the
judge's rows; the halves of a split unit are asked concurrently), and :meth:`UnitEngine.record` one answer at a
time (the Batch API's rounds of requests). The spending cap is the caller's: its ``ask`` passes its own
:class:`~beirx.models.llm.usage.UsageMeter` with each request (``llm.acall(request, meter=meter)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, Protocol

from beirx.models.llm.calls import Reply, Request

MAX_SPLIT_DEPTH = 4


class Reason(StrEnum):
    """Why an answer, or its absence, did not conclude a unit: the reasons the engine acts on. A ``str``: the
    value is the word written in translation notes and manifests."""

    TRUNCATED = "truncated"  # cut at max_tokens (finish_reason "length"): split, else twice the max_tokens
    REFUSED = "refusal"  # the model declined (the API's refusal field; a task may recognise one in the text)
    REQUEST_REFUSED = "request_refused"  # the server refused the request itself (a 4xx about it): as TRUNCATED
    INVALID = "invalid"  # the task's check found the answer unusable (its message says why)
    TRANSPORT = "transport"  # no answer at all (a Batch round without one): asked again, never concluded
    RESPLIT = "resplit"  # (in ``rejected``) the unit was split and its halves asked


#: The prose of the reasons the engine finds itself (what a retry prompt quotes back, a report shows).
MESSAGES = {Reason.TRUNCATED: "the answer was cut off by the token limit; answer shorter",
            Reason.REQUEST_REFUSED: "the server refused the request",
            Reason.TRANSPORT: "no answer"}


class Step(Enum):
    """What :meth:`UnitEngine.record` says comes next for a unit."""

    ACCEPTED = "accepted"
    AGAIN = "again"  # ask :meth:`UnitEngine.request` again
    SPLIT = "split"  # ask its halves (:meth:`UnitEngine.split`)
    SPENT = "spent"  # rejected, retries spent: the caller concludes it
    UNANSWERED = "unanswered"  # no answer, transport attempts spent: not concluded (a rerun asks again)


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
    reasons: list[str] = field(default_factory=list)  # why the last answer was rejected (Reason or the task's)
    details: dict[str, Any] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)  # every rejection reason met
    attempts: int = 0  # answers (and requests the server refused): what ``retries`` bounds
    usage: list[int] = field(default_factory=lambda: [0, 0, 0])  # prompt tokens, completion tokens, requests
    stripped: list[str] = field(default_factory=list)  # wrappers removed from the accepted answer(s)
    max_tokens: int | None = None  # this unit's answer limit (None: the task's first)
    last: str | None = None  # the text of the last rejected answer
    message: str | None = None  # the prose of the last rejection (a retry prompt quotes it, a report shows it)
    unanswered: int = 0  # requests in a row that got no answer (:attr:`Reason.TRANSPORT`)


@dataclass
class Verdict:
    """A check of one answer: ``accepted`` with ``value``, else ``reasons`` (and a soft ``candidate``);
    ``message``: the rejection in prose, for a retry prompt, a log or a report."""

    accepted: bool
    value: Any = None
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    candidate: Any = None
    stripped: list[str] = field(default_factory=list)
    message: str | None = None


class Task(Protocol):
    def max_tokens(self, unit: Unit) -> int:
        """The first answer limit of ``unit``."""

    def request(self, unit: Unit, attempts: Attempts) -> Request:
        """The next request for ``unit`` (``attempts.reasons``: why the last answer was rejected, if any)."""

    def check(self, unit: Unit, reply: Reply) -> Verdict:
        """Accept or reject an answer on the task's own terms (truncation and refusal are the engine's)."""

    def halves(self, unit: Unit) -> tuple[str, str, str] | None:
        """``(left, separator, right)`` of a unit's text, or None when it cannot be split."""


def cut_or_refused(reply: Reply) -> list[tuple[Reason, str]]:
    """What makes any answer unusable whatever the task: ``(reason, message)`` of a refusal in the API's
    ``refusal`` field, then of an answer cut at ``max_tokens``."""
    found = []
    if reply.refusal:
        found.append((Reason.REFUSED, f"the model refused: {reply.refusal[:100]}"))
    if reply.finish_reason == "length":
        found.append((Reason.TRUNCATED, MESSAGES[Reason.TRUNCATED]))
    return found


class UnitEngine:
    """The loop of every LLM unit (see the module docstring): ``task`` says what to ask and how to check an
    answer; ``retries``: how many times a unit is asked again after a rejected answer; ``transport_attempts``:
    how many requests in a row may go without an answer (:attr:`Reason.TRANSPORT`) before the unit is left
    unconcluded."""

    def __init__(self, task: Task, retries: int, transport_attempts: int = 1):
        self.task, self.retries, self.transport_attempts = task, retries, transport_attempts

    def request(self, unit: Unit, attempts: Attempts) -> Request:
        if attempts.max_tokens is None:
            attempts.max_tokens = self.task.max_tokens(unit)
        return self.task.request(unit, attempts)

    def verdict(self, unit: Unit, reply: Reply) -> Verdict:
        """The task's check of ``reply``, with what the engine finds itself (:func:`cut_or_refused`) first
        among the reasons: such an answer is rejected and is never a candidate."""
        verdict = self.task.check(unit, reply)
        found = cut_or_refused(reply)
        if found:
            own = [reason for reason, _ in found]
            verdict.reasons = own + [r for r in verdict.reasons if r not in own]
            verdict.accepted, verdict.value, verdict.candidate = False, None, None
            verdict.message = found[0][1]
        return verdict

    def record(self, unit: Unit, attempts: Attempts, reply: Reply | Reason) -> Step:
        """Check ``reply`` (or the :class:`Reason` there is none: :attr:`Reason.REQUEST_REFUSED`,
        :attr:`Reason.TRANSPORT`) into ``attempts``, and say what comes next (:class:`Step`)."""
        if reply == Reason.TRANSPORT:  # nothing to learn from: the same request again, or left unconcluded
            attempts.unanswered += 1
            return Step.AGAIN if attempts.unanswered < self.transport_attempts else Step.UNANSWERED
        attempts.attempts += 1
        attempts.unanswered = 0
        if not isinstance(reply, Reply):
            reason = Reason(reply)
            verdict = Verdict(False, reasons=[reason], message=MESSAGES.get(reason))
        else:
            attempts.usage[0] += reply.usage.prompt_tokens
            attempts.usage[1] += reply.usage.completion_tokens
            attempts.usage[2] += 1
            verdict = self.verdict(unit, reply)
            if verdict.accepted:
                attempts.text, attempts.stripped = verdict.value, list(verdict.stripped)
                return Step.ACCEPTED
            attempts.last = reply.text
            if verdict.candidate is not None:
                attempts.candidate = verdict.candidate
        attempts.reasons, attempts.details = list(verdict.reasons), dict(verdict.details)
        attempts.message = verdict.message
        attempts.rejected += verdict.reasons
        if Reason.TRUNCATED in verdict.reasons or Reason.REQUEST_REFUSED in verdict.reasons:
            if self.split(unit) is not None:
                return Step.SPLIT
            attempts.max_tokens = 2 * (attempts.max_tokens or self.task.max_tokens(unit))
        return Step.AGAIN if attempts.attempts <= self.retries else Step.SPENT

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
                          rejected=whole.rejected + [r for p in parts for r in p.rejected] + [Reason.RESPLIT],
                          usage=[a + b + c for a, b, c in zip(whole.usage, left.usage, right.usage)],
                          stripped=[w for p in parts for w in p.stripped])
        if all(p.text is not None for p in parts):
            joined.text = left.text + gap + right.text
        else:
            joined.reasons = list(dict.fromkeys(r for p in parts for r in p.reasons))
            joined.message = next((p.message for p in parts if p.text is None), None)
            texts = [p.text if p.text is not None else p.candidate for p in parts]
            if all(t is not None for t in texts):
                joined.candidate = texts[0] + gap + texts[1]
        return joined

    async def run(self, unit: Unit, ask: Callable[[Request], Awaitable[Reply | Reason]],
                  attempts: Attempts | None = None) -> Attempts:
        """Ask about ``unit`` until it is accepted or its retries are spent, splitting it when needed. ``ask``
        returns the reply, or :attr:`Reason.REQUEST_REFUSED` when the server refused the request; what it
        raises propagates (the unit is not concluded: a rerun asks again). ``attempts``: the caller's, filled in
        place, so what a unit cost is known even when ``ask`` raises."""
        attempts = attempts or Attempts()
        while True:
            step = self.record(unit, attempts, await ask(self.request(unit, attempts)))
            if step is Step.SPLIT:
                left, gap, right = self.split(unit)
                parts = await asyncio.gather(self.run(left, ask), self.run(right, ask))
                return self.join(attempts, gap, *parts)
            if step is not Step.AGAIN:
                return attempts
