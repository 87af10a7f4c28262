"""A bm25s index built from streamed documents in compact integer arrays (bounded memory).

Why: bm25s's ``BM25.index`` wants every document's token list at once -- Python lists of str, about
53 bytes per token, 3.2 GB for 1M documents of 60 tokens. Here each analysed document is reduced at
once to its (term id, term frequency) pairs, appended as int32 to two byte buffers (8 bytes per
distinct term of a document), and the token list is dropped. The score matrix is then built in
blocks of term ids, so no temporary grows with the corpus beyond the final matrix itself.

The scores are bm25s's ``method="lucene"`` formula with the same float32/float64 operations in the same
order as ``bm25s.scoring``: ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` in float64 then float32,
``score = float32(idf * tf / (k1 * ((1 - b) + b * dl / avgdl) + tf))`` (Robertson & Zaragoza 2009,
Lucene's BM25), stored column-wise (CSC, one column per term, documents ascending) exactly as
``BM25.index`` stores them, so search, save and load are bm25s's own. ``dl`` is the length Lucene scores
with (its one-byte norm decoded, :mod:`length_norms`) unless ``length_norm="exact"``, which gives
bm25s's own numbers bit for bit; ``avgdl`` is the exact mean either way, as in Lucene.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter

import numpy as np

from beirx.evaluate.retrievers.length_norms import lucene_lengths
from beirx.speedups import native

_BLOCK_PAIRS = 4_000_000  # (document, term) pairs handled per block when building the score matrix


def _count_terms_python(terms: list[str], vocab: dict[str, int], ids: bytearray, tfs: bytearray) -> int:
    """Pure-Python twin of ``beirx._speedups.count_terms``: new terms get the next id in order of first
    occurrence; the document's distinct (id, tf) pairs are appended as native int32."""
    counts = Counter(terms)  # distinct terms in order of first occurrence
    for term in counts:
        if term not in vocab:
            vocab[term] = len(vocab)
    ids += array("i", [vocab[t] for t in counts]).tobytes()
    tfs += array("i", counts.values()).tobytes()
    return len(counts)


class PostingsBuilder:
    """Collects documents' term frequencies; :meth:`to_bm25s` turns them into a bm25s index."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self._ids = bytearray()
        self._tfs = bytearray()
        self._pairs = array("q")  # distinct terms per document
        self._lengths = array("q")  # tokens per document
        self.positions = array("q")  # corpus position of each document
        self._count = native.count_terms if native is not None else _count_terms_python

    @property
    def num_docs(self) -> int:
        return len(self._lengths)

    def add(self, position: int, terms: list[str]) -> None:
        """Add one document's terms; documents without terms are left out (Lucene counts a field's N and
        avgdl only over the documents that have it)."""
        if not terms:
            return
        self._pairs.append(self._count(terms, self.vocab, self._ids, self._tfs))
        self._lengths.append(len(terms))
        self.positions.append(position)

    def to_bm25s(self, bm25s, k1: float, b: float, length_norm: str = "lucene"):
        """A bm25s ``BM25`` object scoring as Lucene does; with ``length_norm="exact"``, the one
        ``BM25(k1, b, method="lucene").index(token_lists)`` would build."""
        ids = np.frombuffer(self._ids, dtype=np.intc)
        tfs = np.frombuffer(self._tfs, dtype=np.intc)
        lengths = np.frombuffer(self._lengths, dtype=np.int64)
        starts = np.zeros(len(self._pairs) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(self._pairs, dtype=np.int64), out=starts[1:])
        n_docs, n_vocab = len(lengths), len(self.vocab)
        avg_doc_len = lengths.mean()  # bm25s: np.array([len(doc) ...]).mean(); Lucene: sumTotalTermFreq / docCount
        if length_norm == "lucene":
            lengths = lucene_lengths(lengths)
        elif length_norm != "exact":
            raise ValueError(f"length_norm must be 'lucene' or 'exact', got {length_norm!r}")

        df = np.bincount(ids, minlength=n_vocab)
        idf = np.array([math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in df.tolist()], dtype=np.float32)
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        data = np.empty(len(ids), dtype=np.float32)
        indices = np.empty(len(ids), dtype=np.int32)
        for lo, hi in pair_blocks(indptr):
            in_block = np.flatnonzero((ids >= lo) & (ids < hi))
            pairs = in_block[np.argsort(ids[in_block], kind="stable")]  # by term, then document (ascending)
            docs = np.searchsorted(starts, pairs, side="right") - 1
            tf = tfs[pairs].astype(np.float32).astype(np.float64)
            tfc = tf / (k1 * ((1 - b) + b * lengths[docs].astype(np.float64) / avg_doc_len) + tf)
            out = slice(indptr[lo], indptr[hi])
            data[out] = idf[ids[pairs]].astype(np.float64) * tfc
            indices[out] = docs

        bm25 = bm25s.BM25(k1=k1, b=b, method="lucene", idf_method="lucene")
        bm25.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}
        vocab = dict(self.vocab)
        vocab[""] = n_vocab  # bm25s's create_empty_token
        bm25.vocab_dict = vocab
        bm25.unique_token_ids_set = set(vocab.values())
        bm25.nonoccurrence_array = None
        return bm25


def pair_blocks(indptr: np.ndarray, pairs: int = _BLOCK_PAIRS):
    """Consecutive ranges of ``indptr``'s rows (terms, or documents) holding about ``pairs`` pairs each."""
    n_vocab, lo = len(indptr) - 1, 0
    while lo < n_vocab:
        hi = int(np.searchsorted(indptr, indptr[lo] + pairs, side="right")) - 1
        hi = min(max(hi, lo + 1), n_vocab)
        yield lo, hi
        lo = hi
