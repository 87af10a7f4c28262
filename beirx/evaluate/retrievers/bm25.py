"""Embedded BM25 (no server) with bm25s, the language pack's analyzer and Lucene's scoring.

Scoring is Lucene's BM25 (Robertson & Zaragoza 2009, as in Lucene >= 8 and Elasticsearch):
``idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))`` with ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``,
summed over query tokens (a repeated query token counts each time, as in an Elasticsearch ``match`` and
Anserini's bag-of-words query). ``dl`` is Lucene's one-byte length norm decoded (``--length-norm lucene``,
:mod:`length_norms`) or the true length (``exact``); ``avgdl`` is exact. Scores equal Lucene 8's
and 9's (tests/test_bm25_lucene.py runs real Lucene 8.7); Lucene before 8.0 multiplied them by ``k1 + 1``,
a constant that changes no ranking or metric.

Field modes and conventions (:mod:`bm25_conventions`, docs/bm25.md):
- ``flat``: one field, ``title + " " + text`` (Pyserini's BEIR "flat" index).
- ``multifield``: title and text indexed as separate fields, each with its own N and avgdl over the
  documents that have the field (Lucene's ``docCount`` and ``sumTotalTermFreq / docCount``), combined
  like Elasticsearch ``multi_match`` ``best_fields`` (``max_f s_f + tie_breaker * sum of the other
  fields' scores``, tie_breaker 0.5: BEIR's query, also BEIR-PL's) or summed (``sum``: Anserini and
  Pyserini multifield, one SHOULD clause per field).

Only documents with a positive score are returned (Elasticsearch never returns non-matching documents).

Indexing streams: each document is analysed and reduced at once to int32 (term id, tf) pairs
(:mod:`bm25_index`), so memory holds no token lists; search is bm25s's own.

Indexes persist under ``$BEIRX_HOME/indexes``, keyed by dataset checksum, language pack, k1, b, field
mode, length norm and bm25s version (not by the field combination, applied at search time), so a second
evaluation loads instead of re-indexing.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from beirx.atomic import atomic_dir
from beirx.cache_integrity import seal
from beirx.checksums import cache_key
from beirx.data.cache import cache_dir
from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.errors import BeirxError
from beirx.evaluate.knn import id_tie_ranks
from beirx.evaluate.retrievers import bm25_conventions
from beirx.evaluate.retrievers.base import Retriever
from beirx.evaluate.retrievers.bm25_index import PostingsBuilder
from beirx.evaluate.runs import Run
from beirx.language_packs import LanguagePack
from beirx.progress import progress

log = logging.getLogger(__name__)

_INDEX_FORMAT = 2  # 2: COMPLETE records every file's size and checksum


def _bm25s():
    """Import bm25s lazily; it sets its own logger to DEBUG on import, which beirx puts back to WARNING.

    bm25s imports scipy.sparse (a quarter of a cold SciFact run's CPU) only for its optional
    ``csc_backend="scipy"``; beirx builds the matrix itself and uses bm25s's numpy code, so scipy.sparse
    is hidden during the import (bm25s then records it as unavailable) unless something loaded it already.
    """
    if "bm25s" not in sys.modules and "scipy.sparse" not in sys.modules:
        sys.modules["scipy.sparse"] = None  # makes `import scipy.sparse` raise ImportError
        try:
            import bm25s
        finally:
            if sys.modules.get("scipy.sparse", 0) is None:
                del sys.modules["scipy.sparse"]
    import bm25s

    debugging = logging.getLogger().level == logging.DEBUG
    logging.getLogger("bm25s").setLevel(logging.DEBUG if debugging else logging.WARNING)
    return bm25s


class _FieldIndex:
    """One bm25s index over the documents that have a non-empty field, mapped back to corpus positions."""

    def __init__(self, bm25, positions: np.ndarray):
        self.bm25 = bm25
        self.positions = positions

    def scores(self, tokens: list[str], num_docs: int) -> np.ndarray | None:
        ids = self.bm25.get_tokens_ids(tokens)
        if not ids:
            return None
        full = np.zeros(num_docs, dtype=np.float32)
        full[self.positions] = self.bm25.get_scores_from_ids(ids)
        return full


class BM25Retriever(Retriever):
    name = "bm25"
    OPTIONS = bm25_conventions.OPTIONS

    @classmethod
    def flag_params(cls, given) -> dict[str, Any]:
        """k1, b and fields always (they name result files as before); the combination, tie-breaker and
        length norm only when they differ from the defaults, so default file names do not change."""
        settings = bm25_conventions.settings_given(given)
        params = {key: settings[key] for key in ("k1", "b", "fields")}
        optional = ("length_norm",) + (("combine", "tie_breaker") if settings["fields"] == "multifield" else ())
        params.update({key: settings[key] for key in optional if settings[key] != bm25_conventions.DEFAULTS[key]})
        return params

    @property
    def index_location(self) -> Path | None:
        return self.index_dir

    def __init__(self, pack: LanguagePack, k1: float | None = None, b: float | None = None, fields: str | None = None,
                 combine: str | None = None, tie_breaker: float | None = None, length_norm: str | None = None,
                 preset: str | None = None, use_cache: bool = True, show_progress: bool = True):
        """Unset values come from ``preset`` (:data:`bm25_conventions.PRESETS`), else beirx's defaults."""
        settings = bm25_conventions.bm25_settings(preset, k1=k1, b=b, fields=fields, combine=combine,
                                                  tie_breaker=tie_breaker, length_norm=length_norm)
        self.pack = pack
        self.k1, self.b, self.fields = settings["k1"], settings["b"], settings["fields"]
        self.combine, self.tie_breaker = settings["combine"], settings["tie_breaker"]
        self.length_norm = settings["length_norm"]
        self.use_cache = use_cache
        self.show_progress = show_progress
        self.doc_ids: list[str] = []
        self._fields: dict[str, _FieldIndex] = {}
        self.index_dir: Path | None = None
        self.loaded_from_cache = False
        self._id_rank: np.ndarray | None = None

    def describe(self) -> dict[str, Any]:
        multifield = self.fields == "multifield"
        return {**self._index_description(), "combine": self.combine if multifield else None,
                "tie_breaker": self.tie_breaker if multifield and self.combine == "best_fields" else None}

    def _index_description(self) -> dict[str, Any]:
        """What the index depends on (the field combination is applied at search time)."""
        bm25s = _bm25s()

        return {"retriever": self.name, "implementation": f"bm25s {bm25s.__version__} (method=lucene)",
                "k1": self.k1, "b": self.b, "fields": self.fields, "length_norm": self.length_norm,
                "analyzer": self.pack.code}

    # -- indexing ------------------------------------------------------------------------------
    def _field_names(self) -> tuple[str, ...]:
        return ("contents",) if self.fields == "flat" else ("title", "text")

    def index(self, dataset: BeirDataset) -> None:
        bm25s = _bm25s()

        key = cache_key(_INDEX_FORMAT, dataset.checksum(), self.pack.describe(), self.k1, self.b, self.fields,
                        self.length_norm, bm25s.__version__)
        safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", dataset.name)
        self.index_dir = cache_dir("indexes") / f"bm25-{safe_name}-{self.pack.code}-{key}"
        if not self.use_cache:
            self._build(dataset)
            return
        from beirx.data.download import file_lock

        # One process builds and publishes; the others wait and then load the verified result.
        with file_lock(self.index_dir.with_name(self.index_dir.name + ".lock")):
            if self.index_dir.exists() and self._load_verified(self.index_dir):
                self.loaded_from_cache = True
                log.info("loaded BM25 index from %s", self.index_dir)
                return
            self._build(dataset)
            self._save(self.index_dir)

    def _load_verified(self, source: Path) -> bool:
        """Load ``source`` if it is complete and undamaged (checksums, document count); else report it."""
        from beirx.cache_integrity import report_damaged, verify

        problem = verify(source, "COMPLETE")
        if problem is None:
            try:
                self._load(source)
            except (OSError, ValueError, KeyError, EOFError) as exc:
                problem = f"cannot be loaded ({type(exc).__name__}: {exc})"
        if problem is None:
            fields = set(json.loads((source / "COMPLETE").read_text(encoding="utf-8")).get("fields_indexed", []))
            if set(self._fields) != fields:
                problem = f"holds fields {sorted(self._fields)}, expected {sorted(fields)}"
        if problem is not None:
            report_damaged("BM25 index", source, problem)
            self.doc_ids, self._fields = [], {}
            return False
        return True

    def _build(self, dataset: BeirDataset) -> None:
        bm25s = _bm25s()

        analyze = self.pack.analyzer()
        names = self._field_names()
        postings = {f: PostingsBuilder() for f in names}
        self.doc_ids = []
        docs = progress(dataset.iter_corpus(), desc=f"analyse {dataset.name} ({self.pack.code})", unit="doc",
                        enabled=self.show_progress)
        for pos, doc in enumerate(docs):
            self.doc_ids.append(doc.id)
            if self.fields == "flat":
                postings["contents"].add(pos, analyze(f"{doc.title} {doc.text}"))
            else:
                if doc.title:
                    postings["title"].add(pos, analyze(doc.title))
                if doc.text:
                    postings["text"].add(pos, analyze(doc.text))
        self._fields = {}
        for field in names:
            if postings[field].num_docs:
                bm25 = postings[field].to_bm25s(bm25s, self.k1, self.b, self.length_norm)
                self._fields[field] = _FieldIndex(bm25, np.asarray(postings[field].positions, dtype=np.int64))
        log.info("indexed %d documents (%s)", len(self.doc_ids),
                 ", ".join(f"{f}: {postings[f].num_docs}" for f in names))
        self._id_rank = None

    def _save(self, target: Path) -> None:
        """Written through a temp folder, so a half-written index is never taken as complete."""
        with atomic_dir(target) as tmp:
            for field, fi in self._fields.items():
                fi.bm25.save(tmp / field, show_progress=False)
                np.save(tmp / field / "positions.npy", fi.positions)
            (tmp / "doc_ids.json").write_text(json.dumps(self.doc_ids, ensure_ascii=False), encoding="utf-8")
            seal(tmp, "COMPLETE", {**self._index_description(), "num_docs": len(self.doc_ids),
                                   "fields_indexed": sorted(self._fields)})  # written last: the completion marker

    def _load(self, source: Path) -> None:
        bm25s = _bm25s()

        self.doc_ids = json.loads((source / "doc_ids.json").read_text(encoding="utf-8"))
        self._id_rank = None
        self._fields = {}
        for field in self._field_names():
            if (source / field).is_dir():
                bm25 = bm25s.BM25.load(source / field, show_progress=False, verbosity=0)
                self._fields[field] = _FieldIndex(bm25, np.load(source / field / "positions.npy"))

    # -- search --------------------------------------------------------------------------------
    def score_all(self, text: str) -> np.ndarray | None:
        """Scores of every corpus document for one query text (None when no query token is indexed)."""
        tokens = self.pack.analyze(text)
        if not tokens:
            return None
        per_field = [s for s in (fi.scores(tokens, len(self.doc_ids)) for fi in self._fields.values()) if s is not None]
        if not per_field:
            return None
        if len(per_field) == 1:
            return per_field[0]
        stacked = np.vstack(per_field)
        if self.combine == "sum":
            return stacked.sum(axis=0)
        best = stacked.max(axis=0)
        return best + np.float32(self.tie_breaker) * (stacked.sum(axis=0) - best)

    def ranked(self, scores: np.ndarray, k: int) -> dict[str, float]:
        """:func:`top_k` of one query's scores, with this index's doc-ID ranks (sorted once per index)."""
        if self._id_rank is None:
            self._id_rank = id_tie_ranks(self.doc_ids)
        return top_k(scores, self.doc_ids, k, self._id_rank)

    def search(self, queries: dict[str, Query], k: int) -> Run:
        if not self.doc_ids:
            raise BeirxError("BM25 index is empty: call index(dataset) first")
        run: Run = {}
        for qid, query in progress(queries.items(), desc="BM25 search", unit="q", enabled=self.show_progress):
            scores = self.score_all(query.text)
            run[qid] = {} if scores is None else self.ranked(scores, k)
        return run


def top_k(scores: np.ndarray, doc_ids: list[str], k: int, id_rank: np.ndarray | None = None) -> dict[str, float]:
    """The ``k`` best positive scores in evaluation order: score descending, ties by higher doc ID first.

    Only positive scores are partitioned (``np.partition``), every tie at the cut is kept, then one
    ``np.lexsort`` on (score, doc-ID rank) orders the candidates and the first ``k`` are taken.
    """
    positive = np.flatnonzero(scores > 0)
    if positive.size > k:
        kth = np.partition(scores[positive], positive.size - k)[positive.size - k]
        positive = positive[scores[positive] >= kth]  # keep every tie at the boundary, then cut exactly
    if id_rank is None:
        id_rank = id_tie_ranks(doc_ids)
    chosen = positive[np.lexsort((-id_rank[positive], -scores[positive]))[:k]]
    return dict(zip(map(doc_ids.__getitem__, chosen.tolist()), scores[chosen].tolist()))
