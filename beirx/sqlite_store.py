"""The one way beirx opens SQLite: checked files, the project's pragmas, explicit write transactions, chunked lookups.

Every SQLite file of beirx opens here, in one of three kinds:

* :func:`connect` -- a database that concurrent processes share and that must survive a killed process (the
  translation memory, the generated-queries, judgement and reranker-score caches, the review): the file is
  checked on open (a damaged cache is moved aside, kept for inspection, and started afresh; a database that
  holds people's work -- ``if_damaged`` -- is reported and left alone), autocommit (transactions are explicit,
  :class:`WriteTransaction`), a busy timeout so a second process waits instead of failing, WAL (readers never
  block the writer) and ``synchronous = NORMAL`` (a committed transaction survives the process being killed,
  not a power loss; ``FULL`` where a saved page must survive that too). ``read_only`` opens a file in a
  folder this process cannot write.
* :func:`scratch` -- a file rebuilt from its input by a rerun (the segment store, the document-store index
  while it is built): no journal, no fsync.
* :func:`read_only` -- a finished index that is only read (the document store).

Writes go through :class:`WriteTransaction` in all three, so a full disk reads as ``OSError(ENOSPC)`` naming
the file, never as a damaged database. :func:`select_in` runs a ``... IN (...)`` query in chunks below
SQLite's limit of host parameters, and :class:`KeyValueCache` is the get-many/put-many table the caches share.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from beirx.errors import DataError
from beirx.path_problems import link_problem

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 120.0
QUICK_CHECK_LIMIT = 256 << 20  # bytes; larger databases get only the header/schema probe on open
MAX_PARAMETERS = 500  # host parameters per statement, below SQLite's default limit (999 before 3.32)


def connect(path: Path | str, what: str, *, timeout: float = BUSY_TIMEOUT_S, synchronous: str = "NORMAL",
            if_damaged: str | None = None, read_only: bool = False, threads: bool = False) -> sqlite3.Connection:
    """A checked, shared, crash-safe database (see the module docstring); ``what`` names it in every message.

    ``if_damaged``: None moves a damaged file aside and starts a new one (a cache); otherwise a damaged file
    is a :class:`DataError` ending with this advice. ``read_only``: opened read-only (see :func:`_uri`), no
    journal switch. ``threads``: the connection may be used by other threads than its creator's.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        raise DataError(path, f"the {what} must be a file; this is a folder or special file")
    if os.path.lexists(path) and not path.exists() or link_problem(path.parent):
        raise DataError(path, f"the {what} cannot be opened")  # names the symbolic link that loops or leads nowhere

    def open_() -> sqlite3.Connection:
        if read_only:
            return sqlite3.connect(_uri(path), uri=True, timeout=timeout, isolation_level=None,
                                   check_same_thread=not threads)
        return sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=not threads)

    conn = None
    if path.exists():
        try:
            conn = open_()
            problem = sqlite_problem(conn)
        except sqlite3.DatabaseError as exc:
            if busy(exc):
                raise
            problem = str(exc)
        if problem is not None:
            if conn is not None:
                conn.close()
                conn = None
            if if_damaged is not None:
                raise DataError(path, f"the {what} is damaged ({problem}); {if_damaged}")
            _move_aside(path, what, problem)
    if conn is None:
        conn = open_()
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    if not read_only:
        enable_wal(conn, timeout)
        conn.execute(f"PRAGMA synchronous = {synchronous}")
    return conn


def scratch(path: Path | str, *pragmas: str) -> sqlite3.Connection:
    """A scratch database (rebuilt by a rerun, so no journal and no fsync), with extra ``pragmas``."""
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode = OFF", "synchronous = OFF", *pragmas):
        conn.execute(f"PRAGMA {pragma}")
    return conn


def read_only(path: Path | str, threads: bool = False) -> sqlite3.Connection:
    """A finished database opened read-only (its path quoted, so any file name opens)."""
    return sqlite3.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro", uri=True,
                           check_same_thread=not threads)


def _uri(path: Path) -> str:
    """A read-only database's URI. SQLite reads a WAL database through its -wal and -shm files when they exist (a
    process that was killed left committed work in them), else as an immutable file (no locks: nobody can write
    it either)."""
    wal = path.with_name(path.name + "-wal")
    return "file:" + quote(str(path.resolve())) + ("?mode=ro" if wal.is_file() and wal.stat().st_size
                                                   else "?mode=ro&immutable=1")


def sqlite_problem(conn: sqlite3.Connection) -> str | None:
    """Why an open database is unusable (not a database, malformed pages), or None."""
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        rows = conn.execute("PRAGMA quick_check").fetchall() if _db_size(conn) <= QUICK_CHECK_LIMIT else [("ok",)]
    except sqlite3.DatabaseError as exc:
        if busy(exc):  # another process holds a lock: not damage
            raise
        return str(exc)
    if rows != [("ok",)]:
        return "; ".join(str(r[0]) for r in rows[:3])
    return None


