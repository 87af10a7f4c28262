"""Bi-encoder reranking: the first stage's candidates re-ordered by a sentence-transformers bi-encoder's
similarity between the query's and each document's embeddings (retrieve and rerank with a dense model, as
sentence-transformers' retrieve-and-re-rank pipelines and hybrid BM25 + dense systems do).

The model, prompts, document text (BEIR's ``(title + " " + text).strip()``), maximum length and similarity are
the dense retriever's (:class:`beirx.evaluate.retrievers.dense.DenseRetriever`, which encodes here), so a
candidate gets the score dense retrieval would give it. A reranker that needs no training on the evaluated
data: it stays clean on a dataset whose train split a cross-encoder might have learned from. Pair scores go
through the rerankers' pair cache like every pairwise reranker's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from beirx.evaluate.rerankers.base import Pair, PairwiseReranker, common_options


class BiEncoderReranker(PairwiseReranker):
    name = "bi-encoder"
    model_kind = "bi-encoder"
    OPTIONS = common_options(batch_size=32)

    def __init__(self, model: str, *, lang: str = "en", batch_size: int = 32, max_length: int | None = None,
                 device: str | None = None, show_progress: bool = True, use_cache: bool = True,
                 revision: str | None = None, query_prompt: str | None = None, passage_prompt: str | None = None,
                 similarity: str | None = None):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        from beirx.evaluate.retrievers.dense import DenseRetriever
        from beirx.language_packs import get_pack

        self.encoder = DenseRetriever(get_pack(lang), model=model, revision=revision, query_prompt=query_prompt,
                                      passage_prompt=passage_prompt, similarity=similarity, max_length=max_length,
                                      batch_size=batch_size, device=device, show_progress=False, use_cache=use_cache)

    @property
    def device_name(self) -> str | None:
        return self.encoder.device_name

    def describe(self) -> dict[str, Any]:
        encoder = self.encoder.describe()
        kept = ("model", "revision", "implementation", "query_prompt", "passage_prompt", "similarity", "max_length",
                "precision", "document_text")
        return {"reranker": self.name, **{key: encoder[key] for key in kept}, "batch_size": self.encoder.batch_size}

    def score_pairs(self, pairs: list[Pair], progress: Callable[[int], None]) -> list[float]:
        from beirx.evaluate.retrievers.dense import document_text

        queries = list(dict.fromkeys(query.id for query, _ in pairs))
        docs = list(dict.fromkeys(doc.id for _, doc in pairs))
        texts = {query.id: query.text for query, _ in pairs}
        bodies = {doc.id: document_text(doc) for _, doc in pairs}
        query_vectors = self.encoder.encode([texts[q] for q in queries], self.encoder.query_prompt)
        doc_vectors = self.encoder.encode([bodies[d] for d in docs], self.encoder.passage_prompt)
        row = {q: i for i, q in enumerate(queries)}
        column = {d: i for i, d in enumerate(docs)}
        scores = [float(np.dot(query_vectors[row[query.id]], doc_vectors[column[doc.id]])) for query, doc in pairs]
        progress(len(pairs))
        return scores
