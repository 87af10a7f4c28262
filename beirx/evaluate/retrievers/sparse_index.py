"""An on-disk inverted index of learned sparse term weights (SPLADE), built from streamed document vectors.

Encoding (minutes to days) appends each document's sparse vector, in encoding order, to four flat files
of a ``.partial`` folder (corpus positions, term counts, term ids, weights); every few batches the files
are synced and then the chunk of documents just written is recorded, with the checksum of its bytes in the
four files, in the folder's progress journal (:class:`beirx.cache_integrity.ProgressJournal`). A killed
encoding resumes after the last chunk whose bytes still match their checksum (longer files are cut back to
it) instead of starting over, and a record that claims vectors the files do not hold is never built into an
index. Nothing of the corpus is held in memory.

The inverted index is then built in two streaming passes with bounded memory: term document frequencies
(``indptr``, as in the BM25 index's column layout, :mod:`beirx.evaluate.retrievers.bm25_index`), then the
postings, documents taken in corpus order in blocks of about :data:`BLOCK_PAIRS` (term, weight) pairs
(:func:`~beirx.evaluate.retrievers.bm25_index.pair_blocks`) and written into place. Each term's postings
are ``(document position, weight)`` with positions ascending, whatever the encoding order was.

Files of a finished entry: ``indptr.npy`` (int64, vocabulary + 1), ``docs.npy`` (int32 positions),
``weights.npy`` (float32), ``doc_ids.json`` and ``COMPLETE``, which :func:`beirx.cache_integrity.seal`
writes last with every file's size and checksum; a damaged entry is reported and rebuilt, never used. The
encoded vectors and their journal are deleted only once the entry is sealed, and a sealed ``.partial`` folder
is published as it is: a kill at any point after the encoding costs at most rebuilding the postings, never
encoding again.

Search is exact: a query's score for every document is ``sum_t q_t * d_t`` over the query's terms,
accumulated term by term into one float32 array (each term's postings touch each document at most once).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from beirx.atomic import atomic_writer, publish_dir, reserve
from beirx.cache_integrity import CacheEntry, ProgressJournal, digest_bytes, seal, verify
from beirx.errors import BeirxError
from beirx.evaluate.retrievers.bm25_index import pair_blocks
from beirx.models.embeddings_cache import encode_into, order_digest
from beirx.models.splade import SparseVector

log = logging.getLogger(__name__)

BLOCK_PAIRS = 4_000_000
_ROW_FILES = {"positions.bin": np.int64, "counts.bin": np.int32}  # one entry per encoded document
_PAIR_FILES = {"terms.bin": np.int32, "weights.bin": np.float32}  # one entry per (document, term) pair
MARKER = "COMPLETE"
PROGRESS = "progress.jsonl"


def _flat(path: Path, dtype) -> np.ndarray:
    """A flat binary file as a read-only array (memory-mapped; an empty file gives an empty array)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


class SparseRowsWriter:
    """Document vectors appended in encoding order; ``writer[rows] = vectors`` (as :func:`encode_into` fills
    an array), resuming after ``rows`` documents and ``pairs`` pairs (longer files are cut back)."""

    def __init__(self, folder: Path, rows: int = 0, pairs: int = 0):
        self.rows, self.pairs = rows, pairs
        self._files = {}
        for name, dtype in {**_ROW_FILES, **_PAIR_FILES}.items():
            fh = open(folder / name, "r+b" if (rows or pairs) else "wb")
            fh.truncate((rows if name in _ROW_FILES else pairs) * np.dtype(dtype).itemsize)
            fh.seek(0, os.SEEK_END)
            self._files[name] = fh

    def __setitem__(self, rows: np.ndarray, vectors: list[SparseVector]) -> None:
        if len(rows) != len(vectors):
            raise RuntimeError(f"the encoder returned {len(vectors)} vectors for {len(rows)} texts")
        counts = np.array([len(v.ids) for v in vectors], dtype=np.int32)
        write = {"positions.bin": np.asarray(rows, dtype=np.int64), "counts.bin": counts,
                 "terms.bin": np.concatenate([v.ids for v in vectors]).astype(np.int32, copy=False),
                 "weights.bin": np.concatenate([v.weights for v in vectors]).astype(np.float32, copy=False)}
        for name, values in write.items():
            self._files[name].write(values.tobytes())
        self.rows += len(rows)
        self.pairs += int(counts.sum())

    def flush(self) -> None:
        """Hand what was written to the operating system (readable from the files)."""
        for fh in self._files.values():
            fh.flush()

    def sync(self) -> None:
        """Make what was written durable (before the progress journal records it)."""
        for fh in self._files.values():
            fh.flush()
            os.fsync(fh.fileno())

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()


