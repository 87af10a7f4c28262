"""The query-generation cache: SQLite, one row per (generator, document), holding that document's queries.

Why, as for the translation memory (:mod:`beirx.translate.translation_memory`): generating queries for a large corpus
takes hours, so a killed run must not lose finished documents and a rerun must generate nothing twice.

* A *generator* is everything that changes the queries (model, revision, number per document, sampling
  parameters, seed); its canonical JSON is hashed into the key and stored beside it for inspection.
* A document is keyed by its ID and the SHA-256 of the text the model read, so an edited document is
  generated again rather than served stale queries.
* Opened as every shared cache is (:func:`beirx.sqlite_store.connect`: a damaged file is moved
  aside, WAL, a busy timeout so a second process waits instead of failing), one transaction per batch (a
  batch is fully committed or absent after SIGKILL), ``INSERT OR IGNORE`` so concurrent runs never clash.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from beirx.sqlite_store import Database, WriteTransaction, connect, select_in

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS generators (key TEXT PRIMARY KEY, description TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS queries (generator TEXT NOT NULL, doc_id TEXT NOT NULL, text_hash TEXT NOT NULL, "
    "queries TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (generator, doc_id, text_hash)) WITHOUT ROWID",
)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def generator_key(description: dict[str, Any]) -> str:
    canonical = json.dumps(description, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


class QueryCache(Database):
    """``with QueryCache(path) as c: key = c.register(desc); c.lookup(key, docs); c.add(key, rows)``."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = connect(self.path, "generated-queries cache")
        with WriteTransaction(self._conn):
            for statement in _SCHEMA:
                self._conn.execute(statement)

    def register(self, description: dict[str, Any]) -> str:
        """Record the generator (idempotent) and return its key."""
        key = generator_key(description)
        self._conn.execute("INSERT OR IGNORE INTO generators VALUES (?, ?)",
                           (key, json.dumps(description, sort_keys=True, ensure_ascii=False, default=str)))
        return key

    def lookup(self, generator: str, docs: list[tuple[str, str]]) -> dict[str, list[str]]:
        """``{doc_id: queries}`` for the ``(doc_id, text)`` pairs already generated with this text."""
        wanted = {doc_id: text_hash(text) for doc_id, text in docs}
        rows = select_in(self._conn, "SELECT doc_id, text_hash, queries FROM queries WHERE generator = ? AND "
                                     "doc_id IN ({marks})", wanted, (generator,))
        return {doc_id: json.loads(queries) for doc_id, digest, queries in rows if wanted[doc_id] == digest}

    def add(self, generator: str, rows: list[tuple[str, str, list[str]]]) -> None:
        """Commit one batch of ``(doc_id, text, queries)`` in a single transaction."""
        now = time.time()
        with WriteTransaction(self._conn):
            self._conn.executemany("INSERT OR IGNORE INTO queries VALUES (?, ?, ?, ?, ?)",
                                   [(generator, d, text_hash(t), json.dumps(q, ensure_ascii=False), now)
                                    for d, t, q in rows])

    def count(self, generator: str) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM queries WHERE generator = ?", (generator,)).fetchone()[0]
