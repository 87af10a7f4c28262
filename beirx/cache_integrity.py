"""Cache entries that verify themselves: what an entry holds is recorded when it is complete, checked on load.

Two rules hold for every cache, complete or resumable: a record never claims more than the data on disk holds
(the data is made durable -- fsync, msync -- *before* the record that counts it is written), and a reader
checks what a record claims (rows, sizes, checksums) before trusting it.

*Complete entries* (:func:`seal`, :func:`verify`): an entry (a folder) records every file's size and checksum;
files above :data:`FULL_LIMIT` bytes get a *sampled* checksum (size plus :data:`SAMPLES` evenly spaced 64 KiB
blocks, first and last included), so checking a multi-GB embedding matrix reads a few MB yet still catches
truncation, a zeroed or replaced file and most partial damage. The files are synced, then the record is
written last (the completion marker), so an interrupted write never looks complete. A damaged entry is
reported and rebuilt, never used.

A cache entry (:class:`CacheEntry`: the embedding cache, the SPLADE index) is a folder that is built in a
``.partial`` sibling under a lock and checked (:meth:`CacheEntry.problem`) before every use.

*Resumable builds* (:class:`ProgressJournal`): a build that takes hours (encoding a corpus, a learned sparse
index) commits its work in chunks; the journal records each committed chunk with the checksum of its data,
and a resumed build recomputes those checksums and continues after the last chunk that verifies, so a
progress record that ran ahead of its data (a crash between the two, a damaged or replaced file) costs the
unverified chunks, never a silently wrong result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from beirx.atomic import atomic_writer, naming, write_json
from beirx.path_problems import link_problem

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


def sync_files(folder: Path, exclude: tuple[str, ...] = ()) -> None:
    """fsync every file under ``folder`` (and the folder itself), so a record written next is not ahead of them."""
    folder = Path(folder)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.relative_to(folder).as_posix() not in exclude):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def seal(folder: Path, marker: str, info: dict[str, Any], exclude: tuple[str, ...] = ()) -> None:
    """Record every file of ``folder`` but ``exclude`` in ``folder/marker`` (with ``info``); call it after the last
    write. (``exclude``: what the build still needs until the entry is sealed, deleted after; :func:`verify`
    ignores files it does not record.)

    The files are synced to disk first: the marker (the completion record) is never ahead of the data.
    """
    sync_files(folder, exclude=(marker, *exclude))
    write_json(Path(folder) / marker, {**info, "files": describe_files(folder, exclude=(marker, *exclude))})


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


def digest_bytes(data) -> str:
    """``sha256:<hex>`` of a bytes-like object (a chunk of a resumable build: rows, a file's bytes)."""
    return "sha256:" + hashlib.sha256(memoryview(data).cast("B")).hexdigest()


class CacheEntry:
    """A resumable cache entry: ``folder`` when complete, ``partial`` while being built, ``lock`` held by its
    builder; ``label`` is a readable prefix, ``key`` the hash. Subclasses say what is wrong (:meth:`problem`)."""

    what = "cache entry"

    def __init__(self, root: Path, label: str, key: str):
        self.root = Path(root)
        self.folder = self.root / f"{label}-{key}"
        self.partial = self.root / f".{label}-{key}.partial"
        self.lock = self.root / f".{label}-{key}.lock"

    def problem(self) -> str | None:
        raise NotImplementedError

    def exists(self) -> bool:
        """True for a complete, undamaged entry; a damaged one is reported and removed (call with the lock held)."""
        if not self.folder.exists():
            return False
        problem = self.problem()
        if problem is None:
            return True
        report_damaged(self.what, self.folder, problem)
        shutil.rmtree(self.folder, ignore_errors=True)
        return False


class ProgressJournal:
    """The progress of a resumable build, which never runs ahead of its data and is verified before it is trusted.

    An append-only file of JSON lines: the first states what is being built (``header``: sizes, order, anything a
    resume must match); each further line is a committed chunk ``{"start", "end", "checksum"}`` over the build's
    positions ``[start, end)``. :meth:`commit` first makes the chunk's data durable (the caller's ``sync``, e.g.
    an msync or fsync), then appends the line and fsyncs it. :meth:`resume` trusts no line: it recomputes each
    chunk's checksum from the data (the caller's ``digest(start, end)``), keeps the chunks that verify, in order,
    and reports the first that does not. A torn last line (a crash mid-append) is ignored.

    Usage (what :class:`beirx.models.embeddings_cache.EmbeddingCache` does)::

        journal = ProgressJournal(partial / "progress.jsonl", {"rows": n, "order": digest})
        done = journal.resume(lambda a, b: digest_bytes(data_of(a, b)))   # 0: start afresh
        if not done:
            journal.begin()
        ...write positions [done, end) ...
        journal.commit(done, end, digest_bytes(data_of(done, end)), sync=flush)
    """

    def __init__(self, path: Path | str, header: dict[str, Any]):
        self.path = Path(path)
        self.header = json.loads(json.dumps(header))  # as it reads back from JSON
        self.done = 0

    def resume(self, digest: Callable[[int, int], str], what: str = "resumable build") -> int:
        """The position up to which the recorded chunks verify against the data (0: nothing usable)."""
        self.done = 0
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return 0
        entries = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except ValueError:
                break  # a torn last line
        if not entries or entries[0] != {"header": self.header}:
            return 0
        kept = [entries[0]]
        for entry in entries[1:]:
            ok = isinstance(entry, dict) and entry.get("start") == self.done and isinstance(entry.get("end"), int) \
                and entry["end"] > self.done
            if ok:
                try:
                    ok = digest(self.done, entry["end"]) == entry.get("checksum")
                except (OSError, ValueError, IndexError) as exc:
                    log.debug("chunk %s of %s unreadable: %s", entry, self.path, exc)
                    ok = False
            if not ok:
                log.warning("%s at %s: its progress record claims positions %s-%s, but the data there does not "
                            "match; resuming at %d instead", what, self.path.parent, entry.get("start") if
                            isinstance(entry, dict) else "?", entry.get("end") if isinstance(entry, dict) else "?",
                            self.done)
                break
            kept.append(entry)
            self.done = entry["end"]
        if len(kept) < len(entries):  # drop what did not verify, so later chunks append to a true record
            self._rewrite(kept)
        return self.done

    def begin(self) -> None:
        """Start a new journal (nothing done)."""
        self.done = 0
        self._rewrite([{"header": self.header}])

    def commit(self, start: int, end: int, checksum: str, sync: Callable[[], None]) -> None:
        """Record positions ``[start, end)`` as done, after ``sync()`` has made their data durable."""
        if start != self.done:
            raise ValueError(f"chunk {start}-{end} does not continue the journal at {self.done}")
        sync()
        with naming(self.path), open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"start": start, "end": end, "checksum": checksum}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.done = end

    def _rewrite(self, entries: list[dict[str, Any]]) -> None:
        with atomic_writer(self.path) as fh:
            fh.write("".join(json.dumps(e) + "\n" for e in entries))


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
    if os.path.lexists(path) and not path.exists() or link_problem(path.parent):
        raise DataError(path, f"the {what} cannot be opened")  # names the symbolic link that loops or leads nowhere
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
    database makes us wait (busy timeout) at the start instead of failing half-way through.

    A full disk (SQLite's "database or disk is full", in the transaction or at its commit) rolls the transaction
    back -- every transaction committed before stays -- and is raised as ``OSError(ENOSPC)`` naming the database
    file, so it reads as a full disk, never as a damaged cache to delete.
    """

    def __init__(self, conn):
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb) -> None:
        import sqlite3

        try:
            if exc_type is None:
                self._conn.execute("COMMIT")
            elif self._conn.in_transaction:  # SQLite may have rolled back already (a full disk does)
                self._conn.execute("ROLLBACK")
        except sqlite3.Error as commit_error:
            if not _disk_full(commit_error):
                raise
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            exc = commit_error
        if exc is not None and _disk_full(exc):
            raise _enospc(self._conn) from exc


def _disk_full(exc: BaseException) -> bool:
    import sqlite3

    return isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
                                               or "disk is full" in str(exc))


def _enospc(conn) -> OSError:
    import errno

    rows = conn.execute("PRAGMA database_list").fetchall()
    path = next((r[2] for r in rows if r[1] == "main" and r[2]), None)
    return OSError(errno.ENOSPC, "No space left on device", path)
