"""The translation-quality report (``quality/quality.json``) that ``beirx quality`` writes.

Per field (``queries``, ``corpus``): the distribution of source/translation similarity (BEIR-PL Table 2
reports its mean), flag counts, the language check, the length-ratio rule and an optional round-trip chrF.
``per_query_similarity`` keeps the similarity of every scored query, so a report can relate translation
quality to the per-query retrieval drop of a results document. Reports written before ``schema_version``
existed load as well (they lack ``per_query_similarity``, which is then empty).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.artifacts.base import Artifact, fld, optional
from beirx.artifacts.manifest import DatasetSide

SCHEMA = "beirx.quality/2"
FILENAME = "quality.json"  # in the report folder, by default <translated dataset>/quality
FOLDER = "quality"


@dataclass(kw_only=True)
class TranslationSummary:
    """What the translation manifest said, when there was one."""

    translator: dict[str, Any] | None = fld("the translator's description")
    partial: bool = fld("true for a --limit preview (items beyond the limit are missing by design)")
    limit: int | None = fld("the preview's --limit, else null")
    untranslated_fields: list[str] = fld("fields copied unchanged (not scored)")


@dataclass(kw_only=True)
class QualityParameters:
    fields: list[str] = fld("fields scored")
    sample_size: int = fld("pairs per field in the manual-review sample")
    seed: int = fld("seed of every random sample")
    max_items: int | None = fld("at most this many items scored per field, null = all")
    roundtrip_sample: int | None = fld("items per field back-translated, null without a round trip")
    roundtrip_translator: dict[str, Any] | None = fld("the back-translation backend's description")


@dataclass(kw_only=True)
class Histogram:
    edges: list[float] = fld("bin edges on [0, 1], 0.05 wide")
    counts: list[int] = fld("items per bin")


@dataclass(kw_only=True)
class Distribution:
    """Similarity distribution of a field; only ``n`` when nothing was scored."""

    n: int = fld("pairs scored")
    mean: float | None = optional("mean cosine similarity")
    std: float | None = optional("population standard deviation")
    min: float | None = optional("minimum")
    max: float | None = optional("maximum")
    p5: float | None = optional("5th percentile")
    p25: float | None = optional("25th percentile")
    p50: float | None = optional("median")
    p75: float | None = optional("75th percentile")
    p95: float | None = optional("95th percentile")
    histogram: Histogram | None = optional("fixed-bin histogram of the similarities")


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
    """Quality of one field (queries or corpus)."""

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
class TableRow:
    """One row of BEIR-PL's Table 2 layout: mean similarity per field."""

    dataset: str = fld("dataset name")
    queries: float | None = optional("mean similarity of queries")
    corpus: float | None = optional("mean similarity of documents")


@dataclass(kw_only=True)
class QualityReport(Artifact):
    """``quality.json``: how good a machine translation of a BEIR dataset is."""

    SCHEMA = SCHEMA
    KIND = "quality report"

    @staticmethod
    def path_in(dataset_root: Path | str) -> Path:
        """Where ``beirx quality`` writes the report of a translated dataset by default."""
        return Path(dataset_root) / FOLDER / FILENAME

    schema_version: str = fld("format identifier", default=SCHEMA)
    dataset: str = fld("the translated dataset's name")
    source: DatasetSide = fld("the original dataset")
    translated: DatasetSide = fld("the translation")
    translation: TranslationSummary | None = fld("from translation.json, null when there is none")
    encoder: dict[str, Any] = fld("the similarity encoder: model, revision, prompts, max_length")
    language_identifier: dict[str, Any] = fld("the language identifier: package, version, thresholds")
    parameters: QualityParameters = fld("the parameters")
    fields: dict[str, FieldQuality] = fld("per field (queries, corpus)")
    per_query_similarity: dict[str, float] = optional("similarity of every scored query, by query ID",
                                                      default_factory=dict)
    table: list[TableRow] = fld("BEIR-PL Table 2 layout")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    timings: dict[str, float] = fld("seconds per step and in total", default_factory=dict)

    @property
    def encoder_model(self) -> str | None:
        return self.encoder.get("model")

    @property
    def encoder_revision(self) -> str | None:
        return self.encoder.get("revision")

    @property
    def identifier(self) -> str:
        """``package version`` of the language identifier."""
        return f"{self.language_identifier.get('package')} {self.language_identifier.get('version')}"

    @classmethod
    def _upgrade(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        if "schema_version" not in data:  # written before the format had a version
            return {"schema_version": SCHEMA, **data}
        return super()._upgrade(data, source)
