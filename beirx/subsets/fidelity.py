"""What a subset can tell apart: the interval of Kendall's tau, Spearman's rho, the resolution, and noise
against disagreement for every swapped pair.

- **Kendall's tau-b**: ``scipy.stats.kendalltau`` (Kendall 1938, tie correction of Kendall 1945).
- **The intervals** (percentile bootstrap over queries; Efron & Tibshirani, *An Introduction to the Bootstrap*,
  1993, ch. 13; paired: both samples resampled by the same indices, so what they share cancels): one set of
  draws takes the subset's queries with replacement ``resamples`` times, recomputes every system's mean on each
  side over the drawn queries, and takes tau-b and rho of three pairs of orderings, so each reports
  ``[2.5th, 97.5th]`` percentiles of the same draws:

  - *unpaired* (``tau_interval``, ``rho_interval``): the subset's resampled means against the full set's FIXED
    means. It measures which queries the subset holds *and* the query-sampling noise of the full set's own
    ordering: with all the queries kept it stays wide, however the documents were cut.
  - *self-ceiling* (``ceiling_*``): the full set's own per-query scores on the same resampled queries against
    its fixed means. The unpaired interval of a subset that cut no document at all: the query noise every
    subset with these queries inherits (one lands above it only by chance), so an unpaired lower bound below
    0.9 may be the queries' fault, not the cut's.
  - *paired* (``paired_*``): both sides' means over the SAME resampled queries. Only the subset's queries pair
    (every one of them is a full-set query); the full set's other queries are left out of both sides, so the
    paired point (``paired_tau``) is tau between the full set's means over the subset's queries and the
    subset's means. It measures the fidelity of the document cut itself: with identical per-query scores on
    both sides every draw gives 1, so the interval is exactly [1, 1].

  Tau-b and rho are computed for all draws at once (tau-b as ``sum sx*sy / sqrt(sum sx^2 * sum sy^2)`` over
  the pairs of systems, rho as Pearson's r of average ranks: the formulas of scipy's ``kendalltau`` and
  ``spearmanr``); draws where one side is constant (undefined) are dropped.
- **Resolution**: every pair of systems is compared with the paired test ``beirx report`` uses
  (:func:`beirx.significance.randomization_test`, or :func:`~beirx.significance.t_test`) over the queries;
  the resolution is the smallest difference of the metric that the subset separates at ``1 - alpha``, and
  every difference below it is unresolved (``largest_unresolved`` is the largest difference it does not
  separate). Per pair, uncorrected: it states what one comparison read off the subset can carry.
- **Discriminative power** (Sakai, SIGIR 2006): a pair of systems the full set does not separate is a tie, so
  its order on the subset is no error. Of the pairs the full set separates at ``1 - alpha``, the share the
  subset separates in the same order (discriminative power retained) and the count it separates in the
  opposite order (significant reversals); beside them, the pairs only the subset separates.
- **Swaps**: a pair ordered differently on the subset is *noise on the subset* when the subset does not
  separate it, *noise on the full set* when the full set does not either (or only the full set does not), and
  a *disagreement* when both separate it, in opposite directions.
"""

from __future__ import annotations

import dataclasses
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


@dataclass(frozen=True)
class Intervals:
    """The bootstrap figures of the module doc, named as in ``subset.json``'s check; intervals are
    ``(low, high)``, None where undefined (or not asked for)."""

    tau_interval: tuple[float, float] | None
    """Unpaired: the subset's resampled queries against the full set's fixed means."""
    rho_interval: tuple[float, float] | None
    paired_tau: float | None
    """Tau between the full set's means over the subset's queries and the subset's means."""
    paired_rho: float | None
    paired_tau_interval: tuple[float, float] | None
    """Paired: both sides over the same resampled (subset's) queries: the document cut's own fidelity."""
    paired_rho_interval: tuple[float, float] | None
    ceiling_tau_interval: tuple[float, float] | None
    """The full set against its own fixed means over the same draws: the query noise an unpaired one inherits."""
    ceiling_rho_interval: tuple[float, float] | None


