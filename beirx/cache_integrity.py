"""Cache entries that verify themselves: what an entry holds is recorded when it is complete, checked on load.

An entry (a folder or a file) records every file's size and checksum; files above :data:`FULL_LIMIT`
bytes get a *sampled* checksum (size plus :data:`SAMPLES` evenly spaced 64 KiB blocks, first and last
included), so checking a multi-GB embedding matrix reads a few MB yet still catches truncation, a
zeroed or replaced file and most partial damage. The record is written last (the completion marker), so
an interrupted write never looks complete. A damaged entry is reported and rebuilt, never used.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from beirx.atomic import write_json

log = logging.getLogger(__name__)

FULL_LIMIT = 32 << 20
SAMPLES = 64
_BLOCK = 64 << 10


def file_digest(path: Path) -> str:
    """``sha256:<hex>`` of a small file, ``sampled-sha256:<hex>`` (size and sampled blocks) of a large one."""
    path = Path(path)
    size = path.stat().st_size
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        if size <= FULL_LIMIT:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
            return "sha256:" + h.hexdigest()
        h.update(str(size).encode())
        step = (size - _BLOCK) / (SAMPLES - 1)
        for i in range(SAMPLES):
            fh.seek(int(i * step))
            h.update(fh.read(_BLOCK))
    return "sampled-sha256:" + h.hexdigest()


def describe_files(folder: Path, exclude: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """``{relative path: {"bytes", "checksum"}}`` for every file under ``folder`` except ``exclude``."""
    folder = Path(folder)
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel in exclude:
            continue
        files[rel] = {"bytes": path.stat().st_size, "checksum": file_digest(path)}
    return files


def check_files(folder: Path, files: Any) -> str | None:
    """Why the files under ``folder`` do not match the record ``files``, or None when they all do."""
    if not isinstance(files, dict) or not files:
        return "no record of its files (written by an older beirx or damaged)"
    for rel, want in files.items():
        path = Path(folder) / rel
        if not path.is_file():
            return f"{rel} is missing"
        size = path.stat().st_size
        if not isinstance(want, dict) or size != want.get("bytes"):
            return f"{rel} has {size} bytes, expected {want.get('bytes') if isinstance(want, dict) else '?'}"
        if file_digest(path) != want.get("checksum"):
            return f"{rel} does not match its recorded checksum"
    return None


def seal(folder: Path, marker: str, info: dict[str, Any]) -> None:
    """Record every file of ``folder`` in ``folder/marker`` (with ``info``); call it after the last write."""
    write_json(Path(folder) / marker, {**info, "files": describe_files(folder, exclude=(marker,))})


def verify(folder: Path, marker: str) -> str | None:
    """None when ``folder`` is a complete, undamaged entry sealed by :func:`seal`; else what is wrong."""
    path = Path(folder) / marker
    if not path.is_file():
        return f"{marker} is missing (incomplete entry)"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError, RecursionError) as exc:
        return f"{marker} is unreadable ({exc})"
    if not isinstance(record, dict):
        return f"{marker} is not a JSON object"
    return check_files(folder, record.get("files"))


def report_damaged(what: str, where: Path, problem: str) -> None:
    log.warning("damaged %s at %s: %s; rebuilding it", what, where, problem)


QUICK_CHECK_LIMIT = 256 << 20  # bytes; larger SQLite caches get only the header/schema probe on open


def sqlite_problem(conn) -> str | None:
    """Why an open SQLite cache is unusable (not a database, malformed pages), or None."""
    import sqlite3

    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        rows = conn.execute("PRAGMA quick_check").fetchall() if _db_size(conn) <= QUICK_CHECK_LIMIT else [("ok",)]
    except sqlite3.DatabaseError as exc:
        if _busy(exc):  # another process holds a lock: not damage
            raise
        return str(exc)
    if rows != [("ok",)]:
        return "; ".join(str(r[0]) for r in rows[:3])
    return None


def _busy(exc) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _db_size(conn) -> int:
    page_count = conn.execute("PRAGMA page_count").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    return page_count * page_size


def open_sqlite_cache(path: Path, connect, what: str):
    """``connect(path)`` after checking the file; a damaged file is moved aside (kept for inspection), reported
    and replaced by a new empty database, so a cache never serves (or crashes on) damaged pages."""
    import sqlite3
    import time

    from beirx.errors import DataError

    path = Path(path)
    problem = None
    if path.exists() and not path.is_file():
        raise DataError(path, f"the {what} must be a file; this is a folder or special file")
    if path.exists():
        try:
            conn = connect(path)
        except sqlite3.DatabaseError as exc:
            if _busy(exc):
                raise
            problem = str(exc)
        else:
            problem = sqlite_problem(conn)
            if problem is None:
                return conn
            conn.close()
    if problem is not None:
        aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            side = Path(str(path) + suffix)
            if side.exists():
                side.replace(Path(str(aside) + suffix))
        log.warning("damaged %s at %s: %s; moved it to %s and starting a new one", what, path, problem, aside)
    return connect(path)


SQLITE_BUSY_TIMEOUT_S = 120.0


def enable_wal(conn, timeout: float = SQLITE_BUSY_TIMEOUT_S) -> None:
    """Switch to WAL, retrying while another process creates or switches the same new database.

    SQLite does not call the busy handler for this switch, so two runs started together on a fresh
    database would otherwise fail with "database is locked" instead of waiting their turn.
    """
    import sqlite3
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def open_shared_cache(path: Path, what: str, timeout: float = SQLITE_BUSY_TIMEOUT_S):
    """A SQLite cache that concurrent processes share (translation memory, generated queries): checked on
    open (a damaged file is moved aside), autocommit (transactions are explicit, :class:`WriteTransaction`),
    a busy timeout, WAL, and ``synchronous = NORMAL`` (in WAL mode a committed transaction survives the
    process being killed, not a power loss)."""
    import sqlite3

    conn = open_sqlite_cache(Path(path), lambda p: sqlite3.connect(p, timeout=timeout, isolation_level=None), what)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    enable_wal(conn, timeout)
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class WriteTransaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK``): takes the write lock up front, so a busy
    database makes us wait (busy timeout) at the start instead of failing half-way through."""

    def __init__(self, conn):
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *exc) -> None:
        self._conn.execute("ROLLBACK" if exc_type else "COMMIT")
