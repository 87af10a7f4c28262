"""Hybrid retrieval: fuse two or more runs of the same queries into one.

Two families, as benchmarked for OpenSearch's hybrid search (Shyani et al., "The ABCs of semantic search
in OpenSearch", 2023; OpenSearch ``normalization-processor``) and analysed by Bruch et al. ("An Analysis of
Fusion Functions for Hybrid Retrieval", ACM TOIS 2023):

**Score-based**: normalise each run's scores per query, then combine the normalised scores of a document.

Normalisation of one run's list ``s_1..s_n`` for one query (its retrieved documents only):

- ``min_max``: ``(s - min) / (max - min)``. As in OpenSearch, the list minimum becomes ``0.001`` instead of
  ``0`` so that a retrieved document stays distinguishable from a missing one, and a list whose scores
  are all equal (e.g. a single document) normalises to ``1.0``.
- ``l2``: ``s / sqrt(s_1^2 + ... + s_n^2)`` (``0`` when the norm is ``0``).
- ``none``: raw scores (meaningful for ``linear`` when the runs share a scale).

Combination of a document's normalised scores ``n_i`` with weights ``w_i`` (default all ``1``):

- ``arithmetic``: ``sum_i w_i n_i / sum_i w_i``.
- ``geometric``: ``exp(sum_i w_i ln n_i / sum_i w_i)``.
- ``harmonic``: ``sum_i w_i / sum_i (w_i / n_i)``.
- ``linear``: ``sum_i w_i n_i`` (no division), i.e. ``b + f * n`` for a BM25 run ``b`` and a neural run
  ``n`` with weights ``1, f``.

**Missing documents** (retrieved by some runs but not others): their normalised score in a run that did
not retrieve them is ``0``. ``arithmetic`` and ``linear`` count that ``0`` (with its weight), so a
document found by one run only is pulled down. ``geometric`` and ``harmonic`` are undefined at ``0``
(``ln 0``, ``1/0``); following OpenSearch they skip every score ``<= 0`` and average the remaining ones
over the remaining weights only, so a document found by one run keeps that run's normalised score
unchanged. A document with no positive score at all gets ``0``. (Negative scores, possible with ``l2``
on cosine or dot-product runs, are therefore also skipped by these two means.)

**Rank-based**: ``rrf``, reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009):
``sum_i w_i / (k + rank_i(d))`` with ``k = 60`` and 1-based ranks; a run that did not retrieve ``d``
contributes nothing. Scores and normalisation are ignored.

Each method and normalisation is one function in :data:`FUSIONS` / :data:`NORMALIZATIONS` (name ->
function, its source in its docstring); :func:`check` is the one place a method, a normalisation and weights
are checked, for a grid file, the flags and :func:`fuse` alike.

**Ties**: ranks inside each input run, and the order of the fused run, follow the evaluation order used
everywhere in beirx (score descending, then document ID descending), so tied documents are ordered the
same way in RRF ranks, in run files and in pytrec_eval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from beirx.argtypes import OptionValueError, non_negative_float, non_negative_int
from beirx.errors import BeirxError
from beirx.evaluate.defaults import NORMALIZATION, RRF_K
from beirx.evaluate.runs import Run, ranked
from beirx.options import Option

MIN_MAX_FLOOR = 0.001  # OpenSearch MinMaxScoreNormalizationTechnique.MIN_SCORE

Scores = dict[str, float]


# -- normalisations of one run's scores for one query ---------------------------------------------------------
def _min_max(doc_scores: Scores) -> Scores:
    """``(s - min) / (max - min)``, the minimum floored at 0.001 and a constant list at 1.0 (OpenSearch
    ``MinMaxScoreNormalizationTechnique``)."""
    values = doc_scores.values()
    low, high = min(values), max(values)
    if high == low:
        return dict.fromkeys(doc_scores, 1.0)
    return {d: ((s - low) / (high - low)) or MIN_MAX_FLOOR for d, s in doc_scores.items()}


def _l2(doc_scores: Scores) -> Scores:
    """``s / sqrt(sum of s^2)``, 0 when the norm is 0 (OpenSearch ``L2ScoreNormalizationTechnique``)."""
    norm = math.sqrt(sum(s * s for s in doc_scores.values()))
    return {d: (s / norm if norm else 0.0) for d, s in doc_scores.items()}


def _raw(doc_scores: Scores) -> Scores:
    """The scores as they are (for ``linear`` on runs that share a scale)."""
    return dict(doc_scores)


NORMALIZATIONS: dict[str, Callable[[Scores], Scores]] = {"min_max": _min_max, "l2": _l2, "none": _raw}


# -- combinations of one document's normalised scores (0 where a run missed it) ------------------------------
def _arithmetic(scores: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted arithmetic mean, missing documents counted as 0 (OpenSearch ``arithmetic_mean``; Bruch et
    al., TOIS 2023, as a convex combination)."""
    return sum(w * s for w, s in zip(weights, scores)) / sum(weights)


