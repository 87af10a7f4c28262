"""Request bodies for the Elasticsearch/OpenSearch BM25 backend: index settings, mappings and queries.

Pure functions (no server), so the exact JSON sent to a cluster is unit-tested for every language pack.

Index (BEIR's Elasticsearch set-up, Thakur et al. 2021, also used by BEIR-PL, Wojtasik et al. 2024):
- ``multifield``: fields ``title`` and ``text``; ``flat``: one field ``contents`` = title + " " + text.
- Every text field uses the custom similarity ``beirx_bm25`` (``type: BM25`` with the run's k1 and b), so
  the parameters live in the index settings, where the server applies and reports them.
- ``server`` analysis: the fields use the language pack's analyzer (``pack.es_settings()``, analyzer
  ``beirx_text``: a built-in language analyzer or a custom chain, e.g. Polish ``polish_stem`` from the
  analysis-stempel plugin).
- ``client`` analysis: beirx analyses text with the pack and sends the tokens joined by spaces; the
  server splits them with a bare ``whitespace`` tokenizer (no lowercasing, no filters), so the indexed
  terms are exactly the embedded BM25's and any cluster works without plugins.
- ``doc_id`` (keyword) repeats the document ID, to break score ties the way trec_eval/pytrec_eval do
  (document ID descending), which makes the top-k cut deterministic and equal to the embedded BM25's.

Query: BEIR's ``multi_match`` of type ``best_fields`` over title and text with ``tie_breaker`` 0.5, i.e.
``max_f s_f + 0.5 * (sum of the other fields' scores)``; a ``match`` on ``contents`` for ``flat``.
"""

from __future__ import annotations

import re
from typing import Any

ANALYSIS_MODES = ("server", "client")
FIELD_MODES = ("flat", "multifield")
SIMILARITY = "beirx_bm25"
CLIENT_ANALYZER = "beirx_tokens"
ID_FIELD = "doc_id"
# Score descending, then document ID descending: trec_eval's order, used everywhere in beirx (runs.py).
SORT = [{"_score": {"order": "desc"}}, {ID_FIELD: {"order": "desc"}}]

_INDEX_NAME_BAD = re.compile(r"[^a-z0-9._-]+")


def text_fields(fields: str) -> list[str]:
    return ["contents"] if fields == "flat" else ["title", "text"]


def analyzer_name(pack, analysis: str) -> str:
    return pack.es_analyzer_name if analysis == "server" else CLIENT_ANALYZER


def analysis_settings(pack, analysis: str) -> dict[str, Any]:
    """The ``analysis`` block: the pack's own (server mode) or a whitespace-only analyzer (client mode)."""
    if analysis == "server":
        return pack.es_settings()["analysis"]
    return {"analyzer": {CLIENT_ANALYZER: {"type": "custom", "tokenizer": "whitespace", "filter": []}}}


def index_body(pack, *, analysis: str, fields: str, k1: float, b: float, shards: int, replicas: int,
               meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """``PUT /<index>`` body. ``refresh_interval`` -1 speeds up bulk loading; it is reset once loaded."""
    analyzer = analyzer_name(pack, analysis)
    properties: dict[str, Any] = {ID_FIELD: {"type": "keyword"}}
    for name in text_fields(fields):
        # BM25 needs term frequencies only; positions would only serve phrase queries, which are never sent.
        properties[name] = {"type": "text", "analyzer": analyzer, "similarity": SIMILARITY, "index_options": "freqs"}
    return {
        "settings": {
            "number_of_shards": shards,
            "number_of_replicas": replicas,
            "refresh_interval": "-1",
            "similarity": {SIMILARITY: {"type": "BM25", "k1": k1, "b": b}},
            "analysis": analysis_settings(pack, analysis),
        },
        "mappings": {"dynamic": "strict", "_meta": {"beirx": meta or {}}, "properties": properties},
    }


def document(doc, fields: str, analyze=None) -> dict[str, Any]:
    """The ``_source`` of one corpus document; ``analyze`` (client mode) turns text into its tokens.

    Empty fields are left out: Lucene counts a field's document count and average length only over the
    documents that have it, which is also how the embedded BM25 counts them.
    """
    values = {"contents": f"{doc.title} {doc.text}"} if fields == "flat" else {"title": doc.title, "text": doc.text}
    source: dict[str, Any] = {ID_FIELD: doc.id}
    for name, value in values.items():
        if analyze is not None:
            value = " ".join(analyze(value)) if value else ""
        if value.strip():
            source[name] = value
    return source


def query_clause(text: str, fields: str, tie_breaker: float) -> dict[str, Any]:
    """BEIR's query (``multi_match`` best_fields, tie_breaker 0.5) or a single-field ``match`` for flat."""
    if fields == "flat":
        return {"match": {"contents": {"query": text}}}
    return {"multi_match": {"query": text, "type": "best_fields", "fields": text_fields(fields),
                            "tie_breaker": tie_breaker}}


def search_body(text: str, *, fields: str, tie_breaker: float, size: int) -> dict[str, Any]:
    """One search: top ``size`` by score then document ID (descending), IDs only, no hit counting."""
    return {"query": query_clause(text, fields, tie_breaker), "size": size, "sort": SORT, "_source": False,
            "track_total_hits": False}


def index_name(prefix: str, dataset_name: str, lang: str, analysis: str, key: str) -> str:
    """A valid index name (lowercase, no ``\\ / * ? " < > | , #`` or spaces, at most 255 bytes).

    ``key`` hashes the dataset checksum, the pack and the index body, so two datasets, packs or settings
    never share an index while a re-run with the same ones finds it.
    """
    readable = _INDEX_NAME_BAD.sub("_", f"{prefix}-{dataset_name}-{lang}-{analysis}".lower()).lstrip("-_+.")
    return f"{readable[:200]}-{key}"