def busy(exc: BaseException) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _db_size(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]


def _move_aside(path: Path, what: str, problem: str) -> None:
    """Keep a damaged file (and its -wal, -shm) for inspection under a dated name, never to be read again."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d%H%M%S')}")
    for suffix in ("", "-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists():
            side.replace(Path(str(aside) + suffix))
    log.warning("damaged %s at %s: %s; moved it to %s and starting a new one", what, path, problem, aside)


def enable_wal(conn: sqlite3.Connection, timeout: float = BUSY_TIMEOUT_S) -> None:
    """Switch to WAL, retrying while another process creates or switches the same new database.

    SQLite does not call the busy handler for this switch, so two runs started together on a fresh
    database would otherwise fail with "database is locked" instead of waiting their turn.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class WriteTransaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK``): takes the write lock up front, so a busy
    database makes us wait (busy timeout) at the start instead of failing half-way through.

    A full disk (SQLite's "database or disk is full", in the transaction or at its commit) rolls the transaction
    back -- every transaction committed before stays -- and is raised as ``OSError(ENOSPC)`` naming the database
    file, so it reads as a full disk, never as a damaged cache to delete.
    """

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb) -> None:
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
    return isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
                                               or "disk is full" in str(exc))


def _enospc(conn: sqlite3.Connection) -> OSError:
    rows = conn.execute("PRAGMA database_list").fetchall()
    path = next((r[2] for r in rows if r[1] == "main" and r[2]), None)
    return OSError(errno.ENOSPC, "No space left on device", path)


def select_in(conn: sqlite3.Connection, query: str, keys: Iterable[Any], fixed: Sequence[Any] = ()) -> Iterator[tuple]:
    """The rows of ``query`` for all ``keys``, in chunks below SQLite's limit of host parameters.

    ``query`` holds ``{marks}`` where the chunk's placeholders go (``... WHERE system = ? AND hash IN ({marks})``),
    ``fixed`` the parameters before them. A key that is a tuple is a row value (``(len, text) IN (VALUES
    {marks})``)."""
    keys = list(keys)
    if not keys:
        return
    width = len(keys[0]) if isinstance(keys[0], tuple) else 1
    mark = "?" if width == 1 else "(" + ",".join("?" * width) + ")"
    step = max(1, (MAX_PARAMETERS - len(fixed)) // width)
    for start in range(0, len(keys), step):
        chunk = keys[start:start + step]
        values = chunk if width == 1 else [v for key in chunk for v in key]
        yield from conn.execute(query.format(marks=",".join([mark] * len(chunk))), [*fixed, *values])


class Database:
    """An open SQLite file (``self._conn``), closed by :meth:`close` or at the end of a ``with`` block."""

    _conn: sqlite3.Connection

    def close(self) -> None:
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class KeyValueCache(Database):
    """One table of ``key -> value`` in a shared database (:func:`connect`): looked up and stored many at a time.

    ``table``, ``key`` and ``value`` name the table and its columns (``key_type``, ``value_type`` their SQL
    types) so existing files keep their schema; :meth:`put_many` commits its items in one transaction (all of
    them or none, after a crash) and replaces a key stored before.
    """

    def __init__(self, path: Path | str, what: str, table: str, key: str = "key", value: str = "value",
                 key_type: str = "TEXT", value_type: str = "TEXT NOT NULL"):
        if not all(name.isidentifier() for name in (table, key, value)):
            raise ValueError(f"bad table or column name in {(table, key, value)!r}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = connect(self.path, what)
        self._table, self._key, self._value = table, key, value
        with WriteTransaction(self._conn):
            self._conn.execute(f"CREATE TABLE IF NOT EXISTS {table} "
                               f"({key} {key_type} PRIMARY KEY, {value} {value_type})")

    def get_many(self, keys: Iterable[Any]) -> dict[Any, Any]:
        """``{key: value}`` for the keys stored."""
        return dict(select_in(self._conn, f"SELECT {self._key}, {self._value} FROM {self._table} "
                                         f"WHERE {self._key} IN ({{marks}})", dict.fromkeys(keys)))

    def put_many(self, items: Mapping[Any, Any]) -> None:
        with WriteTransaction(self._conn):
            self._conn.executemany(f"INSERT OR REPLACE INTO {self._table} VALUES (?, ?)", items.items())

    def __len__(self) -> int:
        return self._conn.execute(f"SELECT COUNT(*) FROM {self._table}").fetchone()[0]
