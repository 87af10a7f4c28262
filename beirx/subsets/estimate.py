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
"""

from __future__ import annotations

import math

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