def _linear(scores: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted sum, no division: ``b + f * n`` (CombSUM, Fox & Shaw, TREC-2 1994, with weights)."""
    return sum(w * s for w, s in zip(weights, scores))


def _present(scores: Sequence[float], weights: Sequence[float]) -> list[tuple[float, float]]:
    """``(weight, score)`` of the positive scores: where the geometric and harmonic means are defined."""
    return [(w, s) for w, s in zip(weights, scores) if s > 0 and w > 0]


def _geometric(scores: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted geometric mean over the positive scores only (OpenSearch ``geometric_mean``)."""
    present = _present(scores, weights)
    if not present:
        return 0.0
    return math.exp(sum(w * math.log(s) for w, s in present) / sum(w for w, _ in present))


def _harmonic(scores: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted harmonic mean over the positive scores only (OpenSearch ``harmonic_mean``)."""
    present = _present(scores, weights)
    if not present:
        return 0.0
    return sum(w for w, _ in present) / sum(w / s for w, s in present)


# -- fusion methods: one query's runs -> fused scores ----------------------------------------------------------
def _rrf(lists: list[Scores], weights: list[float], normalization: str, rrf_k: int) -> Scores:
    """Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009): ``sum_i w_i / (k + rank_i(d))``,
    1-based ranks in evaluation order; scores and normalisation are ignored."""
    scores: Scores = {}
    for w, docs in zip(weights, lists):
        for rank, (did, _) in enumerate(ranked(docs), 1):
            scores[did] = scores.get(did, 0.0) + w / (rrf_k + rank)
    return scores


def _score_based(combine: Callable[[Sequence[float], Sequence[float]], float]):
    """A fusion that normalises each run's scores, then combines each document's with ``combine``."""
    def fuse_query(lists: list[Scores], weights: list[float], normalization: str, rrf_k: int) -> Scores:
        normed = [NORMALIZATIONS[normalization](docs) if docs else {} for docs in lists]
        docs = dict.fromkeys(did for d in lists for did in d)
        return {did: combine([n.get(did, 0.0) for n in normed], weights) for did in docs}

    fuse_query.__doc__ = combine.__doc__
    return fuse_query


FUSIONS = {"rrf": _rrf, "arithmetic": _score_based(_arithmetic), "geometric": _score_based(_geometric),
           "harmonic": _score_based(_harmonic), "linear": _score_based(_linear)}
"""Every fusion method by name (``--fusion``, a grid's ``fusion =``); the function fuses one query."""
METHODS = tuple(FUSIONS)
#: A fusion's options, declared once: ``beirx eval``'s fusion flags are generated from them, a grid file's
#: ``[[systems]]`` fusion is read by them.
OPTIONS: tuple[Option, ...] = (
    Option("normalization", choices=tuple(NORMALIZATIONS), default=NORMALIZATION,
           help="score normalisation before a score-based fusion"),
    Option("weights", help="comma-separated weights, one per first-stage system (default equal)"),
    Option("rrf_k", non_negative_int, default=RRF_K, help="RRF constant k (Cormack et al. 2009)"),
)


def check(method: str, normalization: str, weights: Sequence[float] | None, n: int) -> list[float]:
    """The weights as floats (default all 1), after checking the method, normalisation and weights for
    ``n`` runs; a :class:`BeirxError` names what is wrong."""
    if n < 2:
        raise BeirxError("fusion needs at least two runs")
    if method not in FUSIONS:
        raise BeirxError(f"unknown fusion method {method!r}; choose one of: {', '.join(FUSIONS)}")
    if normalization not in NORMALIZATIONS:
        raise BeirxError(f"unknown normalization {normalization!r}; choose one of: {', '.join(NORMALIZATIONS)}")
    if weights is None:
        return [1.0] * n
    try:
        weights = [non_negative_float(str(w)) for w in weights]
    except OptionValueError as exc:
        raise BeirxError(f"fusion weights: {exc}") from None
    if len(weights) != n:
        raise BeirxError(f"{len(weights)} fusion weights given for {n} runs; give one weight per run")
    if not any(w > 0 for w in weights):
        raise BeirxError(f"fusion weights must not all be 0, got {weights}")
    return weights


def normalize(doc_scores: Scores, method: str) -> Scores:
    """One run's scores for one query, normalised with ``method`` (see the module docstring)."""
    if method not in NORMALIZATIONS:
        raise BeirxError(f"unknown normalization {method!r}; choose one of: {', '.join(NORMALIZATIONS)}")
    return NORMALIZATIONS[method](doc_scores) if doc_scores else {}


def fuse(runs: Sequence[Run], method: str = "rrf", normalization: str = "min_max",
         weights: Sequence[float] | None = None, rrf_k: int = RRF_K) -> Run:
    """Fuse ``runs`` (same queries, any depths) into one run holding every retrieved document."""
    weights = check(method, normalization, weights, len(runs))
    fuse_query = FUSIONS[method]
    qids = list(dict.fromkeys(qid for run in runs for qid in run))
    return {qid: fuse_query([run.get(qid, {}) for run in runs], weights, normalization, rrf_k) for qid in qids}


def describe(method: str, normalization: str, weights: Sequence[float] | None, n: int, rrf_k: int = RRF_K) -> dict:
    """The fusion parameters as they enter results files and cache keys."""
    return {"fusion": method, "normalization": None if method == "rrf" else normalization,
            "weights": check(method, normalization, weights, n), "rrf_k": rrf_k if method == "rrf" else None}
