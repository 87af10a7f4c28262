"""Retrieval metrics through pytrec_eval (trec_eval's C code), plus BEIR's two extras.

- nDCG@k, MAP@k, Recall@k, P@k: pytrec_eval's ``ndcg_cut``, ``map_cut``, ``recall``, ``P``, exactly as
  BEIR computes them (Järvelin & Kekäläinen 2002 nDCG with trec_eval's linear gains).
- MRR@k: pytrec_eval's ``recip_rank`` with the cut at k applied to the evaluator's own ranking (the first
  relevant document is at rank ``1/recip_rank``), so the cut and the tie-break are the evaluator's.
- R_cap@k (BEIR's capped recall, Thakur et al. 2021): relevant retrieved in the top k divided by
  ``min(k, #relevant)``; and Hole@k: the share of the top k that nobody judged (documents absent from
  every query's qrels). Neither exists in trec_eval, so they are computed here, on the same ranking.

Ties: trec_eval ranks by score descending, then document ID descending; beirx applies that same order
everywhere (see :mod:`beirx.evaluate.runs`), so tied scores give identical numbers here and in trec_eval.

Queries: the mean is over every judged query that has at least one relevant document; a judged query
missing from the run (e.g. a query that analyses to no tokens) scores 0 and is counted, and reported.
BEIR instead averages only over queries present in the run, which inflates scores when queries fail.

Identical IDs: with ``ignore_identical_ids`` a document whose ID equals the query ID is removed from
the run before any metric is computed, as BEIR and MTEB do for ArguAna and Quora.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from beirx.artifacts.results import CUTOFFS, MEASURES, MetricKey
from beirx.data.records import Qrels
from beirx.evaluate.runs import Run, drop_identical_ids, ranked

log = logging.getLogger(__name__)

DEFAULT_K = CUTOFFS

_PYTREC_FAMILIES = {"ndcg_cut": "NDCG", "map_cut": "MAP", "recall": "Recall", "P": "P"}  # trec_eval's -> ours


@dataclass
class Evaluation:
    """Mean metrics (``{"NDCG@10": 0.67, ...}``) and per-query values (``{qid: {metric: value}}``)."""

    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    num_queries: int
    missing_queries: list[str] = field(default_factory=list)


def evaluate(qrels: Qrels, run: Run, k_values=DEFAULT_K, ignore_identical_ids: bool = False) -> Evaluation:
    """Score ``run`` against ``qrels`` at every cut-off in ``k_values``."""
    import pytrec_eval

    k_values = sorted(set(int(k) for k in k_values))
    if ignore_identical_ids:
        run = drop_identical_ids(run)
        self_relevant = [qid for qid, docs in qrels.items() if docs.get(qid, 0) > 0]
        if self_relevant:
            log.warning("ignore_identical_ids removes %d documents judged relevant to the query with the same ID "
                        "(e.g. %s): the IDs of queries and documents may collide by accident", len(self_relevant),
                        self_relevant[0])
    judged = {qid: docs for qid, docs in qrels.items() if any(rel > 0 for rel in docs.values())}
    missing = sorted(qid for qid in judged if not run.get(qid))
    if missing:
        log.warning("%d judged queries have no retrieved documents and score 0 (e.g. %s)", len(missing), missing[0])
    scored_run = {qid: docs for qid, docs in run.items() if qid in judged and docs}

    # One evaluator for every measure (recip_rank included): the run is converted for trec_eval once.
    measures = {f"{family}.{','.join(map(str, k_values))}" for family in _PYTREC_FAMILIES} | {"recip_rank"}
    per_query: dict[str, dict[str, float]] = {qid: {} for qid in judged}
    raw = pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(scored_run)
    for qid, values in raw.items():
        for family, label in _PYTREC_FAMILIES.items():
            for k in k_values:
                per_query[qid][str(MetricKey(label, k))] = values[f"{family}_{k}"]

    # MRR@k from one full-run recip_rank: the first relevant document sits at rank 1/rr, so MRR@k is rr
    # when that rank is within k and 0 otherwise (identical to recip_rank on the run cut at k).
    for qid, values in raw.items():
        first_rank = round(1 / values["recip_rank"]) if values["recip_rank"] > 0 else None
        for k in k_values:
            in_cut = first_rank is not None and first_rank <= k
            per_query[qid][str(MetricKey("MRR", k))] = values["recip_rank"] if in_cut else 0.0

    annotated = {did for docs in qrels.values() for did in docs}
    for qid, docs in scored_run.items():
        order = [did for did, _ in ranked(docs)]
        relevant = {did for did, rel in judged[qid].items() if rel > 0}
        for k in k_values:
            top = order[:k]
            per_query[qid][str(MetricKey("R_cap", k))] = sum(d in relevant for d in top) / min(k, len(relevant))
            per_query[qid][str(MetricKey("Hole", k))] = sum(d not in annotated for d in top) / k

    names = [str(MetricKey(measure, k)) for measure in MEASURES for k in k_values]
    for qid in missing:
        per_query[qid] = dict.fromkeys(names, 0.0)
    n = len(judged)
    metrics = {name: (sum(per_query[q].get(name, 0.0) for q in judged) / n if n else 0.0) for name in names}
    return Evaluation(metrics=metrics, per_query=per_query, num_queries=n, missing_queries=missing)
