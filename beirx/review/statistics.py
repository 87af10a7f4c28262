"""The statistics of a review, each from the library that implements it.

- Agreement: Krippendorff's alpha (Krippendorff, 2004, "Content Analysis", ch. 11) with the ordinal
  difference function, from the ``krippendorff`` package: it handles any number of annotators and items
  that not everyone rated, and treats 1-5 as ordered categories rather than as distances. alpha >= 0.8 is
  reliable, >= 0.667 the lowest Krippendorff accepts for tentative conclusions.
- The share of acceptable items: a binomial proportion with the Wilson score interval (Wilson, 1927), from
  ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``; unlike the normal approximation it stays
  inside [0, 1] and keeps its coverage for small samples and shares near 0 or 1.
- Automatic scores against people: Spearman's rank correlation (``scipy.stats.spearmanr``): QE scores of
  different methods have different scales; only their order is compared.
"""

from __future__ import annotations

import math

import numpy as np

from beirx.errors import require

CONFIDENCE = 0.95


def krippendorff_alpha(ratings: dict[tuple[str, int], int], annotators: list[str], items: list[int]) -> float | None:
    """Ordinal alpha of ``ratings[(annotator, item)]``; None when undefined (fewer than two ratings on every
    item, or one value only)."""
    krippendorff = require("krippendorff", "review", "inter-annotator agreement")
    data = np.array([[ratings.get((a, i), np.nan) for i in items] for a in annotators], dtype=float)
    data = data.reshape(len(annotators), len(items))
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return None
    try:
        with np.errstate(invalid="ignore", divide="ignore"):  # one value only: 0/0, agreement is undefined
            alpha = float(krippendorff.alpha(reliability_data=data[:, pairable], level_of_measurement="ordinal",
                                              value_domain=[1, 2, 3, 4, 5]))
    except (ValueError, ZeroDivisionError):
        return None
    return None if math.isnan(alpha) else alpha


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    if n == 0:
        return None, None
    stats = require("scipy.stats", "review", "confidence intervals")
    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def spearman(x: list[float], y: list[float]) -> tuple[float | None, float | None]:
    """``(rho, two-sided p)``; None for fewer than three pairs or a constant side."""
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None, None
    stats = require("scipy.stats", "review", "rank correlations")
    result = stats.spearmanr(x, y)
    rho, p = float(result.statistic), float(result.pvalue)
    return (None, None) if math.isnan(rho) else (rho, p)
