"""An estimate of a system's full-corpus nDCG@k from its run on a subset that keeps a uniform sample of the
documents nobody pooled.

A subset's corpus holds every judged and pooled document (inclusion probability 1) and a seeded uniform random
fill of the others (probability ``p = fill / (documents - judged - pooled)``). On the subset a system that did
not pool meets only a ``p`` share of its own unpooled non-relevant documents, so its relevant documents rise.
Each document above a relevant one in the system's subset ranking stands for itself when it was certain and
for ``1/p`` documents when it was drawn (Horvitz & Thompson 1952; the inverse-probability weighting of infAP,
Yilmaz & Aslam, CIKM 2006, applied here to the unjudged documents above a relevant one rather than to the
judgements, which the subset keeps whole)::

    rank_full(r) ~ 1 + #(certain documents above r) + #(drawn documents above r) / p

an unbiased estimate of the number of documents above ``r`` in the full corpus. nDCG@k is then computed with
these ranks, as trec_eval does with real ones (linear gains, ``gain / log2(1 + rank)`` for a rank within
``k``; the ideal DCG from the judgements): consistent, not unbiased, since the discount and the cut-off are
not linear in the rank. Its bias and interval against the full-corpus scores are measured in docs/subsets.md.
With ``p`` = 1 for every document (nothing drawn) it is trec_eval's nDCG@k of the run.

The plug-in ranks are unbiased but nDCG is not linear in them: a relevant document with one unpooled document
above it (full rank 2) is estimated at rank 1 three times in four when ``p`` = 1/4 and at rank 5 otherwise, so
its expected gain is 0.85 instead of 0.63 (the discount is convex). :func:`empirical_bayes_ndcg` therefore
estimates the gain itself: the number ``M`` of unpooled documents above a relevant one is drawn from a prior,
each drawn document is seen with probability ``p`` (``X ~ Binomial(M, p)``), the prior is the one that makes
the system's observed counts most likely over all its queries (the nonparametric maximum likelihood mixing
distribution, by EM: Laird, JASA 1978; empirical Bayes, Robbins 1956), and the gain is its posterior mean
``E[rel / log2(1 + C + M + 1) 1{C + M + 1 <= k} | X]`` (``C``: the certain documents above it).
"""

from __future__ import annotations

import math

import numpy as np

from beirx.data.records import Qrels
from beirx.evaluate.runs import Run, ranked


def estimated_ndcg(qrels: Qrels, run: Run, drawn: set[str], probability: float, k: int = 10) -> dict[str, float]:
    """``{query id: estimated full-corpus nDCG@k}`` for every judged query with a relevant document (0 when
    the run retrieves nothing for it); ``drawn``: the subset's randomly drawn documents, each standing for
    ``1 / probability`` documents of the full corpus."""
    if not 0 < probability <= 1:
        raise ValueError(f"an inclusion probability is in (0, 1], not {probability}")
    weight = 1 / probability
    found = {}
    for qid, judged in qrels.items():
        ideal = sorted((rel for rel in judged.values() if rel > 0), reverse=True)[:k]
        if not ideal:
            continue
        ideal_dcg = sum(rel / math.log2(rank + 1) for rank, rel in enumerate(ideal, 1))
        above, dcg = 0.0, 0.0
        for doc, _ in ranked(run.get(qid, {})):
            rank = above + 1
            if rank > k:
                break
            rel = judged.get(doc, 0)
            if rel > 0:
                dcg += rel / math.log2(rank + 1)
            above += weight if doc in drawn else 1
        found[qid] = dcg / ideal_dcg
    return found


def fill_probability(documents: int, judged: int, pooled: int, fill: int) -> float | None:
    """The inclusion probability of an unpooled, unjudged document: ``fill / (documents - judged - pooled)``;
    None when nothing was left to draw from."""
    rest = documents - judged - pooled
    return fill / rest if rest > 0 and fill > 0 else None


def _observations(qrels: Qrels, run: Run, drawn: set[str], k: int):
    """Per relevant document ranked above the estimate's reach: (query, relevance, certain above, drawn above);
    and each query's ideal DCG."""
    rows, ideals = [], {}
    for qid, judged in qrels.items():
        ideal = sorted((rel for rel in judged.values() if rel > 0), reverse=True)[:k]
        if not ideal:
            continue
        ideals[qid] = sum(rel / math.log2(rank + 1) for rank, rel in enumerate(ideal, 1))
        certain = seen = 0
        for doc, _ in ranked(run.get(qid, {})):
            if certain >= k:
                break
            rel = judged.get(doc, 0)
            if rel > 0:
                rows.append((qid, rel, certain, seen))
            if doc in drawn:
                seen += 1
            else:
                certain += 1
    return rows, ideals


def empirical_bayes_ndcg(qrels: Qrels, run: Run, drawn: set[str], probability: float, unpooled: int,
                         k: int = 10, iterations: int = 300) -> dict[str, float]:
    """``{query id: estimated full-corpus nDCG@k}`` as :func:`estimated_ndcg`, with each relevant document's gain
    the posterior mean under the empirical-Bayes prior of the module doc (``unpooled``: the documents the fill
    was drawn from, the prior's upper end).

    A relevant document with ``C + X >= k`` documents above it already lies beyond ``k`` (``M >= X``): its gain
    is 0 and it stays out of the prior, whose support ends at ``3k / p`` (what ``X <= 2k`` can come from)."""
    from scipy.stats import binom

    if not 0 < probability <= 1:
        raise ValueError(f"an inclusion probability is in (0, 1], not {probability}")
    rows, ideals = _observations(qrels, run, drawn, k)
    rows = [row for row in rows if row[2] + row[3] < k]
    found = dict.fromkeys(ideals, 0.0)
    if not rows:
        return found
    seen = np.array([row[3] for row in rows])
    support = np.arange(int(min(unpooled, math.ceil(3 * k / probability))) + 1)
    likelihood = binom.pmf(seen[:, None], support[None, :], probability)  # (relevant documents, M)
    prior = np.full(support.size, 1 / support.size)
    for _ in range(iterations):
        joint = likelihood * prior
        prior = (joint / joint.sum(axis=1, keepdims=True)).mean(axis=0)
    posterior = likelihood * prior
    posterior /= posterior.sum(axis=1, keepdims=True)
    for (qid, rel, certain, _), weights in zip(rows, posterior):
        ranks = certain + support + 1
        gains = np.where(ranks <= k, rel / np.log2(ranks + 1), 0.0)
        found[qid] += float(weights @ gains) / ideals[qid]
    return found
