"""Exact top-k inner-product search over an embedding matrix of any size, in bounded memory.

The corpus matrix (usually a read-only ``numpy.memmap``) is walked in row chunks; for each block of
queries only one ``queries x chunk`` score matrix exists at a time, and a running top-k per query is
merged with each chunk's top-k (``argpartition``, then a sort of at most ``2k`` candidates). Peak memory
is therefore ``O(query_block x chunk + query_block x k)`` whatever the corpus size (about three times
``max_score_bytes``: the float32 scores plus argpartition's int64 indices), and the result is identical to
scoring every document at once (brute force).

Ties follow the evaluation order used everywhere in beirx (pytrec_eval/trec_eval): score descending,
then document ID descending. When a chunk's k-th score is tied, that query's chunk row is ranked exactly
with that key, so a tied document is never kept or dropped by accident of position.

:func:`faiss_search` is the optional faiss path (``pip install 'beirx[faiss]'``): exact as well, faster,
but it holds the whole matrix in memory.

Scores are inner products ``q . d``; cosine similarity is the inner product of L2-normalised vectors,
so callers normalise before storing (see :mod:`beirx.evaluate.retrievers.dense`).
"""

from __future__ import annotations

import numpy as np

DEFAULT_MAX_SCORE_BYTES = 64 * 1024 * 1024  # one float32 score block; argpartition's int64 indices double it
DEFAULT_QUERY_BLOCK = 1024


def id_tie_ranks(doc_ids: list[str]) -> np.ndarray:
    """Each document's position in ascending ID order: the larger, the earlier it ranks among equal scores."""
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    ranks = np.empty(len(doc_ids), dtype=np.int64)
    ranks[np.asarray(order, dtype=np.int64)] = np.arange(len(doc_ids), dtype=np.int64)
    return ranks


def _best(scores: np.ndarray, ties: np.ndarray, k: int) -> np.ndarray:
    """Column indices of each row's top ``k`` by (score, tie rank) descending, in that order."""
    order = np.lexsort((ties, scores), axis=-1)[:, ::-1]
    return order[:, :k]


def _chunk_candidates(scores: np.ndarray, ties: np.ndarray, k: int) -> np.ndarray:
    """Per-row column indices of the chunk's top ``k`` (unordered), exact under ties."""
    n = scores.shape[1]
    if k >= n:
        return np.broadcast_to(np.arange(n), scores.shape).copy()
    # copy: a slice would keep the whole (rows x chunk) int64 index array alive into the next chunk
    picked = np.argpartition(scores, n - k, axis=1)[:, n - k:].copy()
    kth = np.take_along_axis(scores, picked, axis=1).min(axis=1)
    # A row whose k-th score also occurs outside the picked set has a tie at the cut: rank it exactly.
    tied_rows = np.flatnonzero((scores >= kth[:, None]).sum(axis=1) > k)
    for row in tied_rows:
        picked[row] = _best(scores[row:row + 1], ties[None, :], k)[0]
    return picked


def exact_search(queries: np.ndarray, corpus: np.ndarray, k: int, tie_ranks: np.ndarray,
                 chunk_rows: int | None = None, query_block: int = DEFAULT_QUERY_BLOCK,
                 max_score_bytes: int = DEFAULT_MAX_SCORE_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` corpus rows per query by inner product.

    Returns ``(indices, scores)``, each ``(num_queries, min(k, num_docs))``, best first. ``chunk_rows``
    defaults to as many rows as keep one ``query_block x chunk`` float32 score matrix within
    ``max_score_bytes``.
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    num_docs = corpus.shape[0]
    k = min(int(k), num_docs)
    nq = queries.shape[0]
    out_idx = np.zeros((nq, k), dtype=np.int64)
    out_scores = np.zeros((nq, k), dtype=np.float32)
    if k == 0 or nq == 0:
        return out_idx, out_scores
    query_block = max(1, min(query_block, nq))
    if chunk_rows is None:
        chunk_rows = max(k, max_score_bytes // (4 * query_block))
    chunk_rows = max(1, int(chunk_rows))

    for q0 in range(0, nq, query_block):
        q = queries[q0:q0 + query_block]
        best_idx = np.zeros((q.shape[0], 0), dtype=np.int64)
        best_scores = np.zeros((q.shape[0], 0), dtype=np.float32)
        for c0 in range(0, num_docs, chunk_rows):
            block = np.asarray(corpus[c0:c0 + chunk_rows], dtype=np.float32)
            scores = q @ block.T
            ties = tie_ranks[c0:c0 + block.shape[0]]
            picked = _chunk_candidates(scores, ties, k)
            cand_idx = np.concatenate([best_idx, picked + c0], axis=1)
            cand_scores = np.concatenate([best_scores, np.take_along_axis(scores, picked, axis=1)], axis=1)
            keep = _best(cand_scores, tie_ranks[cand_idx], k)
            best_idx = np.take_along_axis(cand_idx, keep, axis=1)
            best_scores = np.take_along_axis(cand_scores, keep, axis=1)
            del scores, block
        out_idx[q0:q0 + q.shape[0]] = best_idx
        out_scores[q0:q0 + q.shape[0]] = best_scores
    return out_idx, out_scores


def faiss_search(queries: np.ndarray, corpus: np.ndarray, k: int, tie_ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` by inner product with faiss's exact ``IndexFlatIP`` (SIMD/BLAS; the whole matrix in RAM).

    Same scores as :func:`exact_search` up to float32 rounding (~1e-6, which can swap near-ties); within
    the k returned, ties are re-ordered into the evaluation
    order, but which of several documents tied *at the cut* faiss keeps is faiss's choice (exact_search
    keeps the higher document IDs). Use it for speed when the corpus matrix fits in memory.
    """
    from beirx.errors import require

    faiss = require("faiss", "faiss", "faiss search")
    corpus = np.ascontiguousarray(corpus, dtype=np.float32)
    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(corpus)
    k = min(int(k), corpus.shape[0])
    scores, idx = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
    order = np.lexsort((tie_ranks[idx], scores), axis=-1)[:, ::-1]
    return np.take_along_axis(idx, order, axis=1).astype(np.int64), np.take_along_axis(scores, order, axis=1)
