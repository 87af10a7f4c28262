"""Atomic file writes: write a temp file in the target's folder, fsync, then ``os.replace``.

A reader (or a crash) therefore sees either the old complete file or the new complete one, never a
truncated mix; this is what lets a killed run be restarted without losing anything already written.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def current_umask() -> int:
    """The process umask (read by setting and restoring it; there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_writer(path: Path | str, gzip_: bool = False, binary: bool = False) -> Iterator[IO]:
    """Yield a file handle whose content replaces ``path`` only if the block completes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())  # as open() would create it, not mkstemp's 0600
        with os.fdopen(fd, "wb") as raw:
            if gzip_:
                # mtime=0 keeps gzip output byte-identical across runs.
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
                    yield gz if binary else io.TextIOWrapper(gz, encoding="utf-8", newline="\n", write_through=True)
            elif binary:
                yield raw
            else:
                text = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
                yield text
                text.flush()
                text.detach()
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path | str, obj: Any) -> None:
    """Write pretty JSON atomically (UTF-8, keys in insertion order, trailing newline)."""
    with atomic_writer(path) as fh:
        json.dump(obj, fh, ensure_ascii=False, indent=2)
        fh.write("\n")


@contextlib.contextmanager
def atomic_dir(target: Path | str) -> Iterator[Path]:
    """Yield a temp folder beside ``target``; when the block completes it replaces ``target`` whole.

    A crash or error leaves ``target`` as it was (and removes the temp folder), so a half-built index,
    export or extraction is never mistaken for a complete one.
    """
    import shutil

    target = Path(target)
    tmp = sibling_temp_dir(target)
    try:
        yield tmp
        publish_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def sibling_temp_dir(target: Path, suffix: str = ".tmp") -> Path:
    """A new hidden folder beside ``target`` (same file system, so a rename publishes it), with the
    permissions mkdir() would give under the umask, not mkdtemp's 0700."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent))
    os.chmod(tmp, 0o777 & ~current_umask())
    return tmp


def publish_dir(tmp: Path, target: Path) -> None:
    """Move ``tmp`` to ``target``, replacing it; safe when several processes publish the same target.

    An existing ``target`` is first renamed to a unique trash name (atomic, so two processes never delete
    the same folder under each other), then ``tmp`` takes its place. If another process published in the
    meantime, its folder is moved aside the same way and this process retries.
    """
    import shutil

    for _ in range(20):
        if target.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            try:
                os.replace(target, trash)
            except FileNotFoundError:  # another process moved it first
                pass
            except OSError:  # trash not empty or similar: fall through and retry
                pass
            shutil.rmtree(trash, ignore_errors=True)
        try:
            os.replace(tmp, target)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
    raise OSError(errno.EEXIST, "could not publish the folder: other processes keep replacing it", str(target))
