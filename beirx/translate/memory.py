"""A persistent translation memory: SQLite, one row per (translation system, source segment).

Why: translating a benchmark takes hours; a run that dies must not lose finished work, segments that
repeat across a dataset (or across datasets) are translated once, and two runs may share one memory.

* A *system* is everything that changes a translation: the backend's ``describe()`` (backend, model,
  revision, output-affecting options) plus the language pair. Its canonical JSON is hashed into the
  key; the readable fields are stored beside it for inspection.
* When a backend changes how it describes the same system (beirx's shared model-revision rule changed
  the revision recorded for local model folders), :meth:`TranslationMemory.register` adopts the
  translations stored under the backend's earlier descriptions the first time the new key is registered:
  they are copied to the new key in one transaction, so hours of finished work stay usable.
* Segments are keyed by SHA-256 of their UTF-8 text; the text is stored too and compared on lookup,
  so a (practically impossible) hash collision can never return another segment's translation.
* Concurrency and crashes: WAL journal (readers never block the writer), a busy timeout so a second
  process waits instead of failing, one transaction per batch (a batch is either fully committed or
  absent after SIGKILL), and ``INSERT OR IGNORE`` so two runs committing the same segment never clash.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 120.0
_LOOKUP_CHUNK = 500  # below SQLite's default limit of host parameters

_SCHEMA = """
CREATE TABLE IF NOT EXISTS systems (
    key TEXT PRIMARY KEY, backend TEXT, model TEXT, revision TEXT, src TEXT, tgt TEXT, description TEXT);
CREATE TABLE IF NOT EXISTS segments (
    system TEXT NOT NULL, hash TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (system, hash)) WITHOUT ROWID;
"""


def segment_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def system_key(description: dict[str, Any], src: str, tgt: str) -> str:
    """A stable key for a translation system: hash of its canonical JSON description and language pair."""
    canonical = json.dumps({"src": src, "tgt": tgt, **description}, sort_keys=True, ensure_ascii=False,
                           separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, retrying while another process creates or switches the same new database.

    SQLite does not call the busy handler for this switch, so two runs started together on a fresh
    memory would otherwise fail with "database is locked" instead of waiting their turn.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class TranslationMemory:
    """``with TranslationMemory(path) as tm: key = tm.register(describe, src, tgt); tm.lookup(key, segs)``."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        _enable_wal(self._conn)
        # NORMAL in WAL mode: a committed batch survives the process being killed (not a power loss).
        self._conn.execute("PRAGMA synchronous = NORMAL")
        with self._transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)

    def _transaction(self):
        return _Transaction(self._conn)

    def register(self, description: dict[str, Any], src: str, tgt: str,
                 earlier: Callable[[], Iterable[dict[str, Any]]] | None = None) -> str:
        """Record the system (idempotent) and return its key.

        ``earlier`` (e.g. ``translator.earlier_descriptions``) is called only when the system is new to this
        memory; the translations stored under those descriptions are copied to the new key (see the module
        docstring).
        """
        key = system_key(description, src, tgt)
        row = (key, str(description.get("backend", "")), str(description.get("model", "")),
               str(description.get("revision", "")), src, tgt,
               json.dumps(description, sort_keys=True, ensure_ascii=False, default=str))
        with self._transaction():
            new = self._conn.execute("INSERT OR IGNORE INTO systems VALUES (?, ?, ?, ?, ?, ?, ?)", row).rowcount
            for old in (earlier() if new and earlier else ()):
                old_key = system_key(old, src, tgt)
                copied = self._conn.execute(
                    "INSERT OR IGNORE INTO segments SELECT ?, hash, source, target, created FROM segments "
                    "WHERE system = ?", (key, old_key)).rowcount
                if copied > 0:
                    log.info("translation memory %s: adopted %d translations stored under revision %s",
                             self.path, copied, old.get("revision"))
        return key

    def lookup(self, system: str, segments: Iterable[str]) -> dict[str, str]:
        """``{segment: translation}`` for the segments the memory holds for ``system``."""
        by_hash = {segment_hash(s): s for s in segments}
        hashes = list(by_hash)
        found: dict[str, str] = {}
        for i in range(0, len(hashes), _LOOKUP_CHUNK):
            chunk = hashes[i: i + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT hash, source, target FROM segments WHERE system = ? AND hash IN ({marks})", [system, *chunk])
            for digest, source, target in rows:
                if by_hash[digest] == source:
                    found[source] = target
                else:  # pragma: no cover - a SHA-256 collision
                    log.warning("translation memory %s: hash collision on %s; ignoring the stored row", self.path, digest)
        return found

    def add(self, system: str, pairs: list[tuple[str, str]]) -> None:
        """Commit one batch of ``(source, translation)`` pairs in a single transaction."""
        now = time.time()
        with self._transaction():
            self._conn.executemany("INSERT OR IGNORE INTO segments VALUES (?, ?, ?, ?, ?)",
                                   [(system, segment_hash(s), s, t, now) for s, t in pairs])

    def count(self, system: str | None = None) -> int:
        if system is None:
            return self._conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
        return self._conn.execute("SELECT COUNT(*) FROM segments WHERE system = ?", (system,)).fetchone()[0]

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TranslationMemory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK``): takes the write lock up front, so a busy
    database makes us wait (busy timeout) at the start instead of failing half-way through."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *exc) -> None:
        self._conn.execute("ROLLBACK" if exc_type else "COMMIT")
