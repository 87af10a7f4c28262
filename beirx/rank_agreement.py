"""Rank agreement with bootstrap intervals over queries: do two orderings of systems agree (Kendall's tau-b,
Spearman's rho), and does a per-query signal rank queries as a per-query outcome does (Spearman's rho)?

Shared by the subset ranking check (a subset against its full set) and the report (a translation against its
source; a quality signal against the per-query drop), so both compute the same statistic the same way.

- **Kendall's tau-b**: ``scipy.stats.kendalltau`` (Kendall 1938, tie correction of Kendall 1945).
- **Spearman's rho**: ``scipy.stats.spearmanr`` (Pearson's r of average ranks).
- **The intervals** (percentile bootstrap over queries; Efron & Tibshirani, *An Introduction to the Bootstrap*,
  1993, ch. 13; paired: both samples resampled by the same indices, so what they share cancels): one set of
  seeded draws takes the queries with replacement ``resamples`` times. For two orderings of systems
  (:func:`intervals`), every system's mean is recomputed on each side over the drawn queries and tau-b and rho
  are taken of three pairs of orderings, so each reports ``[2.5th, 97.5th]`` percentiles of the same draws:

  - *unpaired* (``tau_interval``, ``rho_interval``): one side's resampled means against the other's FIXED
    means (a subset against the full set: which queries it holds *and* the query-sampling noise of the full
    set's own ordering).
  - *self-ceiling* (``ceiling_*``): the fixed side's own per-query scores on the same resampled queries against
    its fixed means: the query noise every ordering on these queries inherits.
  - *paired* (``paired_*``): both sides' means over the SAME resampled queries (the queries both sides share).
    With identical per-query scores on both sides every draw gives 1, so the interval is exactly [1, 1]: it
    measures what differs between the sides (a document cut, a translation), not which queries were drawn.

  For a per-query signal against a per-query outcome (:func:`spearman_interval`), rho is recomputed on the
  drawn (signal, outcome) pairs.

  Tau-b and rho are computed for all draws at once (tau-b as ``sum sx*sy / sqrt(sum sx^2 * sum sy^2)`` over
  the pairs of systems, rho as Pearson's r of average ranks: the formulas of scipy's ``kendalltau`` and
  ``spearmanr``, ranks from ``scipy.stats.rankdata``); draws where one side is constant (undefined) are dropped.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

RESAMPLES = 1000
BLOCK = 100  # draws of a per-query rho computed at a time (memory: BLOCK x queries per array)


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


def draws(size: int, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """``(resamples, size)`` indices of ``size`` items drawn with replacement: the seeded bootstrap draws."""
    return np.random.default_rng(seed).integers(0, size, (resamples, size))


def draw_counts(n: int, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """``(resamples, n)``: how often each of ``n`` items is drawn in each of :func:`draws`, so a draw's mean of
    any per-item values is one matrix product."""
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.arange(resamples)[:, None], draws(n, resamples, seed)), 1)
    return counts


def percentile_bounds(values: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """``[(1 - level) / 2, (1 + level) / 2]`` percentiles of the defined (not NaN) values; None without any."""
    values = values[~np.isnan(values)]
    tail = (1 - level) / 2 * 100
    return (float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))) if values.size else None


def mean_interval(values: list[float], *, resamples: int = RESAMPLES, seed: int = 0,
                  level: float = 0.95) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the mean of per-item ``values`` (drawn with replacement, as for tau's
    intervals); None without values."""
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return percentile_bounds(draw_counts(len(array), resamples, seed) @ array / len(array), level)


@dataclass(frozen=True)
class Intervals:
    """The bootstrap figures of the module doc; intervals are ``(low, high)``, None where undefined (or not
    asked for)."""

    tau_interval: tuple[float, float] | None
    """Unpaired: one side's resampled queries against the other's fixed means."""
    rho_interval: tuple[float, float] | None
    paired_tau: float | None
    """Tau between the fixed side's means over the shared queries and the other side's means."""
    paired_rho: float | None
    paired_tau_interval: tuple[float, float] | None
    """Paired: both sides over the same resampled (shared) queries."""
    paired_rho_interval: tuple[float, float] | None
    ceiling_tau_interval: tuple[float, float] | None
    """The fixed side against its own fixed means over the same draws: the query noise an unpaired one inherits."""
    ceiling_rho_interval: tuple[float, float] | None


