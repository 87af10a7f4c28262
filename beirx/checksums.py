"""Content checksums of file sets (datasets, model folders), memoised per (path, size, mtime), and cache keys.

A checksum covers each file's path relative to the root and its bytes, so renaming, adding or changing a
file changes it; it identifies exactly what a cached index, embedding matrix or result was computed from.
:func:`cache_key` names on-disk caches after everything that determines their content; every stage uses
it (BM25 indexes, embeddings, run and score caches), so it lives here rather than in one stage.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

_MEMO: dict[tuple, str] = {}
_CORPUS_SUMS: dict[tuple, str] = {}


def cache_key(*parts: Any) -> str:
    """A short stable hash of JSON-able parts, used to name on-disk caches."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def corpus_checksum(path: Path) -> str:
    """``sha256:<hex>`` of the corpus file alone (queries and qrels do not change document embeddings)."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _CORPUS_SUMS:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _CORPUS_SUMS[key] = "sha256:" + h.hexdigest()
    return _CORPUS_SUMS[key]


def files_checksum(root: Path, files: list[Path]) -> str:
    """``sha256:<hex>`` over ``files`` (paths relative to ``root``, in the given order) and their bytes."""
    key = (str(Path(root).resolve()),) + tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if key not in _MEMO:
        h = hashlib.sha256()
        for path in files:
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
            h.update(b"\0")
        _MEMO[key] = "sha256:" + h.hexdigest()
    return _MEMO[key]
