"""Paired significance tests over per-query scores, and Holm's correction across a table.

- Paired t-test: ``scipy.stats.ttest_rel`` (two-sided).
- Randomization (permutation) test: ``scipy.stats.permutation_test`` with ``permutation_type="samples"``,
  i.e. Fisher's sign-flip test of the mean paired difference that Smucker, Allan and Carterette
  (CIKM 2007) recommend for IR; seeded, and exact (all 2^n flips) when 2^n <= ``permutations``.
- Paired bootstrap confidence interval of the mean difference: ``scipy.stats.bootstrap(paired=True)``
  (BCa).
- Holm-Bonferroni (Holm, 1979): neither scipy (``false_discovery_control`` offers only the
  Benjamini-Hochberg/-Yekutieli FDR procedures) nor ranx (its ``compare`` tests are uncorrected) has it,
  so it is the step-down formula below: sort the m p-values ascending and set
  p'_(i) = max_{j<=i} min(1, (m - j + 1) p_(j)).

Pairing rule (:data:`PAIRING_RULE`): beirx's evaluation already scores a judged query that a run
retrieved nothing for as 0, so two results on the same qrels hold the same judged queries; a query
judged on one side only (different qrels, e.g. a partial translation) is dropped and counted.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from beirx.errors import require

PAIRING_RULE = ("Tests are paired over the judged queries both sides share (a judged query a run retrieved "
                "nothing for scores 0, as in beirx's evaluation); queries judged on one side only are dropped "
                "and counted")


@dataclass(frozen=True)
class Paired:
    """Per-query scores of two systems on the same queries, in the same order."""

    qids: list[str]
    a: np.ndarray
    b: np.ndarray
    dropped: int


def pair_scores(left: dict[str, float], right: dict[str, float]) -> Paired:
    """Align two ``{qid: score}`` maps on their shared queries (sorted IDs); count the others as dropped."""
    shared = sorted(set(left) & set(right))
    dropped = len(set(left) ^ set(right))
    return Paired(shared, np.array([left[q] for q in shared], dtype=np.float64),
                  np.array([right[q] for q in shared], dtype=np.float64), dropped)


def t_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired t-test p-value of ``b`` against ``a``; 1.0 when every difference is zero."""
    stats = require("scipy.stats", "report", "significance tests")

    if len(a) < 2:
        return float("nan")
    p = float(stats.ttest_rel(b, a).pvalue)
    return 1.0 if math.isnan(p) and np.all(a == b) else p


def _mean_difference(x, y, axis=-1):
    return np.mean(y - x, axis=axis)


def randomization_test(a: np.ndarray, b: np.ndarray, permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomization test p-value of the mean difference ``b - a``."""
    stats = require("scipy.stats", "report", "significance tests")

    if len(a) == 0:
        return float("nan")
    result = stats.permutation_test((a, b), _mean_difference, permutation_type="samples", vectorized=True,
                                    n_resamples=permutations, alternative="two-sided",
                                    rng=np.random.default_rng(seed))
    return float(result.pvalue)


def bootstrap_ci(a: np.ndarray, b: np.ndarray, resamples: int = 10_000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Paired bootstrap (BCa) confidence interval of the mean difference ``b - a``."""
    stats = require("scipy.stats", "report", "significance tests")

    diff = b - a
    if len(diff) < 2 or np.all(diff == diff[0]):  # no spread: the interval is the point
        value = float(diff[0]) if len(diff) else float("nan")
        return value, value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        result = stats.bootstrap((a, b), _mean_difference, paired=True, vectorized=True, n_resamples=resamples,
                                 confidence_level=level, method="BCa", rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (NaN stays NaN and is not counted)."""
    valid = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    m = len(valid)
    adjusted = [float("nan")] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(valid, key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass
class Comparison:
    """``b`` against ``a`` on the same queries: means, difference, p-values, Holm-adjusted p-values."""

    label: str
    metric: str
    n: int
    dropped: int
    mean_a: float
    mean_b: float
    t_p: float
    perm_p: float
    ci: tuple[float, float] | None = None
    t_holm: float = float("nan")
    perm_holm: float = float("nan")

    @property
    def difference(self) -> float:
        return self.mean_b - self.mean_a

    def significant(self, test: str, alpha: float) -> bool:
        p = self.perm_holm if test == "permutation" else self.t_holm
        return not math.isnan(p) and p < alpha


def compare(label: str, metric: str, left: dict[str, float], right: dict[str, float], *,
            permutations: int = 10_000, seed: int = 0, bootstrap: int = 0) -> Comparison:
    """Every test of ``right`` against ``left`` (per-query ``metric`` scores); ``bootstrap`` resamples > 0
    adds the confidence interval."""
    paired = pair_scores(left, right)
    a, b = paired.a, paired.b
    return Comparison(label=label, metric=metric, n=len(a), dropped=paired.dropped,
                      mean_a=float(a.mean()) if len(a) else float("nan"),
                      mean_b=float(b.mean()) if len(b) else float("nan"),
                      t_p=t_test(a, b), perm_p=randomization_test(a, b, permutations, seed),
                      ci=bootstrap_ci(a, b, bootstrap, seed) if bootstrap else None)


def correct(comparisons: list[Comparison]) -> None:
    """Holm-adjust both tests' p-values across ``comparisons`` (one table = one family), in place."""
    for attr, target in (("t_p", "t_holm"), ("perm_p", "perm_holm")):
        for comparison, p in zip(comparisons, holm([getattr(c, attr) for c in comparisons])):
            setattr(comparison, target, p)