def chunk_digest(folder: Path, start: int, end: int) -> str:
    """Checksum of the bytes documents ``[start, end)`` (in encoding order) occupy in the four files of
    :class:`SparseRowsWriter`: what a progress record claims was written. Raises ``ValueError`` when the
    files are shorter than that."""
    counts = _flat(folder / "counts.bin", np.int32)
    if len(counts) < end or len(_flat(folder / "positions.bin", np.int64)) < end:
        raise ValueError(f"{folder}: fewer than {end} documents written")
    first = int(counts[:start].sum(dtype=np.int64))
    last = first + int(counts[start:end].sum(dtype=np.int64))
    parts = [_flat(folder / "positions.bin", np.int64)[start:end], counts[start:end]]
    for name, dtype in _PAIR_FILES.items():
        values = _flat(folder / name, dtype)
        if len(values) < last:
            raise ValueError(f"{folder / name}: fewer than {last} term weights written")
        parts.append(values[first:last])
    return digest_bytes(b"".join(np.ascontiguousarray(part).tobytes() for part in parts))


def build_inverted(folder: Path, num_docs: int, vocab_size: int, block_pairs: int = BLOCK_PAIRS) -> int:
    """Turn the document vectors in ``folder`` (written by :class:`SparseRowsWriter`) into the inverted
    index files in the same folder (the vectors stay: they are deleted once the entry is sealed); returns the
    number of postings."""
    positions = np.fromfile(folder / "positions.bin", dtype=np.int64)
    counts = np.fromfile(folder / "counts.bin", dtype=np.int32).astype(np.int64)
    terms, weights = _flat(folder / "terms.bin", np.int32), _flat(folder / "weights.bin", np.float32)
    if len(positions) != num_docs or len(counts) != num_docs or \
            not np.array_equal(np.bincount(positions, minlength=num_docs), np.ones(num_docs, dtype=np.int64)):
        raise RuntimeError(f"{folder}: the encoded vectors do not cover the {num_docs} documents once each")
    total = int(counts.sum())
    if len(terms) != total or len(weights) != total:
        raise RuntimeError(f"{folder}: {len(terms)} terms and {len(weights)} weights for {total} pairs")
    row_of = np.empty(num_docs, dtype=np.int64)
    row_of[positions] = np.arange(num_docs, dtype=np.int64)
    row_start = np.concatenate([[0], np.cumsum(counts)])
    lengths = counts[row_of]  # in corpus order
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)])

    df = np.zeros(vocab_size, dtype=np.int64)
    for start in range(0, total, block_pairs):
        found = np.bincount(terms[start:start + block_pairs], minlength=vocab_size)
        if len(found) > vocab_size:
            raise RuntimeError(f"{folder}: term id {len(found) - 1} is outside the vocabulary of {vocab_size}")
        df += found
    indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
    out_docs, out_weights = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
    if total:  # written through memory maps: their disk space is reserved first (a full disk is ENOSPC, not SIGBUS)
        out_docs = np.lib.format.open_memmap(folder / "docs.npy", mode="w+", dtype=np.int32, shape=(total,))
        out_weights = np.lib.format.open_memmap(folder / "weights.npy", mode="w+", dtype=np.float32, shape=(total,))
        reserve(folder / "docs.npy")
        reserve(folder / "weights.npy")
    fill = indptr[:-1].copy()
    for lo, hi in pair_blocks(doc_ptr, block_pairs):
        n = lengths[lo:hi]
        size = int(doc_ptr[hi] - doc_ptr[lo])
        if not size:
            continue
        rows = row_of[lo:hi]
        index = np.repeat(row_start[rows] - (doc_ptr[lo:hi] - doc_ptr[lo]), n) + np.arange(size)
        block_terms = np.asarray(terms[index])
        order = np.argsort(block_terms, kind="stable")  # by term; documents stay ascending within a term
        sorted_terms = block_terms[order]
        place = fill[sorted_terms] + (np.arange(size) - np.searchsorted(sorted_terms, sorted_terms, side="left"))
        out_docs[place] = np.repeat(np.arange(lo, hi, dtype=np.int32), n)[order]
        out_weights[place] = np.asarray(weights[index])[order]
        fill += np.bincount(block_terms, minlength=vocab_size)
    if total:
        out_docs.flush()
        out_weights.flush()
        del out_docs, out_weights
    else:
        np.save(folder / "docs.npy", out_docs)
        np.save(folder / "weights.npy", out_weights)
    np.save(folder / "indptr.npy", indptr)
    return total


class InvertedIndex:
    """The postings of a finished entry (memory-mapped) and the exact sparse dot product over them."""

    def __init__(self, folder: Path):
        self.indptr = np.load(folder / "indptr.npy")
        self.docs = np.load(folder / "docs.npy", mmap_mode="r")
        self.weights = np.load(folder / "weights.npy", mmap_mode="r")
        record = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        self.num_docs = int(record["num_docs"])
        self.vocab_size = len(self.indptr) - 1
        if self.indptr.ndim != 1 or self.indptr[-1] != len(self.docs) or len(self.docs) != len(self.weights) \
                or self.vocab_size != record.get("vocab_size"):
            raise ValueError(f"postings of {len(self.docs)} documents and {len(self.weights)} weights do not match "
                             f"indptr (ends at {self.indptr[-1]}, vocabulary {self.vocab_size})")

    def scores(self, query: SparseVector) -> np.ndarray:
        """``sum_t q_t * d_t`` for every document (float32, accumulated in the query's term order)."""
        out = np.zeros(self.num_docs, dtype=np.float32)
        for term, weight in zip(query.ids.tolist(), query.weights.tolist()):
            start, end = int(self.indptr[term]), int(self.indptr[term + 1])
            if end > start:
                out[self.docs[start:end]] += np.float32(weight) * self.weights[start:end]
        return out


