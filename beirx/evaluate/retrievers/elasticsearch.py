"""BM25 on an Elasticsearch or OpenSearch cluster, for corpora of any size (MS MARCO, DBPedia, FEVER).

Reproduces BEIR's Elasticsearch baseline (Thakur et al. 2021) and BEIR-PL's (Wojtasik et al. 2024): one
index per dataset with title and text fields, Lucene's BM25 (k1=1.2, b=0.75 by default, set in the
index's similarity), and BEIR's ``multi_match`` ``best_fields`` query with ``tie_breaker`` 0.5. The
settings, mappings and queries come from :mod:`es_bodies`; the cluster calls from :mod:`es_cluster`.

Analysis (``analysis``):
- ``server`` (default): the cluster analyses with the language pack's analyzer (built-in language
  analyzer or custom chain; Polish needs the analysis-stempel plugin, checked before indexing);
- ``client``: beirx analyses with the pack and the cluster only splits on spaces, so the indexed terms
  equal the embedded BM25's (:mod:`beirx.evaluate.retrievers.bm25`) and no plugin is needed.

Re-runs: the index name hashes the dataset checksum, the language pack and the full index body, so a
re-run finds its index and two datasets never share one. The mapping's ``_meta`` is written with
``complete: false`` at creation and set to ``complete: true`` with the document count only after every
document is indexed and refreshed; an index that is incomplete or whose count differs (an interrupted
build) is deleted and rebuilt.

Search: ``_msearch`` in batches, each hit list sorted by score then document ID descending (trec_eval's
order, so ties at the cut match the embedded BM25). ``k`` above the result window (10,000) is paged with
``search_after`` inside a point in time; where the cluster has no point-in-time API (OpenSearch < 2.4)
the same ``search_after`` paging runs without one, which is exact here because the index does not change
while it is searched and the document-ID tie-break makes the order total.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import replace
from typing import Any

from beirx.argtypes import non_negative_float, non_negative_int, positive_float, positive_int
from beirx.checksums import cache_key
from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.errors import BeirxError
from beirx.evaluate.retrievers import bm25_conventions, es_bodies
from beirx.evaluate.retrievers.base import Retriever
from beirx.evaluate.runs import Run
from beirx.language_packs import LanguagePack
from beirx.options import Option
from beirx.progress import progress, skip
from beirx.redact import redact_url

log = logging.getLogger(__name__)

ENV_URL = "BEIRX_ES_URL"
DEFAULT_URL = "http://localhost:9200"
_INDEX_FORMAT = 1
_NO_PIT_STATUSES = (400, 404, 405, 501)  # what clusters without a point-in-time API answer
# How Elasticsearch/OpenSearch reject an analysis component they do not have (e.g. stempel's polish_stem).
_ANALYSIS_ERROR = re.compile(r"unknown (filter|analyzer|tokenizer|char_filter) type|"
                             r"failed to find (global )?(filter|analyzer|tokenizer|char_filter)", re.IGNORECASE)


class ElasticsearchRetriever(Retriever):
    name = "elasticsearch"
    device_name = "remote"
    OPTIONS = (
        Option("url", flag="--es-url", help=f"cluster URL (default ${ENV_URL} or {DEFAULT_URL}); credentials come "
                                            "from the environment: BEIRX_ES_API_KEY, or BEIRX_ES_USER and "
                                            "BEIRX_ES_PASSWORD"),
        Option("analysis", choices=es_bodies.ANALYSIS_MODES, default="server", flag="--es-analysis",
               help="server: the cluster analyses with the language pack's analyzer; client: beirx analyses and "
                    "the cluster indexes the tokens (no plugins needed)"),
        Option("ca_certs", flag="--es-ca-certs", metavar="PEM", help="CA certificate(s) for an https cluster"),
        Option("verify", switch=True, default=True, flag="--es-verify",
               help="verify the cluster's TLS certificate (default yes)"),
        Option("shards", positive_int, default=1, flag="--es-shards", help="primary shards of a new index"),
        Option("replicas", non_negative_int, default=0, flag="--es-replicas", help="replicas per shard (default 0)"),
        Option("index_prefix", default="beirx", flag="--es-index-prefix", help="prefix of index names"),
        Option("timeout", positive_float, default=120.0, flag="--es-timeout", help="request timeout in seconds"),
        Option("bulk_size", positive_int, default=500, flag="--es-bulk-size", help="documents per bulk request"),
        Option("msearch_batch", positive_int, default=64, flag="--es-msearch-batch", help="queries per _msearch"),
        Option("bulk_retries", non_negative_int, default=8, flag=""),
        Option("bulk_backoff", non_negative_float, default=2.0, flag=""),
        Option("page_size", positive_int, default=10_000, flag=""),
        Option("keep_alive", default="5m", flag=""),
        # BM25's flags (--k1, --b, --fields, --tie-breaker), with a cluster's defaults
        *(replace(option, default=bm25_conventions.DEFAULTS[option.name]) for option in bm25_conventions.OPTIONS
          if option.name in ("k1", "b", "tie_breaker", "fields")),
    )

    @classmethod
    def flag_options(cls) -> tuple[Option, ...]:
        """Its own and every BM25 convention's (a ``--bm25-preset`` included)."""
        return (*cls.OPTIONS, *bm25_conventions.OPTIONS)

    @classmethod
    def flag_params(cls, given) -> dict[str, Any]:
        """Constructor parameters from the options given as flags; options at their defaults stay out of the
        system tag (and out of result file names), except the analysis, fields, k1 and b. k1, b, fields and the
        tie-breaker are the BM25 flags' (a ``--bm25-preset`` included); a cluster always scores with Lucene's
        norms and best_fields."""
        bm25 = bm25_conventions.settings_given(given)
        if bm25["length_norm"] != "lucene" or (bm25["fields"] == "multifield" and bm25["combine"] != "best_fields"):
            raise BeirxError("--retriever elasticsearch scores with Lucene's length norms and combines fields as "
                             "best_fields: --length-norm exact and --multifield-combine sum (pyserini-multifield) "
                             "are for --retriever bm25")
        params: dict[str, Any] = {"analysis": given.get("analysis", "server"), "fields": bm25["fields"],
                                  "k1": bm25["k1"], "b": bm25["b"]}
        if bm25["fields"] == "multifield" and bm25["tie_breaker"] != bm25_conventions.DEFAULTS["tie_breaker"]:
            params["tie_breaker"] = bm25["tie_breaker"]
        own = ("url", "ca_certs", "verify", "shards", "replicas", "index_prefix", "timeout", "bulk_size",
               "msearch_batch")
        params.update(super().flag_params({key: given[key] for key in own if key in given}))
        return params

    def __init__(self, pack: LanguagePack, *, url: str | None = None, analysis: str = "server", fields: str = "multifield",
                 k1: float = 1.2, b: float = 0.75, tie_breaker: float = 0.5, shards: int = 1, replicas: int = 0,
                 index_prefix: str = "beirx", ca_certs: str | None = None, verify: bool = True,
                 timeout: float = 120.0, bulk_size: int = 500, bulk_retries: int = 8, bulk_backoff: float = 2.0,
                 msearch_batch: int = 64, page_size: int = 10_000, keep_alive: str = "5m",
                 use_cache: bool = True, show_progress: bool = True):
        if analysis not in es_bodies.ANALYSIS_MODES:
            raise BeirxError(f"--es-analysis must be one of {', '.join(es_bodies.ANALYSIS_MODES)}, got {analysis!r}")
        if fields not in es_bodies.FIELD_MODES:
            raise BeirxError(f"--fields must be one of {', '.join(es_bodies.FIELD_MODES)}, got {fields!r}")
        if shards < 1 or replicas < 0:
            raise BeirxError(f"need --es-shards >= 1 and --es-replicas >= 0, got {shards} and {replicas}")
        self.pack = pack
        self.url = url or os.environ.get(ENV_URL) or DEFAULT_URL
        self.analysis, self.fields = analysis, fields
        self.k1, self.b, self.tie_breaker = float(k1), float(b), float(tie_breaker)
        self.shards, self.replicas, self.index_prefix = int(shards), int(replicas), index_prefix
        self.ca_certs, self.verify, self.timeout = ca_certs, verify, float(timeout)
        self.bulk_size, self.bulk_retries, self.bulk_backoff = int(bulk_size), int(bulk_retries), float(bulk_backoff)
        self.msearch_batch, self.page_size, self.keep_alive = int(msearch_batch), int(page_size), keep_alive
        self.use_cache, self.show_progress = use_cache, show_progress
        self.index_name: str | None = None
        self.loaded_from_cache = False
        self.used_point_in_time: bool | None = None
        self._cluster = None
        self._similarity: dict[str, Any] | None = None

    # -- description ---------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        description: dict[str, Any] = {
            "retriever": self.name, "analysis": self.analysis, "analyzer": self.pack.code,
            "index_analysis": es_bodies.analysis_settings(self.pack, self.analysis) if self.analysis == "server"
            else "whitespace (tokens from the language pack)",
            "k1": self.k1, "b": self.b, "fields": self.fields,
            "tie_breaker": self.tie_breaker if self.fields == "multifield" else None,
            "query": "multi_match best_fields over title, text" if self.fields == "multifield" else "match contents",
            "shards": self.shards, "replicas": self.replicas, "search_type": self._search_type() or "query_then_fetch",
            "index": self.index_name, "url": redact_url(self.url),
        }
        if self._cluster is not None:
            description["server"] = self._cluster.describe()
        if self._similarity is not None:
            description["index_similarity"] = self._similarity  # as the cluster reports it
        if self.used_point_in_time is not None:
            description["deep_paging"] = "search_after in a point in time" if self.used_point_in_time \
                else "search_after without a point in time"
        return description

    def _search_type(self) -> str | None:
        # With several shards each shard would score with its own statistics; DFS gathers them first, so
        # scores equal a one-shard index's.
        return "dfs_query_then_fetch" if self.shards > 1 else None

    @property
    def cluster(self):
        if self._cluster is None:
            from beirx.evaluate.retrievers.es_cluster import connect

            self._cluster = connect(self.url, ca_certs=self.ca_certs, verify=self.verify, timeout=self.timeout)
            log.info("connected to %s %s at %s", self._cluster.info.distribution, self._cluster.info.version,
                     self._cluster.url)
        return self._cluster

    # -- indexing ------------------------------------------------------------------------------
    def _index_body(self, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        return es_bodies.index_body(self.pack, analysis=self.analysis, fields=self.fields, k1=self.k1, b=self.b,
                                    shards=self.shards, replicas=self.replicas, meta=meta)

    def index(self, dataset: BeirDataset) -> None:
        body = self._index_body()
        body["settings"].pop("number_of_replicas")  # replicas do not change what is indexed
        key = cache_key(_INDEX_FORMAT, dataset.checksum(), self.pack.describe(), body)
        self.index_name = es_bodies.index_name(self.index_prefix, dataset.name, self.pack.code, self.analysis, key)
        meta = {"complete": False, "key": key, "dataset": dataset.name, "dataset_checksum": dataset.checksum(),
                "language_pack": self.pack.code, "analysis": self.analysis, "fields": self.fields}
        if self._reusable(self.index_name, meta):
            self.loaded_from_cache = True
            log.info("reusing complete index %s", self.index_name)
        else:
            self.loaded_from_cache = False
            self._build(dataset, meta)
        self._similarity = self.cluster.settings(self.index_name).get("similarity", {}).get(es_bodies.SIMILARITY)

    def _reusable(self, name: str, meta: dict[str, Any]) -> bool:
        """True for a complete index of this dataset and settings; anything else under the name is deleted."""
        cluster = self.cluster
        if not cluster.exists(name):
            return False
        if self.use_cache:
            found = cluster.meta(name)
            if found.get("complete") and found.get("key") == meta["key"] \
                    and found.get("dataset_checksum") == meta["dataset_checksum"]:
                count = cluster.count(name)
                if count == found.get("doc_count"):
                    replicas = int(cluster.settings(name).get("number_of_replicas", self.replicas))
                    if replicas != self.replicas:
                        cluster.put_settings(name, {"number_of_replicas": self.replicas})
                    return True
                log.warning("index %s holds %d documents but %s were indexed: rebuilding it", name, count,
                            found.get("doc_count"))
            else:
                log.warning("index %s is incomplete (an earlier build did not finish): rebuilding it", name)
        cluster.delete(name)
        return False

    def _check_plugins(self) -> None:
        needed = set(getattr(self.pack, "es_plugins", ()) or ()) if self.analysis == "server" else set()
        if not needed:
            return
        installed = self.cluster.plugins()
        if installed is None:  # not allowed to list plugins: index creation will tell
            return
        missing = sorted(needed - installed)
        if missing:
            raise BeirxError(_plugin_message(self.pack, missing, self.cluster.is_opensearch))

    def _build(self, dataset: BeirDataset, meta: dict[str, Any]) -> None:
        from beirx.evaluate.retrievers.es_cluster import ServerError

        cluster, name = self.cluster, self.index_name
        self._check_plugins()
        try:
            cluster.create(name, self._index_body(meta))
        except ServerError as exc:
            if _is_analysis_error(exc.reason):
                raise BeirxError(_plugin_message(self.pack, sorted(getattr(self.pack, "es_plugins", ()) or ()),
                                                 cluster.is_opensearch, exc.reason)) from exc
            raise
        analyze = self.pack.analyzer() if self.analysis == "client" else None
        docs = progress(dataset.iter_corpus(), desc=f"index {dataset.name} ({self.pack.code}, {self.analysis} "
                        "analysis)", unit="doc", enabled=self.show_progress)
        actions = ({"_index": name, "_id": doc.id, "_source": es_bodies.document(doc, self.fields, analyze)}
                   for doc in docs)
        created = updated = 0
        for _, item in cluster.bulk(actions, chunk_size=self.bulk_size, max_retries=self.bulk_retries,
                                    initial_backoff=self.bulk_backoff):
            result = next(iter(item.values()), {}).get("result")
            if result == "updated":
                updated += 1
            else:
                created += 1
        if updated:
            log.warning("%s: %d documents repeat an earlier document ID; the last one of each is indexed",
                        dataset.name, updated)
        cluster.put_settings(name, {"refresh_interval": None})  # back to the cluster default
        cluster.refresh(name)
        count = cluster.count(name)
        if count != created:
            raise BeirxError(f"index {name}: {created} documents were sent but the cluster holds {count}; the "
                             "index stays marked incomplete and is rebuilt on the next run")
        cluster.put_meta(name, {**meta, "complete": True, "doc_count": count})  # written last: the completion mark
        log.info("indexed %d documents into %s", count, name)

    # -- search --------------------------------------------------------------------------------
    def _query_text(self, query: Query) -> str:
        if self.analysis == "client":
            return " ".join(self.pack.analyze(query.text))
        return query.text.strip()

    def search(self, queries: dict[str, Query], k: int) -> Run:
        if self.index_name is None:
            raise BeirxError("Elasticsearch index not ready: call index(dataset) first")
        texts = {qid: self._query_text(q) for qid, q in queries.items()}
        run: Run = {qid: {} for qid in queries}  # queries with no terms match nothing, as in Elasticsearch
        todo = [qid for qid, text in texts.items() if text]
        bar = progress(total=len(queries), desc="Elasticsearch search", unit="q", enabled=self.show_progress)
        skip(bar, len(queries) - len(todo))  # no terms: nothing to send
        if k <= self.page_size:
            for start in range(0, len(todo), self.msearch_batch):
                batch = todo[start:start + self.msearch_batch]
                run.update(self._msearch({qid: texts[qid] for qid in batch}, k))
                bar.update(len(batch))
        elif todo:
            self._deep_search(todo, texts, k, run, bar)
        bar.close()
        return run

    def _header(self) -> dict[str, Any]:
        header: dict[str, Any] = {"index": self.index_name}
        if self._search_type():
            header["search_type"] = self._search_type()
        return header

    def _msearch(self, texts: dict[str, str], k: int) -> Run:
        searches: list[dict[str, Any]] = []
        for text in texts.values():
            searches += [self._header(), es_bodies.search_body(text, fields=self.fields,
                                                               tie_breaker=self.tie_breaker, size=k)]
        responses = self.cluster.msearch(searches)
        run: Run = {}
        for qid, response in zip(texts, responses):
            if "error" in response:
                from beirx.evaluate.retrievers.es_cluster import error_reason

                raise BeirxError(f"Elasticsearch search for query {qid!r} failed: {error_reason(response)}")
            run[qid] = _hits(response)
        return run

    def _deep_search(self, todo: list[str], texts: dict[str, str], k: int, run: Run, bar) -> None:
        """``search_after`` pages of ``page_size`` (the result window) per query, in one point in time."""
        from beirx.evaluate.retrievers.es_cluster import ServerError

        pit = None
        try:
            pit = self.cluster.open_pit(self.index_name, self.keep_alive)
        except ServerError as exc:
            if exc.status not in _NO_PIT_STATUSES:
                raise
            log.info("no point-in-time API (%s): paging with search_after on the unchanging index", exc.reason)
        self.used_point_in_time = pit is not None
        params = {"search_type": self._search_type()} if self._search_type() else {}
        try:
            for qid in todo:
                docs: dict[str, float] = {}
                after = None
                while len(docs) < k:
                    size = min(self.page_size, k - len(docs))
                    body = es_bodies.search_body(texts[qid], fields=self.fields, tie_breaker=self.tie_breaker,
                                                 size=size)
                    if after is not None:
                        body["search_after"] = after
                    if pit is not None:
                        body["pit"] = {"id": pit, "keep_alive": self.keep_alive}
                        response = self.cluster.search(body, **params)
                        pit = response.get("pit_id", pit)
                    else:
                        response = self.cluster.search(body, index=self.index_name, **params)
                    hits = response["hits"]["hits"]
                    docs.update(_hits(response))
                    if len(hits) < size:
                        break
                    after = hits[-1]["sort"]
                run[qid] = docs
                bar.update(1)
        finally:
            if pit is not None:
                self.cluster.close_pit(pit)


def _hits(response: dict[str, Any]) -> dict[str, float]:
    """``{doc_id: score}``; with a sort the score is also the first sort value."""
    out: dict[str, float] = {}
    for hit in response["hits"]["hits"]:
        score = hit.get("_score")
        out[hit["_id"]] = float(score if score is not None else hit["sort"][0])
    return out


def _is_analysis_error(reason: str) -> bool:
    return _ANALYSIS_ERROR.search(reason) is not None


def _plugin_message(pack, plugins: list[str], opensearch: bool, reason: str = "") -> str:
    tool = "bin/opensearch-plugin" if opensearch else "bin/elasticsearch-plugin"
    what = f"plugin(s) {', '.join(plugins)}" if plugins else "an analysis plugin"
    install = "; ".join(f"{tool} install {p}" for p in plugins) or f"{tool} install <plugin>"
    cause = f" (server: {reason})" if reason else ""
    return (f"the cluster cannot build the '{pack.code}' analyzer{cause}: it needs {what}. Install on every node "
            f"and restart ({install}), or run with --es-analysis client to analyse in beirx and index the tokens")
