"""``--batch``: translate through the OpenAI Batch API (hosted APIs bill it at about half price).

The executor takes every unit the pipeline claims, writes one Batch JSONL (one request per unit), uploads it,
creates the batch and polls it; each answer is validated exactly as a live one
(:meth:`~beirx.translate.llm.translator.LLMTranslator.record`) and every accepted unit is committed at once.
Rejected units go into the next round, with the stricter prompt (and twice the ``max_tokens`` after a
truncation: a batch cannot split a unit mid-flight), until their retries are spent; then they fall back or
are flagged as in a live run.

Resumable after a kill at any point: the state file (``batches/<system>.json`` beside the translation
memory) is written after each step (file uploaded, batch created, round ingested), so a rerun finds the
batch in flight and polls it instead of sending its units again; units committed before the kill are not
asked for at all (the pipeline skips them), and re-reading a round's output is idempotent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from beirx.atomic import atomic_writer
from beirx.errors import BeirxError
from beirx.models.llm import LLMRequestError, TransportError
from beirx.models.llm.batch_api import DONE, BatchAPI
from beirx.translate.executors import Done, Work
from beirx.translate.llm.translator import Attempts
from beirx.translate.llm.units import unmark

log = logging.getLogger(__name__)

POLL_SECONDS = 30.0


class BatchExecutor:
    """Maps claimed batches through Batch API rounds (see the module docstring)."""

    def __init__(self, translator, state_path: Path | str, poll_seconds: float = POLL_SECONDS):
        self.translator = translator
        self.api = BatchAPI(translator.client)
        self.state_path = Path(state_path)
        self.poll_seconds = poll_seconds

    def map(self, work: Work) -> Done:
        pending: dict[str, tuple[str, str]] = {}  # custom_id -> (batch key, segment)
        for key, segments in work:
            for segment in segments:
                pending[_custom_id(segment)] = (key, segment)
        state = self._load()
        unanswered: dict[str, str] = {}  # custom_id -> why it got no answer in any round: left pending
        while pending:
            round_ = self._open_round(state, pending)
            results = self._wait(round_, state)
            for cid, reply in results.items():
                if cid not in pending or isinstance(reply, TransportError):
                    continue  # committed before a kill, or not this run's; or no answer (below)
                if isinstance(reply, LLMRequestError):
                    reply = "request_refused"
                key, segment = pending[cid]
                kind, text = unmark(segment)
                attempts = Attempts(**state["units"].get(cid, {}))
                attempts.attempts += 1
                reasons = self.translator.record(attempts, kind, text, reply)
                if reasons and attempts.attempts <= self.translator.retries:
                    state["units"][cid] = dataclasses.asdict(attempts)
                    continue
                del pending[cid]
                state["units"].pop(cid, None)
                yield key, [segment], [self.translator.conclude(text, attempts)]
            for cid in [c for c in round_["ids"] if c in pending and isinstance(results.get(c, _NO_ANSWER),
                                                                                      TransportError)]:
                # no answer (an expired batch, a 5xx): never a final row; another round, else left pending
                rounds = state.setdefault("unanswered", {})
                rounds[cid] = rounds.get(cid, 0) + 1
                if rounds[cid] > self.translator.retries:
                    unanswered[cid] = str(results.get(cid) or f"no answer in batch {round_['batch']}")
                    del pending[cid], rounds[cid]
            round_["ingested"] = True
            self._save(state)
        state.pop("unanswered", None)  # a rerun starts them afresh
        self._save(state)
        if unanswered:
            raise TransportError(f"{len(unanswered)} units got no answer in {self.translator.retries + 1} batches "
                                 f"(last: {next(reversed(unanswered.values()))}); they are pending and the next run "
                                 "submits them again")

    def _open_round(self, state: dict[str, Any], pending: dict[str, tuple[str, str]]) -> dict[str, Any]:
        """The round in flight (after a kill), else a new one for the pending units."""
        for round_ in state["rounds"]:
            if not round_.get("ingested") and set(round_["ids"]) & set(pending):
                if round_.get("batch"):
                    log.info("resuming batch %s (%d units)", round_["batch"], len(round_["ids"]))
                    return round_
                round_["batch"] = self.api.create(round_["file"], self.translator.api)
                self._save(state)
                return round_
        requests = []
        for cid, (_, segment) in pending.items():
            kind, text = unmark(segment)
            unit = state["units"].get(cid, {})
            max_tokens = self.translator.max_tokens_for(text) * (2 if "truncated" in unit.get("reasons", []) else 1)
            requests.append((cid, self.translator.prompts.request(kind, text, max_tokens, unit.get("reasons"))))
        round_ = {"ids": [cid for cid, _ in requests], "file": None, "batch": None}
        round_["file"] = self.api.upload(self.api.jsonl(requests))
        state["rounds"].append(round_)
        self._save(state)
        round_["batch"] = self.api.create(round_["file"], self.translator.api)
        self._save(state)
        log.info("batch %s submitted: %d units", round_["batch"], len(requests))
        return round_

    def _wait(self, round_: dict[str, Any], state: dict[str, Any]) -> dict:
        while True:
            batch = self.api.retrieve(round_["batch"])
            if batch["status"] in DONE:
                break
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
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(self.state_path) as out:
            json.dump(state, out, ensure_ascii=False)

    def close(self) -> None:
        pass


_NO_ANSWER = TransportError("no answer")


def _errors(errors: Any) -> str:
    """The messages of a batch's ``errors`` object, short."""
    data = errors.get("data") if isinstance(errors, dict) else None
    messages = [str(e.get("message")) for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    return "; ".join(messages)[:300] or "no reason given"


def _custom_id(segment: str) -> str:
    return "u-" + hashlib.sha256(segment.encode("utf-8")).hexdigest()[:32]