def intervals(full: list[float], per_query: list[dict[str, float]],
              full_per_query: list[dict[str, float]] | None = None, *, resamples: int = RESAMPLES, seed: int = 0,
              level: float = 0.95) -> Intervals:
    """The unpaired, paired and self-ceiling intervals of tau and rho from one set of draws (module doc).
    ``full[i]``: system ``i``'s mean on the full set; ``per_query[i]`` and ``full_per_query[i]``: its scores by
    query ID on the subset and on the full set. Without ``full_per_query`` only the unpaired intervals."""
    none = Intervals(None, None, None, None, None, None, None, None)
    queries = sorted(set.intersection(*(set(scores) for scores in per_query))) if per_query else []
    if len(full) < 2 or not queries:
        return none
    subset = np.array([[scores[q] for q in queries] for scores in per_query], dtype=np.float64)
    fixed = np.array(full, dtype=np.float64)
    counts = draw_counts(len(queries), resamples, seed)
    sub_means = counts @ subset.T / len(queries)  # (resamples, systems): one row per draw

    def bounds(values: np.ndarray) -> tuple[float, float] | None:
        return percentile_bounds(values, level)

    if full_per_query is None:
        return dataclasses.replace(none, tau_interval=bounds(_tau_b(sub_means, fixed)),
                                   rho_interval=bounds(_rho(sub_means, fixed)))
    whole = np.array([[scores[q] for q in queries] for scores in full_per_query], dtype=np.float64)
    full_means = counts @ whole.T / len(queries)
    point = whole.mean(axis=1)[None, :]
    return Intervals(tau_interval=bounds(_tau_b(sub_means, fixed)), rho_interval=bounds(_rho(sub_means, fixed)),
                     paired_tau=_point(_tau_b(point, subset.mean(axis=1))),
                     paired_rho=_point(_rho(point, subset.mean(axis=1))),
                     paired_tau_interval=bounds(_tau_b(sub_means, full_means)),
                     paired_rho_interval=bounds(_rho(sub_means, full_means)),
                     ceiling_tau_interval=bounds(_tau_b(full_means, fixed)),
                     ceiling_rho_interval=bounds(_rho(full_means, fixed)))


def draw_counts(n: int, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, n)``: how often each of ``n`` queries is drawn in each bootstrap draw of ``n`` with
    replacement (seeded), so a draw's mean of any per-query values is one matrix product."""
    counts = np.zeros((resamples, n))
    draws = np.random.default_rng(seed).integers(0, n, (resamples, n))
    np.add.at(counts, (np.arange(resamples)[:, None], draws), 1)
    return counts


def percentile_bounds(values: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """``[(1 - level) / 2, (1 + level) / 2]`` percentiles of the defined (not NaN) values; None without any."""
    values = values[~np.isnan(values)]
    tail = (1 - level) / 2 * 100
    return (float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))) if values.size else None


def mean_interval(values: list[float], *, resamples: int = RESAMPLES, seed: int = 0,
                  level: float = 0.95) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the mean of per-query ``values`` (the queries drawn with replacement,
    as for tau's intervals); None without values."""
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return percentile_bounds(draw_counts(len(array), resamples, seed) @ array / len(array), level)


def _point(values: np.ndarray) -> float | None:
    return None if np.isnan(values[0]) else float(values[0])


def _tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of every row of ``x`` against ``y`` (a row each, or one vector); NaN where undefined."""
    first, second = np.triu_indices(x.shape[1], 1)
    y = np.broadcast_to(y, x.shape)
    sx, sy = np.sign(x[:, first] - x[:, second]), np.sign(y[:, first] - y[:, second])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / np.sqrt((sx * sx).sum(axis=1) * (sy * sy).sum(axis=1))


def _rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of every row of ``x`` against ``y``: Pearson's r of average ranks; NaN where undefined."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x, axis=1), rankdata(np.broadcast_to(y, x.shape), axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))


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


@dataclass(frozen=True)
class Power:
    """Discriminative power kept by the subset (module doc)."""

    full_separated: int
    """Pairs the full set separates at 1 - alpha."""
    same_order: int
    """Of those, pairs the subset separates too, in the same order."""
    reversals: int
    """Of those, pairs the subset separates in the opposite order (significant reversals)."""
    subset_only: int
    """Pairs the subset separates and the full set does not."""
    pairs: int

    @property
    def retained(self) -> float | None:
        """``same_order / full_separated``; None when the full set separates no pair."""
        return self.same_order / self.full_separated if self.full_separated else None


def discriminative_power(full: dict[str, float], subset: dict[str, float], full_p: dict[tuple[str, str], float],
                         subset_p: dict[tuple[str, str], float], alpha: float = ALPHA) -> Power:
    """Of the pairs of systems the full set separates (``full_p`` < alpha), how many the subset separates in
    the same order and how many in the opposite one (Sakai, SIGIR 2006: a pair neither side separates is a
    tie, not a swap). ``full``/``subset``: each system's mean; p-values keyed by pair on each side."""
    separated = same = reversed_ = only = 0
    for (a, b), p in full_p.items():
        q = subset_p[(a, b)] if (a, b) in subset_p else subset_p[(b, a)]
        if p < alpha:
            separated += 1
            if q < alpha:
                agree = (full[a] - full[b]) * (subset[a] - subset[b]) > 0
                same += agree
                reversed_ += not agree
        elif q < alpha:
            only += 1
    return Power(full_separated=separated, same_order=same, reversals=reversed_, subset_only=only, pairs=len(full_p))


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
