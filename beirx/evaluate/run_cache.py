"""First-stage runs stored once and reused as reranker candidates, under ``$BEIRX_HOME/runs``.

A run is keyed by the retriever's ``describe()`` (model, revision, parameters), the language pack, the
corpus checksum, the exact query set (IDs and texts), the depth and the identical-ID rule. So every
reranker compared on a dataset sees the very same candidates, even across separate commands (a GPU or a
library upgrade cannot shift them), and a grid never recomputes a first stage it has already finished.

Entries are TREC files (scores written with ``repr``, so reloading gives identical floats) plus a JSON
sidecar naming every judged query, so queries that retrieved nothing come back as empty rankings.
"""

from __future__ import annotations

import hashlib
import json
import logging

from beirx.atomic import write_json
from beirx.cache_integrity import file_digest, report_damaged
from beirx.data.cache import cache_dir
from beirx.data.records import Query
from beirx.errors import DataError
from beirx.evaluate.runs import Run, read_trec, write_trec

log = logging.getLogger(__name__)

RUN_CACHE_FORMAT = 2  # 2: the sidecar records the run's size and checksum


def queries_digest(queries: dict[str, Query]) -> str:
    """SHA-256 over the sorted ``(id, text)`` pairs: the query set a run answers."""
    blob = json.dumps(sorted((qid, q.text) for qid, q in queries.items()), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


class RunCache:
    """One cached run: ``<label>-<key>.trec`` and its ``.json`` sidecar."""

    def __init__(self, label: str, key: str):
        root = cache_dir("runs")
        self.path = root / f"{label}-{key}.trec"
        self.meta_path = root / f"{label}-{key}.json"

    def get(self) -> Run | None:
        """The stored run, or None when there is none or it is damaged (then reported; the caller recomputes)."""
        if not self.meta_path.is_file():
            return None
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
            problem = self._problem(meta)
            run = read_trec(self.path) if problem is None and self.path.is_file() else {}
        except (OSError, ValueError, RecursionError, DataError) as exc:
            problem = f"unreadable ({exc})"
        if problem is None and sum(map(len, run.values())) != meta["integrity"]["pairs"]:
            problem = "holds a different number of ranked documents than recorded"
        if problem is not None:
            report_damaged("cached run", self.path, problem)
            return None
        return {qid: run.get(qid, {}) for qid in meta["queries"]}

    def _problem(self, meta) -> str | None:
        if not isinstance(meta, dict) or not isinstance(meta.get("queries"), list):
            return "the sidecar has no query list"
        integrity = meta.get("integrity")
        if not isinstance(integrity, dict) or "pairs" not in integrity:
            return "the sidecar has no integrity record (older beirx or damaged)"
        if integrity["pairs"] == 0:
            return None
        if not self.path.is_file():
            return f"{self.path.name} is missing"
        if file_digest(self.path) != integrity.get("checksum"):
            return f"{self.path.name} does not match its recorded checksum"
        return None

    def put(self, run: Run, meta: dict) -> None:
        """Store ``run`` (the sidecar goes last: a run counts as cached only once both files exist)."""
        pairs = sum(map(len, run.values()))
        integrity: dict = {"pairs": pairs}
        if pairs:
            write_trec(self.path, run, tag="beirx-cache")
            integrity["checksum"] = file_digest(self.path)
        write_json(self.meta_path, {**meta, "format": RUN_CACHE_FORMAT, "queries": list(run), "integrity": integrity})
        log.info("cached run %s", self.path.name)
