"""The unique segments of one run, on disk and in translation order: a temporary SQLite file.

Why: a benchmark has tens of millions of segments; holding them (or a set and a sorted list of them)
in Python costs gigabytes. Each table here is keyed by ``(length, text)`` (``WITHOUT ROWID``), so an
insert deduplicates and a scan of the key returns the segments sorted by length, then text - exactly
Python's ``sorted(set(segments), key=lambda s: (len(s), s))``: SQLite compares text with ``memcmp`` on
UTF-8, whose byte order is code-point order, and ``len`` is stored as Python counts it. Memory stays at
SQLite's page cache; the OS caches the file. The file is scratch (no journal, no fsync): it is rebuilt
from the dataset by a rerun, and removed when the store is closed.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from beirx.sqlite_store import WriteTransaction, scratch, select_in

_HOST = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())
_FLUSH_ROWS = 20_000
_FETCH_ROWS = 2_000
_CACHE_KIB = 64 * 1024


class SegmentStore:
    """Named tables of unique texts, each with an integer ``n`` (a flag or count), scanned in (len, text) order."""

    def __init__(self, folder: Path | str):
        Path(folder).mkdir(parents=True, exist_ok=True)
        _remove_orphans(Path(folder))
        fd, path = tempfile.mkstemp(prefix=f".beirx-segments-{_HOST}-{os.getpid()}-", suffix=".sqlite", dir=folder)
        os.close(fd)
        self.path = Path(path)
        self._conn = scratch(self.path, "page_size = 8192", "temp_store = FILE", f"cache_size = -{_CACHE_KIB}")
        self._tables: set[str] = set()
        self._pending: dict[str, list[tuple[int, str, int]]] = {}

    def _table(self, name: str) -> str:
        if not name.isidentifier():
            raise ValueError(f"bad table name {name!r}")
        if name not in self._tables:
            self._conn.execute(f"CREATE TABLE IF NOT EXISTS {name} (len INTEGER NOT NULL, text TEXT NOT NULL, "
                               "n INTEGER NOT NULL, PRIMARY KEY (len, text)) WITHOUT ROWID")
            self._tables.add(name)
        return name

    def add(self, table: str, text: str, n: int = 0) -> None:
        """Add ``text`` (kept once, with the largest ``n`` it was added with)."""
        rows = self._pending.setdefault(self._table(table), [])
        rows.append((len(text), text, n))
        if len(rows) >= _FLUSH_ROWS:
            self._flush(table)

    def _flush(self, table: str) -> None:
        rows = self._pending.pop(table, None)
        if rows:
            with WriteTransaction(self._conn):  # a full disk: OSError(ENOSPC) naming this file
                self._conn.executemany(f"INSERT INTO {table} VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET "
                                       "n = max(n, excluded.n)", rows)

    def count(self, table: str) -> int:
        self._flush(self._table(table))
        return self._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]

    def total(self, table: str) -> int:
        """The sum of ``n`` over the table."""
        self._flush(self._table(table))
        return self._conn.execute(f"SELECT COALESCE(SUM(n), 0) FROM {table}").fetchone()[0]

    def ordered(self, table: str) -> Iterator[str]:
        """The texts sorted by (length, text)."""
        self._flush(self._table(table))
        cursor = self._conn.execute(f"SELECT text FROM {table} ORDER BY len, text")
        while rows := cursor.fetchmany(_FETCH_ROWS):
            yield from (r[0] for r in rows)

    def flagged(self, table: str) -> Iterator[tuple[str, int]]:
        """``(text, n)`` for the texts with ``n > 0``, in (length, text) order."""
        self._flush(self._table(table))
        cursor = self._conn.execute(f"SELECT text, n FROM {table} WHERE n > 0 ORDER BY len, text")
        while rows := cursor.fetchmany(_FETCH_ROWS):
            yield from rows

    def contains(self, table: str, texts: Iterable[str]) -> set[str]:
        """Which of ``texts`` are in the table."""
        self._flush(self._table(table))
        rows = select_in(self._conn, f"SELECT text FROM {table} WHERE (len, text) IN (VALUES {{marks}})",
                         {(len(t), t): None for t in texts})
        return {r[0] for r in rows}

    def close(self) -> None:
        self._conn.close()
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def __enter__(self) -> SegmentStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _remove_orphans(folder: Path) -> None:
    """Delete scratch files of this host's runs that died (SIGKILL) before closing their store."""
    for path in folder.glob(f".beirx-segments-{_HOST}-*.sqlite"):
        pid = path.name[len(f".beirx-segments-{_HOST}-"):].split("-")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            path.unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with ``pid`` exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
