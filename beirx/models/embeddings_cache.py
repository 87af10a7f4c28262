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
lock) while checking and building, so parallel jobs sharing one cache encode a corpus once. The partial folder also records how many rows (in
length-sorted order) are done, flushed every few batches: an interrupted encoding resumes where it
stopped instead of starting over.

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

from beirx.atomic import write_json
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


class EmbeddingCache:
    """One cache entry (see the module docstring); ``label`` is a readable prefix, ``key`` the hash."""

    def __init__(self, root: Path, label: str, key: str):
        self.root = Path(root)
        self.folder = self.root / f"{label}-{key}"
        self.partial = self.root / f".{label}-{key}.partial"
        self.lock = self.root / f".{label}-{key}.lock"

    def exists(self) -> bool:
        """True for a complete, undamaged entry; a damaged one is reported and removed (call with the lock held)."""
        if not self.folder.exists():
            return False
        problem = self.problem()
        if problem is None:
            return True
        from beirx.cache_integrity import report_damaged

        report_damaged("embedding cache", self.folder, problem)
        shutil.rmtree(self.folder, ignore_errors=True)
        return False

    def problem(self) -> str | None:
        """What is wrong with the entry (missing marker, changed files, wrong shape or ID count), or None."""
        from beirx.cache_integrity import verify

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
        progress_path = self.partial / "progress.json"
        matrix_path = self.partial / "embeddings.npy"
        start = 0
        if progress_path.is_file() and matrix_path.is_file():
            progress = json.loads(progress_path.read_text(encoding="utf-8"))
            if progress.get("num_docs") == len(texts) and progress.get("order") == order_digest(order):
                start = int(progress["done"])
                log.info("resuming encoding at %d/%d documents from %s", start, len(texts), self.partial)
        if start:
            matrix = np.lib.format.open_memmap(matrix_path, mode="r+")
        else:
            shutil.rmtree(self.partial, ignore_errors=True)
            self.partial.mkdir(parents=True)
            matrix = np.lib.format.open_memmap(matrix_path, mode="w+", dtype=np.float32, shape=(len(texts), dim))

        def checkpoint(done: int) -> None:
            matrix.flush()
            write_json(progress_path, {"done": done, "num_docs": len(texts), "order": order_digest(order)})

        encode_into(matrix, texts, encode, batch_size, order, start=start,
                    on_progress=checkpoint, show_progress=show_progress, desc=f"encode {meta.get('model', '')}")
        matrix.flush()
        (self.partial / "doc_ids.json").write_text(json.dumps(doc_ids, ensure_ascii=False), encoding="utf-8")
        progress_path.unlink()
        from beirx.atomic import publish_dir
        from beirx.cache_integrity import seal

        seal(self.partial, "integrity.json", {"num_docs": len(doc_ids), "dim": int(dim)})
        write_json(self.partial / "meta.json", meta)  # last: marks the entry complete
        publish_dir(self.partial, self.folder)
        log.info("cached %d embeddings in %s", len(doc_ids), self.folder)
        return self.load()
