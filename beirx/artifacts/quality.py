"""The translation-quality report (``quality/quality.json``) that ``beirx quality`` writes.

Quality is measured by *methods* (``beirx.translate.quality``: rule checks, cross-lingual embedding
similarity, back-translation, COMET, an LLM judge...), each declaring the per-row scores it produces
and the reasons it flags a row with. The report stores them generically, so a new method needs no new
field here:

- ``methods``: what ran (model, revision, options), the scores it produced and the flags it can raise;
- ``scores``: what each score means (its method, scale, direction);
- per field (``queries``, ``corpus``): every score's distribution, every row's value
  (``rows[score][id]``, ``null`` when the method tried and got no answer), the flag reasons of every
  flagged row, and each method's own summary (rows scored and missing, corpus-level figures).

Readers of the headline figures use the properties (``FieldQuality.similarity``, ``.target_share``,
``.corpus_chrf``; ``QualityReport.per_query_similarity``). Reports of formats 1 and 2 load as well: their
similarity distribution, flags, language check, length rule and round-trip chrF move into the generic
places (format 1 has no per-query similarity, format 2 has it for queries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beirx.artifacts.base import Artifact, fld, optional
from beirx.artifacts.manifest import DatasetSide
from beirx.artifacts.quality_parts import Distribution, TableRow, TranslationSummary

SCHEMA = "beirx.quality/3"
V2 = "beirx.quality/2"
FILENAME = "quality.json"  # in the report folder, by default <translated dataset>/quality
FOLDER = "quality"


@dataclass(kw_only=True)
class QualityParameters:
    fields: list[str] = fld("fields scored")
    sample_size: int = fld("pairs per field in the manual-review sample")
    seed: int = fld("seed of every random sample")
    max_items: int | None = fld("at most this many items scored per field, null = all")


@dataclass(kw_only=True)
class ScoreInfo:
    """What one per-row score means."""

    method: str = fld("the method that produces it")
    description: str = fld("what it measures")
    higher_is_better: bool = fld("true when a higher value means a better translation")
    scale: list[float] | None = optional("[low, high] of the values (the histogram's range), null when unbounded")


@dataclass(kw_only=True)
class MethodInfo:
    """One quality method that ran."""

    description: dict[str, Any] = fld("what ran: model, revision, prompt hash, options (never a secret)")
    scores: list[str] = fld("the per-row scores it produces")
    flags: dict[str, str] = fld("the reasons it flags a row with, and what each means")
    sample: int | None = optional("rows per field it scores (a seeded sample), null = every row")


@dataclass(kw_only=True)
class MethodField:
    """One method's outcome on one field."""

    scored: int = fld("rows it gave a value")
    missing: int = fld("rows it tried but got no value for (e.g. a judge answer still malformed after retries)")
    summary: dict[str, Any] = optional("the method's field-level figures (e.g. corpus chrF, language shares)",
                                       default_factory=dict)


@dataclass(kw_only=True)
class FieldQuality:
    """Quality of one field (queries or corpus)."""

    pairs: int = fld("items scored")
    missing: int = fld("source items absent from the translation")
    empty_sources: int = fld("source items with no text (not scored)")
    flags: dict[str, int] = fld("items per flag reason, all methods together")
    flagged_items: int = fld("items with at least one flag")
    scores: dict[str, Distribution] = optional("distribution of each score", default_factory=dict)
    methods: dict[str, MethodField] = optional("each method's outcome", default_factory=dict)
    rows: dict[str, dict[str, float | None]] = optional(
        "every row's value of each score: `rows[score][item id]`; null = tried, no value", default_factory=dict)
    flagged: dict[str, list[str]] = optional("the flag reasons of every flagged item, by item id",
                                             default_factory=dict)
    missing_examples: list[str] | None = optional("up to 10 missing IDs")

    @property
    def similarity(self) -> Distribution:
        """The cross-lingual similarity's distribution (``n == 0`` when the method did not run)."""
        return self.scores.get("similarity") or Distribution(n=0)

    @property
    def target_share(self) -> float | None:
        """Share of translations identified as the target language (None when not checked)."""
        language = self._summary("checks").get("language") or {}
        return language.get("target_share") if language.get("checked") else None

    @property
    def corpus_chrf(self) -> float | None:
        """Corpus-level chrF of the back-translations against the originals, when the round trip ran."""
        return self._summary("roundtrip").get("chrF")

    def _summary(self, method: str) -> dict[str, Any]:
        entry = self.methods.get(method)
        return entry.summary if entry else {}


