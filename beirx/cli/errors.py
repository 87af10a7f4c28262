"""The CLI's one error boundary: expected failures become one paragraph and exit code 2.

Expected failures are what bad input, a damaged file, a full disk or a missing network produce
(``OSError``, decoding, gzip/zlib, JSON, SQLite, too deeply nested data, bad option values, a symbolic link
loop, a connection error of any HTTP client). Each is described with the file (and line) it concerns and what
to do; ``-v`` adds the traceback. Anything else is a bug and keeps its traceback. Every message passes through
:func:`beirx.redact.redact_text`.

A full disk is always named as such, with the free space left and "rerun to resume": never with advice to
delete a cache or the translation memory, which would throw away hours of work to fix what freeing space fixes.
"""

from __future__ import annotations

import errno
import json
import re
import shutil
import sqlite3
import zlib
from pathlib import Path

from beirx.errors import BeirxError
from beirx.network import is_network_error, reason
from beirx.path_problems import link_problem
from beirx.redact import redact_text


def expected_errors() -> tuple[type[BaseException], ...]:
    """Exception types the CLI reports without a traceback (plus network errors of any library and
    symbolic link loops, see :func:`is_expected`)."""
    types: list[type[BaseException]] = [BeirxError, OSError, UnicodeError, EOFError, zlib.error, ValueError,
                                        RecursionError, sqlite3.Error]
    try:
        import requests

        types.append(requests.RequestException)
    except ImportError:  # pragma: no cover
        pass
    return tuple(types)


def is_expected(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure to report in one paragraph rather than a bug to show with its traceback."""
    return isinstance(exc, expected_errors()) or is_network_error(exc) or _symlink_loop(exc) is not None


def _symlink_loop(exc: BaseException) -> str | None:
    """The path of pathlib's ``RuntimeError("Symlink loop from '...'")`` (Python < 3.13 raises it from resolve())."""
    if isinstance(exc, RuntimeError):
        match = re.match(r"Symlink loop from '(.*)'$", str(exc))
        if match:
            return match.group(1)
    return None


def _where(exc: BaseException) -> str:
    path = getattr(exc, "filename", None)
    return f"{path}: " if path else ""


def describe(exc: BaseException) -> str:
    """A one-paragraph message for an expected failure: what happened, where, what to do."""
    loop = _symlink_loop(exc)
    if isinstance(exc, BeirxError):
        text = str(exc)
    elif loop is not None:
        text = f"{link_problem(loop) or loop + ' is a symbolic link that loops back to itself'}; fix or remove the link"
    elif isinstance(exc, UnicodeDecodeError):
        text = (f"a file is not valid UTF-8 ({exc.reason} at byte {exc.start}); BEIR files must be UTF-8: "
                "re-encode it (e.g. iconv -t UTF-8)")
    elif isinstance(exc, json.JSONDecodeError):
        text = f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; fix or delete the file"
    elif isinstance(exc, (EOFError, zlib.error)) or type(exc).__name__ == "BadGzipFile":
        text = (f"{_where(exc)}compressed data is truncated or not gzip ({exc or type(exc).__name__}); "
                "download or write the file again")
    elif isinstance(exc, RecursionError):
        text = "the input is nested too deeply to read (a hostile or broken JSON file?); fix the file"
    elif isinstance(exc, sqlite3.Error):
        text = _sqlite(exc)
    elif is_network_error(exc):
        from beirx.data.download import OFFLINE_HINT
        from beirx.network import HUB_OFFLINE_HINT

        text = f"network error ({reason(exc)}: {exc}). {OFFLINE_HINT} {HUB_OFFLINE_HINT}"
    elif isinstance(exc, OSError):
        text = _os_error(exc)
    else:
        text = f"{exc}; check the option values and input files"
    return redact_text(text)


def _os_error(exc: OSError) -> str:
    path = exc.filename
    link = link_problem(path) if path else None
    if link:
        return f"{link}; fix or remove the link"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return disk_full(path)
    if exc.errno == errno.EROFS:
        return (f"{_where(exc)}read-only file system; write elsewhere (another --output, or $BEIRX_HOME for the "
                "caches): nothing already written was changed")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"{_where(exc)}permission denied; choose a folder you can write to, or fix its permissions"
    what = exc.strerror or str(exc)
    return f"{_where(exc)}{what}" + ("" if path else f" ({exc})") + \
        "; check the path, its permissions and free disk space"


def disk_full(path: str | None) -> str:
    """The message of a full disk: where, how much is free, and that a rerun resumes (nothing to delete)."""
    where = f" while writing {path}" if path else ""
    free = ""
    if path:
        folder = Path(path)
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        try:
            free = f"; {_size(shutil.disk_usage(folder).free)} free on that file system"
        except OSError:
            pass
    return (f"the disk is full{where} (no space left on device{free}). Free disk space, or point --output or "
            "$BEIRX_HOME at a larger disk, and rerun the same command: everything finished so far is kept and the "
            "run resumes where it stopped")


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover


def _sqlite(exc: sqlite3.Error) -> str:
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if code == sqlite3.SQLITE_FULL or "disk is full" in text:
        return disk_full(None)
    if code == sqlite3.SQLITE_CANTOPEN or "unable to open database file" in text:
        return (f"cannot open a database file ({text}): check that its folder exists and can be written to, "
                "and that no symbolic link in its path is broken")
    if code == sqlite3.SQLITE_READONLY or "readonly database" in text:
        return f"a database is on a read-only file system or not writable ({text}); write elsewhere"
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in text:
        return f"a database is locked by another process ({text}); wait for it to finish and rerun"
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in text or "not a database" in text:
        return (f"a cache database is damaged ({text}); rerun: beirx moves a damaged cache aside (keeping it) when "
                "it opens it")
    return f"database error ({text})"
