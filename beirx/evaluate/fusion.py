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

**Ties**: ranks inside each input run, and the order of the fused run, follow the evaluation order used
everywhere in beirx (score descending, then document ID descending), so tied documents are ordered the
same way in RRF ranks, in run files and in pytrec_eval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from beirx.errors import BeirxError
from beirx.evaluate.defaults import FUSION_METHODS, NORMALIZATIONS, RRF_K  # noqa: F401 (re-exported)
from beirx.evaluate.runs import Run, ranked

METHODS = FUSION_METHODS
MIN_MAX_FLOOR = 0.001  # OpenSearch MinMaxScoreNormalizationTechnique.MIN_SCORE


def normalize(doc_scores: dict[str, float], method: str) -> dict[str, float]:
    """One run's scores for one query, normalised with ``method`` (see the module docstring)."""
    if method == "none" or not doc_scores:
        return dict(doc_scores)
    values = list(doc_scores.values())
    if method == "min_max":
        low, high = min(values), max(values)
        if high == low:
            return dict.fromkeys(doc_scores, 1.0)
        return {d: ((s - low) / (high - low)) or MIN_MAX_FLOOR for d, s in doc_scores.items()}
    if method == "l2":
        norm = math.sqrt(sum(s * s for s in values))
        return {d: (s / norm if norm else 0.0) for d, s in doc_scores.items()}
    raise BeirxError(f"unknown normalization {method!r}; choose one of: {', '.join(NORMALIZATIONS)}")


def combine(scores: Sequence[float], weights: Sequence[float], method: str) -> float:
    """Combine one document's normalised scores (``0`` where a run missed it) with ``method``."""
    if method == "arithmetic":
        return sum(w * s for w, s in zip(weights, scores)) / sum(weights)
    if method == "linear":
        return sum(w * s for w, s in zip(weights, scores))
    present = [(w, s) for w, s in zip(weights, scores) if s > 0 and w > 0]
    if not present:
        return 0.0
    total = sum(w for w, _ in present)
    if method == "geometric":
        return math.exp(sum(w * math.log(s) for w, s in present) / total)
    if method == "harmonic":
        return total / sum(w / s for w, s in present)
    raise BeirxError(f"unknown fusion method {method!r}; choose one of: {', '.join(METHODS)}")


def check_weights(weights: Sequence[float] | None, n: int) -> list[float]:
    """``weights`` as floats (default all 1), or BeirxError if their number or sign is wrong."""
    if weights is None:
        return [1.0] * n
    weights = [float(w) for w in weights]
    if len(weights) != n:
        raise BeirxError(f"{len(weights)} fusion weights given for {n} runs; give one weight per run")
    if any(w < 0 for w in weights) or not any(w > 0 for w in weights):
        raise BeirxError(f"fusion weights must be >= 0 and not all 0, got {weights}")
    return weights


def fuse(runs: Sequence[Run], method: str = "rrf", normalization: str = "min_max",
         weights: Sequence[float] | None = None, rrf_k: int = RRF_K) -> Run:
    """Fuse ``runs`` (same queries, any depths) into one run holding every retrieved document."""
    if len(runs) < 2:
        raise BeirxError("fusion needs at least two runs")
    if method not in METHODS:
        raise BeirxError(f"unknown fusion method {method!r}; choose one of: {', '.join(METHODS)}")
    if normalization not in NORMALIZATIONS:
        raise BeirxError(f"unknown normalization {normalization!r}; choose one of: {', '.join(NORMALIZATIONS)}")
    weights = check_weights(weights, len(runs))
    qids = list(dict.fromkeys(qid for run in runs for qid in run))
    fused: Run = {}
    for qid in qids:
        lists = [run.get(qid, {}) for run in runs]
        if method == "rrf":
            scores: dict[str, float] = {}
            for w, docs in zip(weights, lists):
                for rank, (did, _) in enumerate(ranked(docs), 1):
                    scores[did] = scores.get(did, 0.0) + w / (rrf_k + rank)
            fused[qid] = scores
            continue
        normed = [normalize(docs, normalization) for docs in lists]
        docs = dict.fromkeys(did for d in lists for did in d)
        fused[qid] = {did: combine([n.get(did, 0.0) for n in normed], weights, method) for did in docs}
    return fused


def describe(method: str, normalization: str | None, weights: Sequence[float] | None, n: int,
             rrf_k: int = RRF_K) -> dict:
    """The fusion parameters as they enter results files and cache keys."""
    return {"fusion": method, "normalization": None if method == "rrf" else normalization,
            "weights": check_weights(weights, n), "rrf_k": rrf_k if method == "rrf" else None}
