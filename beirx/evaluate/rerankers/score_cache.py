"""An on-disk cache of reranker scores, one SQLite file per scoring configuration.

File: ``$BEIRX_HOME/runs/rerank/<reranker>-<hash of the configuration>.sqlite``; the configuration
(model, revision, maximum lengths, prompt, relevance tokens, precision...) is also stored inside, so a
file can be traced back to what produced it.

Pairs are keyed by the *content* the model reads (query text, document title and text), not by IDs or
a dataset checksum: a score is reused wherever the same texts meet again (other first stages, depths,
splits, datasets) and can never be reused for changed texts. SQLite commits each chunk atomically, so
a killed run keeps every chunk it finished and concurrent runs can share a file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from beirx.data.records import Doc, Query

_QUERY_BATCH = 500  # keys per SELECT ... IN (...), below SQLite's host-parameter limit


def pair_key(query: Query, doc: Doc) -> bytes:
    """A 128-bit digest of the texts a reranker sees for this pair."""
    blob = "\x1f".join((query.text, doc.title, doc.text)).encode("utf-8")
    return hashlib.blake2b(blob, digest_size=16).digest()


class PairScoreCache:
    def __init__(self, path: Path | str, identity: dict[str, Any]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        from beirx.cache_integrity import open_sqlite_cache

        self._db = open_sqlite_cache(self.path, lambda p: sqlite3.connect(p, timeout=60), "reranker score cache")
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS scores (pair BLOB PRIMARY KEY, score REAL NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?)",
                             (json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str),))

    @classmethod
    def for_reranker(cls, name: str, identity: dict[str, Any]) -> "PairScoreCache":
        from beirx.checksums import cache_key
        from beirx.data.cache import cache_dir

        return cls(cache_dir("runs") / "rerank" / f"{name}-{cache_key(identity)}.sqlite", identity)

    def get(self, keys: list[bytes]) -> dict[bytes, float]:
        found: dict[bytes, float] = {}
        for start in range(0, len(keys), _QUERY_BATCH):
            batch = keys[start:start + _QUERY_BATCH]
            marks = ",".join("?" * len(batch))
            found.update(self._db.execute(f"SELECT pair, score FROM scores WHERE pair IN ({marks})", batch))
        return found

    def put(self, scores: dict[bytes, float]) -> None:
        with self._db:  # one transaction: all of the chunk or none of it
            self._db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?)", scores.items())

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