def intervals(full: list[float], per_query: list[dict[str, float]],
              full_per_query: list[dict[str, float]] | None = None, *, resamples: int = RESAMPLES, seed: int = 0,
              level: float = 0.95) -> Intervals:
    """The unpaired, paired and self-ceiling intervals of tau and rho from one set of draws (module doc).
    ``full[i]``: system ``i``'s fixed mean; ``per_query[i]`` and ``full_per_query[i]``: its scores by query ID on
    the resampled side and on the fixed side (which holds every query of the other). Without ``full_per_query``
    only the unpaired intervals."""
    none = Intervals(None, None, None, None, None, None, None, None)
    queries = sorted(set.intersection(*(set(scores) for scores in per_query))) if per_query else []
    if len(full) < 2 or not queries:
        return none
    subset = np.array([[scores[q] for q in queries] for scores in per_query], dtype=np.float64)
    fixed = np.array(full, dtype=np.float64)
    counts = draw_counts(len(queries), resamples, seed)
    sub_means = counts @ subset.T / len(queries)  # (resamples, systems): one row per draw

    def interval(values: np.ndarray) -> tuple[float, float] | None:
        return percentile_bounds(values, level)

    if full_per_query is None:
        return dataclasses.replace(none, tau_interval=interval(tau_b_rows(sub_means, fixed)),
                                   rho_interval=interval(rho_rows(sub_means, fixed)))
    whole = np.array([[scores[q] for q in queries] for scores in full_per_query], dtype=np.float64)
    full_means = counts @ whole.T / len(queries)
    point = whole.mean(axis=1)[None, :]
    return Intervals(tau_interval=interval(tau_b_rows(sub_means, fixed)),
                     rho_interval=interval(rho_rows(sub_means, fixed)),
                     paired_tau=_point(tau_b_rows(point, subset.mean(axis=1))),
                     paired_rho=_point(rho_rows(point, subset.mean(axis=1))),
                     paired_tau_interval=interval(tau_b_rows(sub_means, full_means)),
                     paired_rho_interval=interval(rho_rows(sub_means, full_means)),
                     ceiling_tau_interval=interval(tau_b_rows(full_means, fixed)),
                     ceiling_rho_interval=interval(rho_rows(full_means, fixed)))


def spearman_interval(x: np.ndarray, y: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0,
                      level: float = 0.95) -> tuple[float | None, float | None, tuple[float, float] | None]:
    """``(rho, two-sided p, interval)`` of paired per-item values ``x`` and ``y``: rho and p from
    ``scipy.stats.spearmanr``, the percentile bootstrap interval over items (module doc); None where undefined
    (fewer than three items, or a constant side). The interval is None too when rho is undefined on more draws than
    one tail holds (2.5% at 95%: e.g. a signal that sets one item apart, absent from a third of the draws): the
    defined draws alone would give an interval conditioned on that item being drawn."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None, None
    result = spearmanr(x, y)
    picks = draws(len(x), resamples, seed)
    found = np.concatenate([rho_rows(x[part], y[part]) for part in np.array_split(picks, max(1, resamples // BLOCK))])
    if np.isnan(found).mean() > (1 - level) / 2:  # undefined beyond one tail's mass: no interval at this level
        return float(result.statistic), float(result.pvalue), None
    return float(result.statistic), float(result.pvalue), percentile_bounds(found, level)


def _point(values: np.ndarray) -> float | None:
    return None if np.isnan(values[0]) else float(values[0])


def tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of every row of ``x`` against ``y`` (a row each, or one vector); NaN where undefined."""
    first, second = np.triu_indices(x.shape[1], 1)
    y = np.broadcast_to(y, x.shape)
    sx, sy = np.sign(x[:, first] - x[:, second]), np.sign(y[:, first] - y[:, second])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / np.sqrt((sx * sx).sum(axis=1) * (sy * sy).sum(axis=1))


def rho_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of every row of ``x`` against ``y`` (a row each, or one vector): Pearson's r of average
    ranks; NaN where undefined."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x, axis=1), rankdata(np.broadcast_to(y, x.shape), axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
