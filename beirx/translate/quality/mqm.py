"""Reading an LLM judge's answer: MQM-style error annotations and a direct-assessment score.

The judge answers a JSON object ``{"errors": [{"span", "category", "severity"}...], "score": 0-100}``
(:mod:`beirx.translate.quality.judge`). :func:`parse` accepts it inside any surrounding text or code fence
(small models rarely answer bare JSON) but checks every field; anything else is *malformed*, with a reason
the retry prompt quotes back.

The MQM score follows GEMBA-MQM (Kocmi & Federmann, 2023, "GEMBA-MQM: Detecting Translation Quality Error
Spans with GPT-4"), which weights errors as MQM does (Freitag et al., 2021): critical 25, major 5, minor 1,
the penalty capped at 25, negated so that higher is better: 0 = no error, -25 = unusable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

WEIGHTS = {"critical": 25, "major": 5, "minor": 1}
CAP = 25
MAX_SPAN = 200


@dataclass(frozen=True)
class ErrorSpan:
    span: str
    category: str
    severity: str


@dataclass(frozen=True)
class Judgement:
    errors: tuple[ErrorSpan, ...]
    score: float  # direct assessment, 0-100

    @property
    def mqm(self) -> float:
        return -float(min(CAP, sum(WEIGHTS[e.severity] for e in self.errors)))

    def worst_severity(self) -> str | None:
        return next((s for s in WEIGHTS if any(e.severity == s for e in self.errors)), None)  # (WEIGHTS: worst first)

    def to_json(self) -> dict:
        return {"errors": [e.__dict__ for e in self.errors], "score": self.score}


class Malformed(ValueError):
    """An answer that is not a usable judgement; the message says why."""


def _objects(text: str):
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            yield value
        start = text.find("{", start + 1)


def parse(text: str) -> Judgement:
    """The judgement in ``text``, or :class:`Malformed`."""
    if not text.strip():
        raise Malformed("the answer was empty")
    found = next((o for o in _objects(text) if "score" in o or "errors" in o), None)
    if found is None:
        raise Malformed("no JSON object with \"errors\" and \"score\" in the answer")
    score = found.get("score")
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            raise Malformed(f"\"score\" is not a number: {found.get('score')!r}") from None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise Malformed("\"score\" is missing or not a number")
    if not 0 <= score <= 100:
        raise Malformed(f"\"score\" {score} is outside 0-100")
    errors = found.get("errors", [])
    if not isinstance(errors, list):
        raise Malformed("\"errors\" is not a list")
    spans = []
    for n, error in enumerate(errors, 1):
        if not isinstance(error, dict):
            raise Malformed(f"error {n} is not an object")
        severity = str(error.get("severity", "")).strip().lower()
        if severity not in WEIGHTS:
            raise Malformed(f"error {n} has severity {error.get('severity')!r} (expected critical, major or minor)")
        spans.append(ErrorSpan(str(error.get("span", ""))[:MAX_SPAN], str(error.get("category", "other"))[:60],
                               severity))
    return Judgement(tuple(spans), float(score))
