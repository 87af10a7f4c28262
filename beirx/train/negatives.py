"""Hard negatives mined with the language pack's BM25: the top-ranked documents that are not judged positive.

BM25 negatives are what DPR (Karpukhin et al., 2020) and BEIR's bi-encoder training use: documents that
share the query's words but are not relevant make in-batch contrastive training (and a binary reranker)
learn more than random ones. Mining uses :class:`beirx.evaluate.retrievers.bm25.BM25Retriever` with the
language's analyzer, so a Polish dataset is mined with Polish stemming, and its cached index is the one
``beirx eval`` uses. A document judged relevant (score > 0) to the query in ANY split is never a negative;
the ``n`` best-ranked remaining documents are taken (deterministic: BM25's order, ties by document ID).
"""

from __future__ import annotations

import logging
from typing import Any

from beirx.data.dataset import BeirDataset
from beirx.evaluate.retrievers.bm25 import BM25Retriever
from beirx.language_packs import LanguagePack
from beirx.progress import progress

log = logging.getLogger(__name__)


class BM25Miner:
    """``miner = BM25Miner(dataset, pack); miner.negatives(text, exclude, n)``; ``describe()`` for the card."""

    def __init__(self, dataset: BeirDataset, pack: LanguagePack, show_progress: bool = True):
        self.retriever = BM25Retriever(pack, show_progress=show_progress)
        self.retriever.index(dataset)
        self.show_progress = show_progress

    def describe(self) -> dict[str, Any]:
        return {"miner": "bm25", **self.retriever.describe(), "excludes": "documents judged > 0 in any split",
                "choice": "top-ranked"}

    def negatives(self, query_text: str, exclude: set[str], n: int) -> list[str]:
        """The ``n`` best BM25 documents for ``query_text`` outside ``exclude`` (fewer if fewer match)."""
        scores = self.retriever.score_all(query_text)
        if scores is None:
            return []
        ranked = self.retriever.ranked(scores, n + len(exclude))
        return [doc_id for doc_id in ranked if doc_id not in exclude][:n]

    def mine(self, queries: dict[str, str], positives: dict[str, set[str]], n: int) -> dict[str, list[str]]:
        """``{query_id: negatives}`` for every query (each query is searched once)."""
        return {qid: self.negatives(text, positives.get(qid, set()), n)
                for qid, text in progress(queries.items(), desc="mine BM25 negatives", unit="q",
                                          enabled=self.show_progress)}
