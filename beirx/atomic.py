"""Atomic file writes: write a temp file in the target's folder, fsync, then ``os.replace``.

A reader (or a crash) therefore sees either the old complete file or the new complete one, never a
truncated mix; this is what lets a killed run be restarted without losing anything already written.
Folders are published whole the same way (:func:`atomic_dir`, :func:`publish_dir`: an atomic exchange where the
system has one). A write that fails for lack of space, or on a read-only file system, raises ``OSError``
naming the file (the error boundary turns it into "the disk is full ... rerun to resume"); a file written
through a memory map has its space reserved first (:func:`reserve`), since a full disk there is not an error
but a SIGBUS that kills the process.
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


# errno values of a write that failed because of where it writes (not what): the error is about that file
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


@contextlib.contextmanager
def naming(path: Path | str) -> Iterator[None]:
    """Inside the block, a write error without a file name (``write()`` on a full disk has none) names ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno in WRITE_ERRNOS:
            exc.filename = str(path)
        raise


@contextlib.contextmanager
def atomic_writer(path: Path | str, gzip_: bool = False, binary: bool = False) -> Iterator[IO]:
    """Yield a file handle whose content replaces ``path`` only if the block completes (``path`` a symbolic link:
    the file it points to, so the link stays)."""
    path = _followed(path)
    with naming(path):
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
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None and exc.errno in WRITE_ERRNOS:
            exc.filename = str(path)
        raise


def reserve(path: Path | str, size: int | None = None) -> None:
    """Allocate the disk blocks of ``path`` up to ``size`` bytes (default: its current size) now.

    A file written through a memory map (``numpy.memmap``) gets its blocks only when a page is written back; if
    the disk is full by then, the kernel kills the process with SIGBUS, losing the run's state and its message.
    Reserved up front, a full disk is an ``OSError`` (ENOSPC) here, naming the file, before any work; blocks
    already written are left as they are (``posix_fallocate`` never changes data), so a resumed file can be
    reserved again.
    """
    path = Path(path)
    with naming(path), open(path, "r+b") as fh:
        size = os.fstat(fh.fileno()).st_size if size is None else size
        if size <= 0 or not hasattr(os, "posix_fallocate"):  # pragma: no cover - not POSIX
            return
        try:
            os.posix_fallocate(fh.fileno(), 0, size)
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system without it: writes stay unreserved
                return
            raise OSError(exc.errno, exc.strerror, str(path)) from None


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

    target = _followed(target)
    tmp = sibling_temp_dir(target)
    try:
        yield tmp
        publish_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def carry_over(old: Path | str, new: Path | str) -> None:
    """Hard-link into ``new`` every file of the folder ``old`` that ``new`` does not have (copies where links are
    impossible): what a rewrite of a folder does not produce itself (a report written there later) survives its
    :func:`atomic_dir` swap. Links cost no space and no time; the rewrite replaces its own files, never edits them."""
    import shutil

    old, new = Path(old), Path(new)
    for root, dirs, files in os.walk(old):
        dest = new / Path(root).relative_to(old)
        dirs[:] = [d for d in dirs if not os.path.lexists(dest / d) or (dest / d).is_dir()]
        for name in dirs:
            if os.path.islink(Path(root) / name):
                files.append(name)  # a link to a folder is carried as a link
            else:
                (dest / name).mkdir(exist_ok=True)
        dirs[:] = [d for d in dirs if not os.path.islink(Path(root) / d)]
        for name in files:
            if not os.path.lexists(dest / name):
                try:
                    os.link(Path(root) / name, dest / name, follow_symlinks=False)
                except OSError:
                    shutil.copy2(Path(root) / name, dest / name, follow_symlinks=False)


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

    A missing ``target`` is a plain rename. An existing one is swapped with ``tmp`` in one atomic step
    (``renameat2(RENAME_EXCHANGE)``, Linux), so a reader or a SIGKILL sees the old folder or the new one, never
    neither; the old one, now at ``tmp``, is then deleted. Where the system cannot swap, ``target`` is first
    renamed to a unique trash name (atomic, so two processes never delete the same folder under each other),
    then ``tmp`` takes its place. If another process published in the meantime, this one retries. A ``target``
    that is a symbolic link is published where it points, so the link stays.
    """
    import shutil

    target = _followed(target)
    for _ in range(20):
        try:
            os.replace(tmp, target)  # no target (or an empty one): a rename is atomic
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        swapped = _exchange(tmp, target)
        if swapped:
            shutil.rmtree(tmp, ignore_errors=True)  # the previous version
            return
        if swapped is None:  # the target vanished meanwhile: rename again
            continue
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


def _followed(target: Path | str) -> Path:
    """``target``, or where it points when it is a symbolic link (a write replaces the file or folder, not the
    link); a link that loops or leads nowhere is an ``OSError`` naming it."""
    target = Path(target)
    if not target.is_symlink():
        return target
    if not target.exists():
        from beirx.path_problems import link_problem

        raise OSError(errno.ENOENT, link_problem(target) or "broken symbolic link", str(target))
    return target.resolve()


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool | None:
    """Swap paths ``a`` and ``b`` atomically: True; False when the system cannot; None when one is gone."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # not glibc >= 2.28 (or not Linux)
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.ENOENT:
        return None
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))
