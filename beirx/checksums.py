"""Content checksums of file sets (datasets, model folders), memoised per (path, size, mtime).

A checksum covers each file's path relative to the root and its bytes, so renaming, adding or changing a
file changes it; it identifies exactly what a cached index, embedding matrix or result was computed from.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_MEMO: dict[tuple, str] = {}


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
