"""``--batch``: translate through the OpenAI Batch API (hosted APIs bill it at about half price).

The executor takes every unit the pipeline claims, writes one Batch JSONL (one request per unit), uploads it,
creates the batch and polls it; each answer goes through the same unit engine as a live one
(:class:`beirx.models.llm.engine.UnitEngine`), one round at a time: what the engine asks again (a rejected
answer, the halves of a split unit, a request that got no answer) goes into the next round, until every unit is
accepted or its retries are spent; then it falls back or is flagged as in a live run, and is committed at once.
A round without an answer for a unit (an expired batch, a 5xx line) is the transport's failure
(:attr:`~beirx.models.llm.engine.Reason.TRANSPORT`): the engine asks again up to the connection's ``attempts``, as
the live client retries a request, never spending one of the unit's ``retries``, and never concludes the unit:
one still without an answer is left pending, and the next run sends it again.

Resumable after a kill at any point: the state file (``batches/<system>.json`` beside the translation
memory) is written after each step (file uploaded, batch created, round ingested), and holds each open unit's
attempts and halves, so a rerun finds the batch in flight and polls it instead of sending its units again;
units committed before the kill are not asked for at all (the pipeline skips them), and re-reading a round's
output is idempotent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from beirx.atomic import atomic_writer
from beirx.errors import BeirxError
from beirx.models.llm import LLMRequestError, Reply, TransportError
from beirx.models.llm.batch_api import DONE, BatchAPI
from beirx.models.llm.engine import Attempts, Reason, Step, Unit, UnitEngine
from beirx.translate.execution.executors import Done, Work
from beirx.translate.planning.document_units import unmark

log = logging.getLogger(__name__)

POLL_SECONDS = 30.0


class BatchExecutor:
    """Maps claimed batches through Batch API rounds (see the module docstring)."""

    def __init__(self, translator, state_path: Path | str, poll_seconds: float = POLL_SECONDS):
        self.translator = translator
        self.api = BatchAPI(translator.llm)
        self.engine = UnitEngine(translator, translator.retries, transport_attempts=translator.llm.endpoint.attempts)
        self.state_path = Path(state_path)
        self.poll_seconds = poll_seconds

    def map(self, work: Work) -> Done:
        # custom_id -> (batch key, segment)
        pending = {_custom_id(segment): (key, segment) for key, segments in work for segment in segments}
        state = self._load()
        engine = self.engine
        units = {cid: _Open.load(state["units"].get(cid), *unmark(segment)) for cid, (_, segment) in pending.items()}
        unanswered: dict[str, str] = {}  # custom_id -> why its last request got no answer: left pending
        while pending:
            asked = {cid: unit for top in pending for cid, unit in units[top].leaves(top)}
            round_ = self._open_round(state, asked)
            results = self._wait(round_, state)
            for cid in [c for c in round_["ids"] if c in asked]:  # (others: committed before a kill)
                unit, reply = asked[cid], results.get(cid)
                if isinstance(reply, LLMRequestError):  # the server refused the request (4xx), as in a live run
                    reply = Reason.REQUEST_REFUSED
                elif not isinstance(reply, Reply):  # no answer (an expired batch, a 5xx): never a final row
                    reply = Reason.TRANSPORT
                step = engine.record(unit.unit, unit.attempts, reply)
                if step is Step.SPLIT:
                    left, gap, right = engine.split(unit.unit)
                    unit.gap, unit.halves = gap, [_Open(left), _Open(right)]
                elif step is Step.UNANSWERED:
                    unanswered[cid] = str(results.get(cid) or f"no answer in batch {round_['batch']}")
                    pending.pop(cid.split("/")[0], None)
                unit.done = step in (Step.ACCEPTED, Step.SPENT)
            for top in list(pending):
                attempts = units[top].result(engine)
                if attempts is not None:
                    key, segment = pending.pop(top)
                    yield key, [segment], [self.translator.conclude(unmark(segment)[1], attempts)]
            state["units"] = {top: asdict(units[top]) for top in pending}
            round_["ingested"] = True
            self._save(state)
        self._save(state)
        if unanswered:
            raise TransportError(f"{len(unanswered)} units got no answer in {self.engine.transport_attempts} batches "
                                 f"(last: {next(reversed(unanswered.values()))}); they are pending and the next run "
                                 "submits them again")

    def _open_round(self, state: dict[str, Any], asked: dict[str, _Open]) -> dict[str, Any]:
        """The round in flight (after a kill: its file uploaded, its batch perhaps created), else a new one for
        the units to ask."""
        round_ = next((r for r in state["rounds"] if not r.get("ingested") and set(r["ids"]) & set(asked)), None)
        if round_ is None:
            requests = [(cid, self.engine.request(unit.unit, unit.attempts)) for cid, unit in asked.items()]
            round_ = {"ids": list(asked), "file": self.api.upload(self.api.jsonl(requests)), "batch": None}
            state["rounds"].append(round_)
            self._save(state)
        elif round_.get("batch"):
            log.info("resuming batch %s (%d units)", round_["batch"], len(round_["ids"]))
            return round_
        round_["batch"] = self.api.create(round_["file"], self.translator.api)
        self._save(state)
        log.info("batch %s submitted: %d units", round_["batch"], len(round_["ids"]))
        return round_

    def _wait(self, round_: dict[str, Any], state: dict[str, Any]) -> dict:
        while (batch := self.api.retrieve(round_["batch"]))["status"] not in DONE:
            counts = batch.get("request_counts") or {}
            log.info("batch %s: %s (%s/%s done)", round_["batch"], batch["status"], counts.get("completed", "?"),
                     counts.get("total", "?"))
            time.sleep(self.poll_seconds)
        if batch["status"] != "completed" and not batch.get("output_file_id"):
            round_["ingested"] = True  # a dead batch: never polled again; its units are pending for a new one
            self._save(state)
            raise BeirxError(f"batch {round_['batch']} ended {batch['status']} without results "
                             f"({_errors(batch.get('errors'))}); its {len(round_['ids'])} units are pending and "
                             "the next run submits them in a new batch")
        return self.api.results(batch, self.translator.api)

    def _load(self) -> dict[str, Any]:
        if self.state_path.is_file():
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
            state["rounds"] = [r for r in state["rounds"] if not r.get("ingested")]
            return state
        return {"rounds": [], "units": {}}

    def _save(self, state: dict[str, Any]) -> None:
        with atomic_writer(self.state_path) as out:
            json.dump(state, out, ensure_ascii=False)

    def close(self) -> None:
        pass


@dataclass
class _Open:
    """A unit between rounds: its attempts, and once split, its two halves (each an :class:`_Open` itself)."""

    unit: Unit
    attempts: Attempts = field(default_factory=Attempts)
    done: bool = False
    gap: str = ""
    halves: list[_Open] = field(default_factory=list)

    def leaves(self, cid: str):
        """``(custom_id, unit)`` of each part still to ask (a half's id is its parent's plus ``/0`` or ``/1``)."""
        if self.halves:
            for i, half in enumerate(self.halves):
                yield from half.leaves(f"{cid}/{i}")
        elif not self.done:
            yield cid, self

    def result(self, engine) -> Attempts | None:
        """The unit's attempts once it is over (halves joined), else None."""
        if not self.halves:
            return self.attempts if self.done else None
        parts = [half.result(engine) for half in self.halves]
        return None if None in parts else engine.join(self.attempts, self.gap, *parts)

    @classmethod
    def load(cls, saved: dict[str, Any] | None, kind: str, text: str) -> _Open:
        if not saved:
            return cls(Unit(kind, text))
        if "unit" not in saved:  # written before units could split: the attempts alone
            return cls(Unit(kind, text), Attempts(**saved))
        return cls(Unit(**saved["unit"]), Attempts(**saved["attempts"]), saved["done"], saved["gap"],
                   [cls.load(h, kind, text) for h in saved["halves"]])


def _errors(errors: Any) -> str:
    """The messages of a batch's ``errors`` object, short."""
    data = errors.get("data") if isinstance(errors, dict) else None
    messages = [str(e.get("message")) for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    return "; ".join(messages)[:300] or "no reason given"


def _custom_id(segment: str) -> str:
    return "u-" + hashlib.sha256(segment.encode("utf-8")).hexdigest()[:32]
