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
* Notes: a backend that validates its outputs (the LLM backends) says what happened to a segment that was
  not accepted at the first attempt (retried, fell back to another translator, or written and flagged, with
  the reasons); the note is committed with the segment, so a resumed run still reports it.
* No duplicated work: before translating a batch a run *claims* it with a lease row (batch key, holder,
  expiry). A second run meeting a batch leased by a live holder skips it and comes back later; a lease
  whose holder died (its PID is gone on this host, or the lease expired without renewal) is taken over.
  Claiming re-reads the memory in the same write transaction, and committing a batch releases its lease
  in the transaction that stores it, so a batch is never translated twice by runs that share a memory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from beirx.sqlite_store import Database, WriteTransaction, connect, select_in
from beirx.translate.planning.segment_store import pid_alive

log = logging.getLogger(__name__)

LEASE_SECONDS = 900.0  # a lease not renewed for this long is taken over (renewed at every committed batch)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS systems (
    key TEXT PRIMARY KEY, backend TEXT, model TEXT, revision TEXT, src TEXT, tgt TEXT, description TEXT);
CREATE TABLE IF NOT EXISTS segments (
    system TEXT NOT NULL, hash TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (system, hash)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS notes (
    system TEXT NOT NULL, hash TEXT NOT NULL, note TEXT NOT NULL, PRIMARY KEY (system, hash)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
    system TEXT NOT NULL, batch TEXT NOT NULL, holder TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
    expires REAL NOT NULL, PRIMARY KEY (system, batch)) WITHOUT ROWID;
"""

CLAIMED, DONE, BUSY = "claimed", "done", "busy"



def segment_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def system_key(description: dict[str, Any], src: str, tgt: str) -> str:
    """A stable key for a translation system: hash of its canonical JSON description and language pair."""
    canonical = json.dumps({"src": src, "tgt": tgt, **description}, sort_keys=True, ensure_ascii=False,
                           separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


class TranslationMemory(Database):
    """``with TranslationMemory(path) as tm: key = tm.register(describe, src, tgt); tm.lookup(key, segs)``."""

    def __init__(self, path: Path | str, lease_seconds: float = LEASE_SECONDS):
        self.path = Path(path)
        self.lease_seconds = lease_seconds
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.holder = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = connect(self.path, "translation memory")
        with self._transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)

    def _transaction(self):
        return WriteTransaction(self._conn)

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
        found: dict[str, str] = {}
        rows = self._rows("SELECT hash, source, target FROM segments", system, segments)
        for segment, digest, source, target in rows:
            if segment == source:
                found[source] = target
            else:  # pragma: no cover - a SHA-256 collision
                log.warning("translation memory %s: hash collision on %s; ignoring the stored row", self.path, digest)
        return found

    def _rows(self, select: str, system: str, segments: Iterable[str]):
        """``(segment, *row)`` for the rows of ``select`` (``SELECT hash, ... FROM table``) matching ``system``
        and the segments' hashes."""
        by_hash = {segment_hash(s): s for s in segments}
        for row in select_in(self._conn, f"{select} WHERE system = ? AND hash IN ({{marks}})", by_hash, (system,)):
            yield (by_hash[row[0]], *row)

    def add(self, system: str, pairs: list[tuple[str, str]], lease: str | None = None,
            notes: dict[str, dict[str, Any]] | None = None) -> None:
        """Commit ``(source, translation)`` pairs (a batch, or part of one) and their ``notes`` in a single
        transaction; release ``lease`` (a batch key from :meth:`claim`) in it and renew this holder's leases."""
        now = time.time()
        with self._transaction():
            self._conn.executemany("INSERT OR IGNORE INTO segments VALUES (?, ?, ?, ?, ?)",
                                   [(system, segment_hash(s), s, t, now) for s, t in pairs])
            if notes:
                self._conn.executemany("INSERT OR IGNORE INTO notes VALUES (?, ?, ?)",
                                       [(system, segment_hash(s), json.dumps(n, sort_keys=True, ensure_ascii=False))
                                        for s, n in notes.items()])
            if lease is not None:
                self._conn.execute("DELETE FROM leases WHERE system = ? AND batch = ? AND holder = ?",
                                   (system, lease, self.holder))
            self._conn.execute("UPDATE leases SET expires = ? WHERE holder = ?",
                               (now + self.lease_seconds, self.holder))

    def notes(self, system: str, segments: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``{segment: note}`` for the segments that have one (see the module docstring)."""
        return {segment: json.loads(note) for segment, _, note in self._rows("SELECT hash, note FROM notes", system,
                                                                           segments)}

    def claim(self, system: str, batch: str, segments: list[str]) -> tuple[str, list[str]]:
        """Lease batch ``batch`` (a key naming its segments) for this holder before translating it.

        Returns ``(DONE, [])`` when another run has committed every segment meanwhile, ``(BUSY, [])`` when
        a live holder leases it, else ``(CLAIMED, the segments still missing)``. One write transaction, so
        two runs can never both claim a batch nor claim one just committed.
        """
        now = time.time()
        with self._transaction():
            known = self.lookup(system, segments)
            missing = [s for s in segments if s not in known]
            if not missing:
                return DONE, []
            row = self._conn.execute("SELECT holder, host, pid, expires FROM leases WHERE system = ? AND batch = ?",
                                     (system, batch)).fetchone()
            if row is not None and row[0] != self.holder and not self._lapsed(*row[1:], now):
                return BUSY, []
            self._conn.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?)",
                               (system, batch, self.holder, self.host, self.pid, now + self.lease_seconds))
        return CLAIMED, missing

    def release(self) -> None:
        """Drop every lease this holder still has (a run that stops early: another may take them now)."""
        with self._transaction():
            self._conn.execute("DELETE FROM leases WHERE holder = ?", (self.holder,))

    def _lapsed(self, host: str, pid: int, expires: float, now: float) -> bool:
        """A lease is free once expired, or at once when its holder's process on this host is gone."""
        if expires < now:
            return True
        if host != self.host or pid == self.pid:
            return False
        return not pid_alive(pid)

    def merge(self, other: Path, system: str) -> int:
        """Copy ``system``'s segments from the memory file ``other`` (a shard's) into this one; the count added."""
        self._conn.execute("ATTACH DATABASE ? AS other", (str(other),))
        try:
            with self._transaction():
                self._conn.execute("INSERT OR IGNORE INTO systems SELECT * FROM other.systems WHERE key = ?", (system,))
                added = self._conn.execute("INSERT OR IGNORE INTO segments SELECT * FROM other.segments "
                                           "WHERE system = ?", (system,)).rowcount
                if self._conn.execute("SELECT 1 FROM other.sqlite_master WHERE name = 'notes'").fetchone():
                    self._conn.execute("INSERT OR IGNORE INTO notes SELECT * FROM other.notes WHERE system = ?",
                                       (system,))
        finally:
            self._conn.execute("DETACH DATABASE other")
        return added

    def count(self, system: str | None = None) -> int:
        if system is None:
            return self._conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
        return self._conn.execute("SELECT COUNT(*) FROM segments WHERE system = ?", (system,)).fetchone()[0]
