"""Validation on a held-out split during training (``--eval-split dev``): nDCG@10 every ``--eval-steps``.

Encoding a whole corpus at every evaluation would cost as much as a ``beirx eval`` (MS MARCO: 8.8M
passages), so validation ranks a pool instead: for each query of the split, its judged positives plus the
``--eval-candidates`` best BM25 documents that are not judged positive (the same miner and analyzer as the
hard negatives, :mod:`beirx.train.negatives`). BM25's top documents are the hard part of the corpus, so the
pool tracks progress on what matters, in time that grows with the split, not the corpus. The bi-encoder
ranks the union of all pools with sentence-transformers' ``InformationRetrievalEvaluator`` (with the model's
query/passage prompts); the cross-encoder reranks each query's pool with ``CrossEncoderRerankingEvaluator``.
Both report nDCG@10 (Järvelin & Kekäläinen, 2002) as their main score, with texts truncated at the training
``--max-seq-length``. The figures are a training signal, not a benchmark number: the benchmark is
``beirx eval`` on the full corpus.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.train.examples import Example, document_texts, judged_positives
from beirx.train.negatives import BM25Miner

log = logging.getLogger(__name__)

NAME = "validation"  # prefix of the trainer's logged metrics: eval_validation_...
SIMILARITY = re.compile(r"^(cosine|dot|euclidean|manhattan)_")  # the bi-encoder evaluator's score-function prefix


@dataclass
class ValidationPool:
    """Queries of the split, their positives and BM25 candidates (IDs), and the texts of every pooled document."""

    split: str
    queries: dict[str, str]
    positives: dict[str, set[str]]
    candidates: dict[str, list[str]]
    docs: dict[str, str]

    def describe(self, per_query: int) -> dict[str, Any]:
        return {"split": self.split, "num_queries": len(self.queries), "pool_documents": len(self.docs),
                "bm25_candidates_per_query": per_query, "main_score": "nDCG@10 on the pool"}


def build_pool(dataset: BeirDataset, split: str, train_split: str, miner: BM25Miner, per_query: int,
               all_positives: dict[str, set[str]]) -> ValidationPool:
    """The pool of ``split`` (``all_positives``: never a candidate); warns about queries shared with training."""
    queries, qrels = dataset.queries_for_split(split)
    positives = {qid: docs for qid, docs in judged_positives(qrels).items() if qid in queries}
    if not positives:
        raise BeirxError(f"{dataset.qrels_path(split)}: no positive judgement with a query text; nothing to "
                         "validate on")
    shared = positives.keys() & judged_positives(dataset.qrels(train_split)).keys()
    if shared:
        log.warning("%d of %d %s queries are also in %s: validation overstates generalisation", len(shared),
                    len(positives), split, train_split)
    texts = {qid: queries[qid].text for qid in positives}
    candidates = miner.mine(texts, all_positives, per_query)
    pooled = [Example(qid, did, tuple(candidates[qid])) for qid, docs in positives.items() for did in sorted(docs)]
    docs = document_texts(dataset, pooled)
    log.info("validation on %s: %d queries, a pool of %d documents", split, len(texts), len(docs))
    return ValidationPool(split, texts, positives, candidates, docs)


def bi_encoder_evaluator(pool: ValidationPool, prompts: dict[str, str], batch_size: int):
    """Dense retrieval over the union of the pools, the model's own prompts on queries and passages."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    return InformationRetrievalEvaluator(
        pool.queries, pool.docs, pool.positives, ndcg_at_k=[10], mrr_at_k=[10], accuracy_at_k=[1, 10],
        precision_recall_at_k=[10, 100], map_at_k=[100], batch_size=batch_size, name=NAME, write_csv=False,
        query_prompt=prompts.get("query") or None, corpus_prompt=prompts.get("passage") or None)


def cross_encoder_evaluator(pool: ValidationPool, batch_size: int):
    """Each query's positives and BM25 candidates, reranked. A query without candidates is left out: its
    positives alone rank perfectly whatever the model does."""
    from sentence_transformers.cross_encoder.evaluation import CrossEncoderRerankingEvaluator

    samples = [{"query": pool.queries[qid], "positive": [pool.docs[d] for d in sorted(docs)],
                "negative": [pool.docs[d] for d in pool.candidates[qid]]}
               for qid, docs in pool.positives.items() if pool.candidates[qid]]
    if len(samples) < len(pool.positives):
        log.info("reranking validation leaves out %d queries without BM25 candidates",
                 len(pool.positives) - len(samples))
    if not samples:
        raise BeirxError(f"--eval-split {pool.split}: no query has a BM25 candidate to rerank")
    return CrossEncoderRerankingEvaluator(samples, at_k=10, name=NAME, batch_size=batch_size, write_csv=False)


def history(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The validation entries of the trainer's log: ``[{"step": s, "ndcg@10": x, ...}]`` in step order."""
    prefix = f"eval_{NAME}_"
    found = {}
    for entry in log_history:
        scores = {SIMILARITY.sub("", key[len(prefix):]): round(float(value), 6) for key, value in entry.items()
                  if key.startswith(prefix)}
        if scores:
            found[entry["step"]] = {"step": entry["step"], **scores}
    return [found[step] for step in sorted(found)]
