"""The quality report's formats 1 and 2 (``beirx.quality/2``, and files without ``schema_version``), kept to
read old reports: a file is checked against these classes first, so an error names the field as the file
spells it, then converted to the current layout (:func:`to_current`).

Format 2 had one typed slot per measure (similarity distribution, language check, length rule, round-trip
chrF, per-query similarity); format 3 keeps every method's scores generically.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from beirx.artifacts.base import build, fld, optional
from beirx.artifacts.manifest import DatasetSide
from beirx.artifacts.quality_parts import Distribution, TableRow, TranslationSummary

SCHEMA = "beirx.quality/2"


@dataclass(kw_only=True)
class LengthRatio:
    method: str = fld("'fixed bounds' or 'robust z-score of log ratio'")
    bounds: list[float] = fld("translation/source character ratios outside these bounds are flagged")
    threshold: float | None = optional("robust z threshold")
    median_ratio: float | None = optional("median length ratio")


@dataclass(kw_only=True)
class LanguageCheck:
    checked: int = fld("translations whose language was identified (0 when the language is unknown)")
    target_share: float | None = optional("share identified as the target language")
    detected: dict[str, int] = optional("the 10 most frequent detected languages", default_factory=dict)
    note: str | None = optional("why nothing was checked")


@dataclass(kw_only=True)
class RoundTrip:
    n: int = fld("items back-translated")
    chrF: float = fld("corpus chrF of back-translations against the originals (sacrebleu)")
    signature: str = fld("sacrebleu's metric signature")


@dataclass(kw_only=True)
class FieldQuality:
    pairs: int = fld("items scored")
    missing: int = fld("source items absent from the translation")
    empty_sources: int = fld("source items with no text (not scored)")
    similarity: Distribution = fld("similarity distribution")
    flags: dict[str, int] = fld("items per flag reason")
    flagged_items: int = fld("items with at least one flag")
    length_ratio: LengthRatio = fld("how length-ratio outliers were decided")
    language: LanguageCheck = fld("output-language identification")
    missing_examples: list[str] | None = optional("up to 10 missing IDs")
    roundtrip: RoundTrip | None = optional("round-trip chrF, when run")


@dataclass(kw_only=True)
class QualityParameters:
    fields: list[str] = fld("fields scored")
    sample_size: int = fld("pairs per field in the manual-review sample")
    seed: int = fld("seed of every random sample")
    max_items: int | None = fld("at most this many items scored per field, null = all")
    roundtrip_sample: int | None = fld("items per field back-translated, null without a round trip")
    roundtrip_translator: dict[str, Any] | None = fld("the back-translation backend's description")


@dataclass(kw_only=True)
class QualityReport:
    schema_version: str = fld("format identifier", default=SCHEMA)
    dataset: str = fld("the translated dataset's name")
    source: DatasetSide = fld("the original dataset")
    translated: DatasetSide = fld("the translation")
    translation: TranslationSummary | None = fld("from translation.json, null when there is none")
    encoder: dict[str, Any] = fld("the similarity encoder: model, revision, prompts, max_length")
    language_identifier: dict[str, Any] = fld("the language identifier: package, version, thresholds")
    parameters: QualityParameters = fld("the parameters")
    fields: dict[str, FieldQuality] = fld("per field (queries, corpus)")
    per_query_similarity: dict[str, float] = optional("similarity of every scored query", default_factory=dict)
    table: list[TableRow] = fld("BEIR-PL Table 2 layout")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    timings: dict[str, float] = fld("seconds per step and in total", default_factory=dict)


# The reasons format 2 flagged rows with, and its one similarity score.
CHECK_FLAGS = ("empty", "untranslated", "near_identical", "wrong_language", "length_ratio", "lost_numbers",
               "lost_urls", "repetition")


def to_current(data: dict[str, Any], source: str, schema: str) -> dict[str, Any]:
    """A format-1/2 report (checked with the names it was written with) as a format-3 dict."""
    old: QualityReport = build(QualityReport, {"schema_version": SCHEMA, **data}, source)
    asdict = dataclasses.asdict
    methods: dict[str, Any] = {
        "checks": {"description": {"language_identifier": old.language_identifier}, "scores": [],
                   "flags": {reason: "" for reason in CHECK_FLAGS}},
        "similarity": {"description": old.encoder, "scores": ["similarity"], "flags": {"low_similarity": ""}},
    }
    if old.parameters.roundtrip_translator is not None:
        methods["roundtrip"] = {"description": {"translator": old.parameters.roundtrip_translator}, "scores": [],
                                "flags": {}, "sample": old.parameters.roundtrip_sample}
    fields = {}
    for name, entry in old.fields.items():
        outcome: dict[str, Any] = {
            "checks": {"scored": entry.pairs, "missing": 0,
                       "summary": {"language": asdict(entry.language), "length_ratio": asdict(entry.length_ratio)}},
            "similarity": {"scored": entry.similarity.n, "missing": 0}}
        if entry.roundtrip is not None:
            outcome["roundtrip"] = {"scored": entry.roundtrip.n, "missing": 0,
                                    "summary": {"chrF": entry.roundtrip.chrF, "signature": entry.roundtrip.signature}}
        fields[name] = {"pairs": entry.pairs, "missing": entry.missing, "empty_sources": entry.empty_sources,
                        "flags": entry.flags, "flagged_items": entry.flagged_items,
                        "scores": {"similarity": asdict(entry.similarity)}, "methods": outcome,
                        "rows": {"similarity": old.per_query_similarity} if name == "queries" else {},
                        "missing_examples": entry.missing_examples}
    parameters = {k: v for k, v in asdict(old.parameters).items() if not k.startswith("roundtrip")}
    return {"schema_version": schema, "dataset": old.dataset, "source": asdict(old.source),
            "translated": asdict(old.translated),
            "translation": asdict(old.translation) if old.translation else None, "methods": methods,
            "scores": {"similarity": {"method": "similarity", "higher_is_better": True, "scale": [0.0, 1.0],
                                      "description": "cosine similarity of source and translation embeddings"}},
            "parameters": parameters, "fields": fields, "table": [asdict(row) for row in old.table],
            "versions": old.versions, "timings": old.timings}
