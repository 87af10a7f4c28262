"""What happened to each LLM translation unit, recorded where a user looks for it.

A backend returns each translation as :class:`Checked`, a ``str`` that also carries the tokens it cost and,
when the first answer was not accepted, a *note*: ``{"outcome": "retried" | "fallback" | "flagged",
"reasons": [...], "attempts": n, "written": "llm" | "fallback" | "source"}`` (``reasons``: why the rejected
answers were rejected; for ``flagged``, what is still wrong with what was written). The pipeline commits the
note with the translation (:meth:`beirx.translate.translation_memory.TranslationMemory.add`), sums this run's figures
in the manifest (:class:`Tally`), and lists every flagged or fallen-back record of the written dataset in
``translation_flags.jsonl`` (:func:`flag_rows`), which ``beirx quality`` folds into ``quality.json``
(:mod:`beirx.translate.quality.translation_flags`: reasons ``llm_fallback``/``llm_flagged``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any

FLAGS_FILE = "translation_flags.jsonl"


class Outcome(StrEnum):
    """What became of a unit (a ``str``: the value is the word notes, flag rows and manifests record)."""

    ACCEPTED = "accepted"  # the first answer (no note)
    RETRIED = "retried"  # an answer after rejected ones
    FALLBACK = "fallback"  # the fallback translator's
    FLAGGED = "flagged"  # the last softly wrong answer, or the source, written flagged


RETRIED, FALLBACK, FLAGGED = Outcome.RETRIED, Outcome.FALLBACK, Outcome.FLAGGED


class Checked(str):
    """A validated translation: the text, plus ``note`` (None when the first answer was accepted),
    ``usage`` (prompt tokens, completion tokens, requests) of every attempt, and the wrappers (a leaked
    preamble, quotes ...) removed from the accepted answer. It pickles (to and from Ray replicas) with all
    three, as a ``str`` subclass with instance attributes does."""

    note: dict[str, Any] | None
    usage: tuple[int, int, int]
    stripped: tuple[str, ...]

    def __new__(cls, text: str, note: dict[str, Any] | None = None, usage: tuple[int, int, int] = (0, 0, 0),
                stripped: tuple[str, ...] = ()):
        self = super().__new__(cls, text)
        self.note, self.usage, self.stripped = note, tuple(usage), tuple(stripped)
        return self


class Tally:
    """This run's LLM figures for the manifest: units by outcome, reasons, tokens and requests."""

    def __init__(self):
        self.units = Counter()
        self.reasons = Counter()
        self.stripped = Counter()
        self.prompt_tokens = self.completion_tokens = self.requests = 0

    def add(self, outputs: Iterable[str]) -> None:
        for output in outputs:
            usage = getattr(output, "usage", None)
            if usage is None:
                continue
            self.prompt_tokens += usage[0]
            self.completion_tokens += usage[1]
            self.requests += usage[2]
            self.stripped.update(output.stripped)
            note = output.note or {"outcome": Outcome.ACCEPTED, "reasons": ()}
            self.units[note["outcome"]] += 1
            self.reasons.update(note["reasons"])

    def __bool__(self) -> bool:
        return bool(self.units)

    def as_dict(self) -> dict[str, Any]:
        return {"units": {str(k): self.units.get(k, 0) for k in Outcome},
                "reasons": dict(sorted(self.reasons.items())), "wrappers_stripped": dict(sorted(self.stripped.items())),
                "requests": self.requests,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


def flag_rows(field: str, record_id: str, units_notes: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """The ``translation_flags.jsonl`` row of one record, or None when none of its units fell back or was
    flagged (a unit that only needed a retry is fine)."""
    bad = [(unit, note) for unit, note in units_notes if note["outcome"] in (FALLBACK, FLAGGED)]
    if not bad:
        return None
    reasons = sorted({r for _, note in bad for r in note["reasons"]})
    return {"field": field, "id": record_id, "outcome": FLAGGED if any(n["outcome"] == FLAGGED for _, n in bad)
            else FALLBACK, "reasons": reasons, "units": [{"source": unit, **note} for unit, note in bad]}


def summarise(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the written dataset's flag rows (records by outcome and reason, per field)."""
    out: dict[str, Any] = {}
    for row in rows:
        field = out.setdefault(row["field"], {"records_" + FALLBACK: 0, "records_" + FLAGGED: 0, "reasons": {}})
        field["records_" + row["outcome"]] += 1
        for reason in row["reasons"]:
            field["reasons"][reason] = field["reasons"].get(reason, 0) + 1
    return out


def read_flags(root: Path | str) -> dict[str, dict[str, dict[str, Any]]]:
    """``{field: {id: flag row}}`` of a translated dataset's ``translation_flags.jsonl`` (empty without one)."""
    path = Path(root) / FLAGS_FILE
    flags: dict[str, dict[str, dict[str, Any]]] = {}
    if path.is_file():
        with path.open(encoding="utf-8") as rows:
            for line in rows:
                row = json.loads(line)
                flags.setdefault(row["field"], {})[row["id"]] = row
    return flags

