"""Distributions and outliers of per-row quality scores.

Outliers use the modified z-score ``0.6745 (x - median) / MAD`` with the cut-off 3.5 (Iglewicz & Hoaglin,
1993, "How to Detect and Handle Outliers"): the median and the median absolute deviation are not pulled by
the outliers themselves, and using each field's own distribution adapts the rule to each language pair and
method, so no absolute threshold has to be guessed per score.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from beirx.artifacts.quality_parts import Distribution, Histogram

ROBUST_Z = 3.5
MIN_ITEMS_FOR_ROBUST = 20
PERCENTILES = (5, 25, 50, 75, 95)
BINS = 20


def distribution(values: Sequence[float] | np.ndarray, scale: tuple[float, float] | None = (0.0, 1.0)) -> Distribution:
    """Mean, population std, min/max, percentiles and, for a bounded ``scale``, a histogram of :data:`BINS` equal
    bins (0.05 wide on [0, 1], values clipped into the scale) so reports of different datasets compare bin by bin."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return Distribution(n=0)
    histogram = None
    if scale is not None:
        edges = np.linspace(*scale, BINS + 1).round(6).tolist()
        counts, _ = np.histogram(np.clip(values, scale[0], scale[1]), bins=edges)
        histogram = Histogram(edges=edges, counts=[int(c) for c in counts])
    return Distribution(n=int(len(values)), mean=float(values.mean()), std=float(values.std()),
                        min=float(values.min()), max=float(values.max()),
                        **{f"p{p}": float(np.percentile(values, p)) for p in PERCENTILES}, histogram=histogram)


def robust_z(values: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """Modified z-scores with the median and MAD, or None with fewer than :data:`MIN_ITEMS_FOR_ROBUST` values or
    a MAD of 0 (a constant sample)."""
    if len(values) < MIN_ITEMS_FOR_ROBUST:
        return None
    med = float(np.median(values))
    mad = float(np.median(np.abs(values - med)))
    if mad == 0:
        return None
    return 0.6745 * (values - med) / mad, med, mad


def low_outlier_mask(values: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """The rows (NaN: no value) whose oriented value has a robust z-score below ``-ROBUST_Z`` (none with fewer
    than :data:`MIN_ITEMS_FOR_ROBUST` values or a constant sample)."""
    present = ~np.isnan(values)
    oriented = values[present] if higher_is_better else -values[present]
    mask = np.zeros(len(values), dtype=bool)
    scored = robust_z(oriented)
    if scored is not None:
        mask[present] = scored[0] < -ROBUST_Z
    return mask
