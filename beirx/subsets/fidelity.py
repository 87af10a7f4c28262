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
- **Swaps**: a pair ordered differently on the subset is *noise on the subset* when the subset does not
  separate it, *noise on the full set* when the full set does not either (or only the full set does not), and
  a *disagreement* when both separate it, in opposite directions.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from beirx.rank_agreement import intervals, kendall_tau, spearman_rho  # noqa: F401 (the ranking check's, re-exported)
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
