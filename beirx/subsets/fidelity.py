"""What a subset can tell apart: the interval of Kendall's tau, Spearman's rho, the resolution, and noise
against disagreement for every swapped pair.

- **Kendall's tau-b**: ``scipy.stats.kendalltau`` (Kendall 1938, tie correction of Kendall 1945).
- **Tau's interval**: a percentile bootstrap over the subset's queries (Efron & Tibshirani, *An Introduction
  to the Bootstrap*, 1993, ch. 13): the queries are resampled with replacement, each system's mean recomputed,
  and tau taken against the full set's (fixed) means; the 2.5th and 97.5th percentiles of those taus. It is
  the uncertainty that comes from which queries the subset kept, which is where a subset's variance lives.
- **Spearman's rho**: ``scipy.stats.spearmanr`` of the same two orderings (what HAKARI-Bench reports).
- **Resolution**: every pair of systems is compared with the paired test ``beirx report`` uses
  (:func:`beirx.significance.randomization_test`, or :func:`~beirx.significance.t_test`) over the queries;
  the resolution is the smallest difference of the metric that the subset separates at ``1 - alpha``, and
  every difference below it is unresolved (``largest_unresolved`` is the largest difference it does not
  separate). Per pair, uncorrected: it states what one comparison read off the subset can carry.
- **Swaps**: a pair ordered differently on the subset is *noise on the subset* when the subset does not
  separate it, *noise on the full set* when the full set does not either (or only the full set does not), and
  a *disagreement* when both separate it, in opposite directions.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from beirx.significance import pair_scores, randomization_test, t_test

ALPHA = 0.05
RESAMPLES = 1000
PERMUTATIONS = 10_000
TESTS = ("permutation", "t")


def kendall_tau(full: list[float], subset: list[float]) -> tuple[float | None, float | None]:
    """``(tau-b, two-sided p-value)`` of scipy; ``(None, None)`` where tau is undefined."""
    from scipy.stats import kendalltau

    if len(full) < 2:
        return None, None
    result = kendalltau(full, subset)
    tau, p = float(result.statistic), float(result.pvalue)
    return (None, None) if tau != tau else (tau, None if p != p else p)


def spearman_rho(full: list[float], subset: list[float]) -> float | None:
    """Spearman's rho of scipy; None where undefined (fewer than two systems, or a constant side)."""
    from scipy.stats import spearmanr

    if len(full) < 2 or len(set(full)) < 2 or len(set(subset)) < 2:
        return None
    rho = float(spearmanr(full, subset).statistic)
    return None if rho != rho else rho


def tau_interval(full: list[float], per_query: list[dict[str, float]], *, resamples: int = RESAMPLES,
                 seed: int = 0, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Kendall's tau-b, the subset's queries resampled (module doc);
    ``per_query[i]``: system ``i``'s scores on the subset by query ID (every system on the same queries)."""
    queries = sorted(set.intersection(*(set(scores) for scores in per_query))) if per_query else []
    if len(full) < 2 or not queries:
        return None
    matrix = np.array([[scores[q] for q in queries] for scores in per_query], dtype=np.float64)
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(resamples):
        means = matrix[:, rng.integers(0, len(queries), len(queries))].mean(axis=1)
        tau, _ = kendall_tau(full, means.tolist())
        if tau is not None:
            taus.append(tau)
    if not taus:
        return None
    tail = (1 - level) / 2 * 100
    return float(np.percentile(taus, tail)), float(np.percentile(taus, 100 - tail))


def pair_p_values(per_query: dict[str, dict[str, float]], *, test: str = "permutation",
                  permutations: int = PERMUTATIONS, seed: int = 0) -> dict[tuple[str, str], float]:
    """The two-sided paired p-value of every pair of systems (keys in ``per_query``'s order)."""
    p = {}
    for a, b in combinations(per_query, 2):
        paired = pair_scores(per_query[a], per_query[b])
        p[(a, b)] = (randomization_test(paired.a, paired.b, permutations, seed) if test == "permutation"
                     else t_test(paired.a, paired.b))
    return p


@dataclass(frozen=True)
class Resolved:
    smallest_separated: float | None
    """The smallest |difference| the test separates at 1 - alpha (None: it separates no pair)."""
    largest_unresolved: float | None
    """The largest |difference| it does not separate (None: it separates every pair)."""


def resolution(means: dict[str, float], p_values: dict[tuple[str, str], float], alpha: float = ALPHA) -> Resolved:
    separated = [abs(means[a] - means[b]) for (a, b), p in p_values.items() if p < alpha]
    unresolved = [abs(means[a] - means[b]) for (a, b), p in p_values.items() if not p < alpha]
    return Resolved(min(separated) if separated else None, max(unresolved) if unresolved else None)


def verdict(p_full: float, p_subset: float, alpha: float = ALPHA) -> str:
    """Why a pair swapped (module doc)."""
    full_separates, subset_separates = p_full < alpha, p_subset < alpha
    if not full_separates and not subset_separates:
        return "noise on both"
    if not subset_separates:
        return "noise on the subset"
    if not full_separates:
        return "noise on the full set"
    return "disagreement"