@dataclass(kw_only=True)
class QualityReport(Artifact):
    """``quality.json``: how good a machine translation of a BEIR dataset is, method by method and row by row."""

    SCHEMA = SCHEMA
    KIND = "quality report"
    PLACE = f"{FOLDER}/{FILENAME}"  # beirx quality's default report folder in the translated dataset

    schema_version: str = fld("format identifier", default=SCHEMA)
    dataset: str = fld("the translated dataset's name")
    source: DatasetSide = fld("the original dataset")
    translated: DatasetSide = fld("the translation")
    translation: TranslationSummary | None = fld("from translation.json, null when there is none")
    methods: dict[str, MethodInfo] = fld("the quality methods that ran, by name")
    scores: dict[str, ScoreInfo] = fld("what each per-row score means, by score name")
    parameters: QualityParameters = fld("the parameters")
    fields: dict[str, FieldQuality] = fld("per field (queries, corpus)")
    table: list[TableRow] = fld("BEIR-PL Table 2 layout")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    timings: dict[str, float] = fld("seconds per step and in total", default_factory=dict)

    @property
    def per_query_similarity(self) -> dict[str, float]:
        """Similarity of every scored query, by query ID (empty when not recorded)."""
        field = self.fields.get("queries")
        rows = field.rows.get("similarity", {}) if field else {}
        return {qid: value for qid, value in rows.items() if value is not None}

    @property
    def encoder(self) -> dict[str, Any]:
        """The similarity encoder's description (model, revision, prompts), ``{}`` when it did not run."""
        method = self.methods.get("similarity")
        return method.description if method else {}

    @property
    def encoder_model(self) -> str | None:
        return self.encoder.get("model")

    @property
    def encoder_revision(self) -> str | None:
        return self.encoder.get("revision")

    @property
    def identifier(self) -> str:
        """``package version`` of the language identifier."""
        method = self.methods.get("checks")
        found = method.description.get("language_identifier", {}) if method else {}
        return f"{found.get('package')} {found.get('version')}"

    def badness(self, field: str) -> dict[str, tuple[int, float]]:
        """``{item id: (-flag reasons, mean percentile rank)}`` of ``field``: sorting by it puts the worst
        rows first (most flag reasons, then the lowest mean of the row's percentile ranks over every score,
        each oriented so that low = bad).

        One score's percentile rank puts scores of different scales (cosine, chrF, MQM) on one footing, so
        no method dominates the order by its units; a row missing a score is ranked on the others.
        """
        entry = self.fields[field]
        ids = {i for values in entry.rows.values() for i in values} | set(entry.flagged)
        ranks: dict[str, list[float]] = {i: [] for i in ids}
        for score, values in entry.rows.items():
            info = self.scores.get(score)
            sign = 1.0 if info is None or info.higher_is_better else -1.0
            present = sorted((sign * v, i) for i, v in values.items() if v is not None)
            for position, (_, item) in enumerate(present):
                ranks[item].append(position / max(1, len(present) - 1))
        return {i: (-len(entry.flagged.get(i, [])), sum(ranks[i]) / len(ranks[i]) if ranks[i] else 1.0) for i in ids}

    def ranked_rows(self, field: str) -> list[str]:
        """Item IDs of ``field`` from worst to best (:meth:`badness`, ties by ID)."""
        badness = self.badness(field)
        return sorted(badness, key=lambda i: (badness[i], i))

    @classmethod
    def _upgrade(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        if data.get("schema_version") in (None, V2):  # format 1 (before versions) has format 2's fields
            from beirx.artifacts.quality_v2 import to_current

            return to_current(data, source, SCHEMA)
        return super()._upgrade(data, source)
