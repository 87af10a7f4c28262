"""Corpus embeddings on disk: encoded once per (model, revision, prompt, max length, corpus), then memory-mapped.

Layout of one entry, ``$BEIRX_HOME/embeddings/<label>-<key>/``:

- ``embeddings.npy``: ``(num_docs, dim)`` float32 in corpus order, opened read-only with ``mmap_mode="r"``
  so a corpus larger than RAM is searched without loading it;
- ``doc_ids.json``: the document IDs, row by row;
- ``integrity.json``: row and column counts, sizes and checksums (sampled for a large matrix) of both
  files, verified before the entry is used (:mod:`beirx.cache_integrity`); a damaged entry is rebuilt;
- ``meta.json``: everything in the cache key (model, revision, prompt, ...) for humans; written last.

Encoding writes into ``.<label>-<key>.partial/`` and renames the folder when the last row is written, so a
complete-looking entry is always complete. Callers hold :attr:`EmbeddingCache.lock` (an advisory file
lock) while checking and building, so parallel jobs sharing one cache encode a corpus once. The matrix's disk
space is reserved when it is created (:func:`beirx.atomic.reserve`), so a full disk is a clear error, not a
SIGBUS in the middle of the memory-mapped writes. Every few batches the rows written so far are flushed and
then recorded, with their checksum, in the partial folder's progress journal
(:class:`beirx.cache_integrity.ProgressJournal`): an interrupted encoding resumes after the last chunk whose
rows still match their checksum, so a progress record that claims rows the matrix does not hold is never
sealed into a wrong entry.

Batching is length-sorted (longest first, by the caller's length measure; beirx uses token counts): similar
lengths share a batch, so little compute goes to padding, and an out-of-memory batch shows up at the start
rather than hours in.

Dense retrieval (document embeddings) and translation quality (embeddings of source and translated texts)
both use it, so it belongs to the shared :mod:`beirx.models` layer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from beirx.atomic import atomic_writer, publish_dir, reserve, write_json
from beirx.cache_integrity import CacheEntry, ProgressJournal, digest_bytes, seal, verify
from beirx.progress import progress

log = logging.getLogger(__name__)

def length_order(lengths: Sequence[int]) -> np.ndarray:
    """Encoding order: longest first; equal lengths keep corpus order (stable)."""
    return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")


def order_digest(order: np.ndarray) -> str:
    """Identifies an encoding order, so a resumed encoding continues the very same sequence of batches."""
    return hashlib.sha256(np.ascontiguousarray(order, dtype=np.int64).tobytes()).hexdigest()[:16]


def encode_into(out: np.ndarray, texts: Sequence[str], encode: Callable[[list[str]], np.ndarray], batch_size: int,
                order: np.ndarray, start: int = 0, on_progress: Callable[[int], None] | None = None,
                checkpoint_batches: int = 32, show_progress: bool = True, desc: str = "encode") -> None:
    """Fill ``out[i]`` with the embedding of ``texts[i]``, batching in ``order`` from position ``start``.

    ``on_progress(done)`` is called every ``checkpoint_batches`` batches and at the end, after the rows
    written so far are in ``out`` (the caller flushes and records ``done``).
    """
    total = len(texts)
    # Dense encoding takes minutes to hours: in a log (stderr not a terminal) it reports periodic lines
    # even when bars are off, so a job never sits silent.
    bar = progress(total=total, initial=start, desc=desc, unit="doc", enabled=show_progress)
    batches = 0
    with bar:
        for pos in range(start, total, batch_size):
            rows = order[pos:pos + batch_size]
            out[rows] = encode([texts[i] for i in rows])
            bar.update(len(rows))
            batches += 1
            if on_progress and (batches % checkpoint_batches == 0 or pos + batch_size >= total):
                on_progress(min(pos + batch_size, total))


class EmbeddingCache(CacheEntry):
    """One cache entry of embeddings (see the module docstring)."""

    what = "embedding cache"

    def problem(self) -> str | None:
        """What is wrong with the entry (missing marker, changed files, wrong shape or ID count), or None."""
        if not (self.folder / "meta.json").is_file():
            return "meta.json (the completion marker) is missing"
        problem = verify(self.folder, "integrity.json")
        if problem:
            return problem
        integrity = json.loads((self.folder / "integrity.json").read_text(encoding="utf-8"))
        try:
            matrix = np.load(self.folder / "embeddings.npy", mmap_mode="r")
        except (OSError, ValueError) as exc:
            return f"embeddings.npy is unreadable ({exc})"
        if list(matrix.shape) != [integrity.get("num_docs"), integrity.get("dim")]:
            return f"embeddings.npy has shape {matrix.shape}, expected ({integrity.get('num_docs')}, {integrity.get('dim')})"
        return None

    def load(self) -> tuple[np.ndarray, list[str]]:
        matrix = np.load(self.folder / "embeddings.npy", mmap_mode="r")
        doc_ids = json.loads((self.folder / "doc_ids.json").read_text(encoding="utf-8"))
        return matrix, doc_ids

    def build(self, doc_ids: list[str], texts: Sequence[str], encode: Callable[[list[str]], np.ndarray], dim: int,
              batch_size: int, meta: dict[str, Any], order: np.ndarray,
              show_progress: bool = True) -> tuple[np.ndarray, list[str]]:
        """Encode in ``order`` (resuming a partial entry if one exists), publish the entry, return it memory-mapped."""
        self.root.mkdir(parents=True, exist_ok=True)
        matrix_path = self.partial / "embeddings.npy"
        journal = ProgressJournal(self.partial / PROGRESS,
                                  {"num_docs": len(texts), "dim": int(dim), "order": order_digest(order)})
        matrix, start = self._resumable(matrix_path, journal, order, (len(texts), int(dim)))
        if matrix is None:
            shutil.rmtree(self.partial, ignore_errors=True)
            self.partial.mkdir(parents=True)
            matrix = np.lib.format.open_memmap(matrix_path, mode="w+", dtype=np.float32, shape=(len(texts), dim))
            reserve(matrix_path)  # a full disk fails here, not as a SIGBUS in the mapped writes
            journal.begin()

        def checkpoint(done: int) -> None:
            journal.commit(journal.done, done, rows_digest(matrix, order[journal.done:done]), sync=matrix.flush)

        encode_into(matrix, texts, encode, batch_size, order, start=start,
                    on_progress=checkpoint, show_progress=show_progress, desc=f"encode {meta.get('model', '')}")
        matrix.flush()
        with atomic_writer(self.partial / "doc_ids.json") as fh:
            json.dump(doc_ids, fh, ensure_ascii=False)
        journal.path.unlink()
        seal(self.partial, "integrity.json", {"num_docs": len(doc_ids), "dim": int(dim)})
        write_json(self.partial / "meta.json", meta)  # last: marks the entry complete
        publish_dir(self.partial, self.folder)
        log.info("cached %d embeddings in %s", len(doc_ids), self.folder)
        return self.load()

    def _resumable(self, matrix_path: Path, journal: ProgressJournal, order: np.ndarray,
                   shape: tuple[int, int]) -> tuple[np.ndarray | None, int]:
        """The partial matrix and the number of rows (in ``order``) whose checksums verify, or ``(None, 0)``."""
        if not (matrix_path.is_file() and journal.path.is_file()):
            return None, 0
        try:
            matrix = np.lib.format.open_memmap(matrix_path, mode="r+")
        except (OSError, ValueError) as exc:
            log.warning("partial embeddings at %s are unreadable (%s); encoding from the start", self.partial, exc)
            return None, 0
        if matrix.shape != shape or matrix.dtype != np.float32:
            return None, 0
        start = journal.resume(lambda a, b: rows_digest(matrix, order[a:b]), "partial embedding cache")
        if not start:
            return None, 0
        reserve(matrix_path)  # a matrix left sparse by an older beirx gets its space now
        log.info("resuming encoding at %d/%d documents from %s (their checksums verified)", start, shape[0],
                 self.partial)
        return matrix, start


PROGRESS = "progress.jsonl"


def rows_digest(matrix: np.ndarray, rows: np.ndarray) -> str:
    """Checksum of ``matrix[rows]`` (rows in encoding order): what a progress record claims was written."""
    return digest_bytes(np.ascontiguousarray(matrix[np.sort(rows)]))