class SparseIndexCache(CacheEntry):
    """One index entry: ``folder`` when complete, ``partial`` while encoding, ``lock`` held by its builder."""

    what = "SPLADE index"

    def problem(self) -> str | None:
        """What is wrong with the entry (missing marker, changed or missing files, inconsistent shapes), or None."""
        problem = verify(self.folder, MARKER)
        if problem is None:
            try:
                self.load()
            except (OSError, ValueError, KeyError) as exc:
                problem = f"cannot be loaded ({type(exc).__name__}: {exc})"
        return problem

    def load(self) -> tuple[InvertedIndex, list[str]]:
        index = InvertedIndex(self.folder)
        doc_ids = json.loads((self.folder / "doc_ids.json").read_text(encoding="utf-8"))
        if len(doc_ids) != index.num_docs:
            raise ValueError(f"doc_ids.json holds {len(doc_ids)} IDs for {index.num_docs} documents")
        return index, doc_ids

    def _resume_point(self, journal: ProgressJournal) -> tuple[int, int]:
        """Documents and (term, weight) pairs of the partial entry whose checksums verify: ``(0, 0)`` for none."""
        if not all((self.partial / name).is_file() for name in (*_ROW_FILES, *_PAIR_FILES)):
            return 0, 0
        done = journal.resume(lambda a, b: chunk_digest(self.partial, a, b), "partial SPLADE index")
        if not done:
            return 0, 0
        return done, int(_flat(self.partial / "counts.bin", np.int32)[:done].sum(dtype=np.int64))

    def build(self, doc_ids: list[str], texts: Sequence[str], encode: Callable[[list[str]], list[SparseVector]],
              vocab_size: int, batch_size: int, meta: dict[str, Any], order: np.ndarray, show_progress: bool = True,
              checkpoint_batches: int = 32) -> tuple[InvertedIndex, list[str]]:
        """Encode in ``order`` (resuming a partial entry), build the postings, seal and publish the entry."""
        self.root.mkdir(parents=True, exist_ok=True)
        if verify(self.partial, MARKER) is None:  # sealed by a build killed before it could publish
            log.info("publishing the complete SPLADE index left in %s", self.partial)
            return self._publish()
        journal = ProgressJournal(self.partial / PROGRESS, {"num_docs": len(texts), "order": order_digest(order),
                                                             "vocab_size": vocab_size})
        done, pairs = self._resume_point(journal)
        if not done:
            shutil.rmtree(self.partial, ignore_errors=True)
            self.partial.mkdir(parents=True)
            journal.begin()
        else:
            log.info("resuming SPLADE encoding at %d/%d documents from %s (their checksums verified)", done,
                     len(texts), self.partial)
        writer = SparseRowsWriter(self.partial, done, pairs)

        def checkpoint(end: int) -> None:
            if writer.rows != end:
                raise RuntimeError(f"{writer.rows} document vectors written for {end} documents encoded")
            writer.flush()
            journal.commit(journal.done, end, chunk_digest(self.partial, journal.done, end), sync=writer.sync)

        try:
            encode_into(writer, texts, encode, batch_size, order, start=done, on_progress=checkpoint,
                        checkpoint_batches=checkpoint_batches, show_progress=show_progress,
                        desc=f"encode {meta.get('model', '')}")
        finally:
            writer.close()
        postings = build_inverted(self.partial, len(doc_ids), vocab_size)
        with atomic_writer(self.partial / "doc_ids.json") as fh:
            json.dump(doc_ids, fh, ensure_ascii=False)
        encoded = (*_ROW_FILES, *_PAIR_FILES, PROGRESS)  # kept until the seal: a kill before it resumes from them
        seal(self.partial, MARKER, {**meta, "num_docs": len(doc_ids), "vocab_size": vocab_size, "postings": postings},
             exclude=encoded)
        log.info("indexed %d documents (%d postings) in %s", len(doc_ids), postings, self.folder)
        return self._publish()

    def _publish(self) -> tuple[InvertedIndex, list[str]]:
        """Delete the encoded vectors of a sealed ``.partial`` folder and publish it as the entry."""
        for name in (*_ROW_FILES, *_PAIR_FILES, PROGRESS):
            (self.partial / name).unlink(missing_ok=True)
        publish_dir(self.partial, self.folder)
        return self.load()


def check_vocabulary(index_vocab: int, query_vocab: int, what: str) -> None:
    if index_vocab != query_vocab:
        raise BeirxError(f"{what} has a vocabulary of {query_vocab} terms but the documents were encoded with "
                         f"{index_vocab}: a SPLADE query encoder must share the document encoder's vocabulary")
