"""The building blocks the quality report shares across its formats (:mod:`beirx.artifacts.quality` reads format
3, :mod:`beirx.artifacts.quality_v2` formats 1 and 2): what the translation manifest said, a score's
distribution and histogram, a row of BEIR-PL's Table 2. Kept apart so both formats use them without importing
each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beirx.artifacts.base import fld, optional


@dataclass(kw_only=True)
class TranslationSummary:
    """What the translation manifest said, when there was one."""

    translator: dict[str, Any] | None = fld("the translator's description")
    partial: bool = fld("true for a --limit preview (items beyond the limit are missing by design)")
    limit: int | None = fld("the preview's --limit, else null")
    untranslated_fields: list[str] = fld("fields copied unchanged (not scored)")


@dataclass(kw_only=True)
class Histogram:
    edges: list[float] = fld("bin edges over the score's scale, 20 equal bins")
    counts: list[int] = fld("items per bin (values outside the scale count in the edge bins)")


@dataclass(kw_only=True)
class Distribution:
    """Distribution of one score over a field's rows; only ``n`` when nothing was scored."""

    n: int = fld("rows with a value")
    mean: float | None = optional("mean")
    std: float | None = optional("population standard deviation")
    min: float | None = optional("minimum")
    max: float | None = optional("maximum")
    p5: float | None = optional("5th percentile")
    p25: float | None = optional("25th percentile")
    p50: float | None = optional("median")
    p75: float | None = optional("75th percentile")
    p95: float | None = optional("95th percentile")
    histogram: Histogram | None = optional("fixed-bin histogram over the score's scale (none when unbounded)")


@dataclass(kw_only=True)
class TableRow:
    """One row of BEIR-PL's Table 2 layout: mean similarity per field."""

    dataset: str = fld("dataset name")
    queries: float | None = optional("mean similarity of queries")
    corpus: float | None = optional("mean similarity of documents")
