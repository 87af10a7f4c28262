"""What a subset can tell apart: the interval of Kendall's tau, Spearman's rho, the resolution, and noise
against disagreement for every swapped pair.

- **Kendall's tau-b, Spearman's rho and their intervals** (unpaired, paired, self-ceiling: a percentile
  bootstrap over the subset's queries): :mod:`beirx.rank_agreement`, shared with the report's source-vs-translation
  check. *Unpaired*: the subset's resampled means against the full set's fixed means (which queries the subset
  holds and the full set's own query noise); *self-ceiling*: the full set against itself over the same draws (the
  query noise every subset with these queries inherits); *paired*: both sides over the same drawn subset queries
  (the fidelity of the document cut itself: [1, 1] when nothing changed).
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

from dataclasses import dataclass
from itertools import combinations

from beirx.rank_agreement import (  # noqa: F401 (the ranking check's, re-exported)
    RESAMPLES, draw_counts, intervals, kendall_tau, mean_interval, percentile_bounds, spearman_rho)
from beirx.significance import pair_scores, randomization_test, t_test

ALPHA = 0.05
PERMUTATIONS = 10_000
TESTS = ("permutation", "t")


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
