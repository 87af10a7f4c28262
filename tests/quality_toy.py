"""A toy quality method, the whole of it in one module (registered by one line in tests/test_quality_methods.py):
characters of the translation per character of the source, flagged above ``--toy-max-ratio``."""

from __future__ import annotations

from beirx.argtypes import positive_float
from beirx.options import Option
from beirx.translate.quality.base import FieldPairs, MethodResult, QualityMethod, Score


class CharRatio(QualityMethod):
    name = "char_ratio"
    scores = (Score("char_ratio", "translation characters per source character", higher_is_better=False),)
    flags = {"too_long": "the translation is more than --toy-max-ratio times the source's length"}

    def __init__(self, max_ratio: float = 1.5):
        self.max_ratio = max_ratio

    OPTIONS = (Option("run", switch=True, flag="--toy", help="run the toy character-ratio method"),
               Option("max_ratio", positive_float, default=1.5, flag="--toy-max-ratio", help="flag above this"))

    @classmethod
    def from_options(cls, given, src: str, tgt: str, use_cache: bool = True) -> CharRatio | None:
        return cls(given.get("max_ratio", 1.5)) if given.get("run") else None

    @classmethod
    def report_lines(cls, report, field: str) -> list[str]:
        outcome = report.fields[field].methods.get(cls.name)
        return [f"- Longest {field} translation: {outcome.summary['longest']:.2f}x its source."] if outcome else []

    @classmethod
    def card_figures(cls, entry) -> dict[str, float | None]:
        return {"longest ratio": entry.methods[cls.name].summary["longest"] if cls.name in entry.methods else None}

    def describe(self, context) -> dict:
        return {"max_ratio": self.max_ratio}

    def score(self, pairs: FieldPairs, context) -> MethodResult:
        values = {i: len(t) / len(s) for i, s, t in zip(pairs.ids, pairs.sources, pairs.translations)}
        result = MethodResult(values={"char_ratio": values}, scored=len(values), summary={"longest": max(values.values())})
        for item, value in values.items():
            if value > self.max_ratio:
                result.flag(item, "too_long", char_ratio=value)
        return result
