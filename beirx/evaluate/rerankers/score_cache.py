"""An on-disk cache of reranker scores, one SQLite file per scoring configuration.

File: ``$BEIRX_HOME/runs/rerank/<reranker>-<hash of the configuration>.sqlite``; the configuration
(model, revision, maximum lengths, prompt, relevance tokens, precision...) is also stored inside, so a
file can be traced back to what produced it.

Pairs are keyed by the *content* the model reads (query text, document title and text), not by IDs or
a dataset checksum: a score is reused wherever the same texts meet again (other first stages, depths,
splits, datasets) and can never be reused for changed texts. Opened as every shared cache is
(:func:`beirx.sqlite_store.connect`: a damaged file is moved aside, WAL, a busy timeout); each chunk is
committed in one transaction, so a killed run keeps every chunk it finished and concurrent runs share a file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from beirx.data.records import Doc, Query
from beirx.sqlite_store import KeyValueCache, WriteTransaction


def pair_key(query: Query, doc: Doc) -> bytes:
    """A 128-bit digest of the texts a reranker sees for this pair."""
    blob = "\x1f".join((query.text, doc.title, doc.text)).encode("utf-8")
    return hashlib.blake2b(blob, digest_size=16).digest()


class PairScoreCache(KeyValueCache):
    """Scores by :func:`pair_key`; the scoring configuration is kept in the file's ``meta`` table."""

    def __init__(self, path: Path | str, identity: dict[str, Any]):
        super().__init__(path, "reranker score cache", "scores", key="pair", value="score", key_type="BLOB",
                         value_type="REAL NOT NULL")
        with WriteTransaction(self._conn):
            self._conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?)",
                              (json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str),))

    @classmethod
    def for_reranker(cls, name: str, identity: dict[str, Any]) -> "PairScoreCache":
        from beirx.checksums import cache_key
        from beirx.data.cache import cache_dir

        return cls(cache_dir("runs") / "rerank" / f"{name}-{cache_key(identity)}.sqlite", identity)
