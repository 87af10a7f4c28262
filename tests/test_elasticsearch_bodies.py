"""Elasticsearch backend without a server: generated settings, mappings, documents and queries for several
language packs, index names, CLI parameters, credentials, and how connect() reads what the server is
(against small fake servers on 127.0.0.1)."""

from __future__ import annotations

import argparse
import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from beirx.data.records import Doc
from beirx.errors import BeirxError, MissingExtraError
from beirx.evaluate.retrievers import RETRIEVERS, es_bodies
from beirx.evaluate.retrievers import elasticsearch as es_retriever
from beirx.evaluate.retrievers.es_cluster import auth_headers, connect, error_reason, redact_url
from beirx.language_packs import get_pack
from extras import needs

PACKS = ["pl", "en", "es", "de", "xx"]  # "xx": an unknown code gets the generic pack


@pytest.fixture(params=PACKS)
def pack(request):
    return get_pack(request.param)


def _referenced(analyzer: dict, kind: str) -> list[str]:
    names = analyzer.get(kind, [])
    return [names] if isinstance(names, str) else list(names)


def test_server_mode_uses_the_packs_analyzer_on_every_text_field(pack):
    body = es_bodies.index_body(pack, analysis="server", fields="multifield", k1=0.9, b=0.4, shards=3, replicas=1)
    settings, mappings = body["settings"], body["mappings"]
    assert settings["analysis"] == pack.es_settings()["analysis"]
    assert pack.es_analyzer_name == "beirx_text" and "beirx_text" in settings["analysis"]["analyzer"]
    assert settings["similarity"] == {"beirx_bm25": {"type": "BM25", "k1": 0.9, "b": 0.4}}
    assert (settings["number_of_shards"], settings["number_of_replicas"], settings["refresh_interval"]) == (3, 1, "-1")
    props = mappings["properties"]
    assert set(props) == {"doc_id", "title", "text"}
    assert props["doc_id"] == {"type": "keyword"}
    for field in ("title", "text"):
        assert props[field] == {"type": "text", "analyzer": "beirx_text", "similarity": "beirx_bm25",
                                "index_options": "freqs"}
    assert mappings["dynamic"] == "strict"
    # A custom analyzer may only use components the same settings define or Elasticsearch builds in.
    analysis = settings["analysis"]
    analyzer = analysis["analyzer"]["beirx_text"]
    if analyzer.get("type") == "custom":
        for kind, section in (("filter", "filter"), ("char_filter", "char_filter")):
            for name in _referenced(analyzer, kind):
                assert name in analysis.get(section, {}) or name in BUILT_IN[kind], (pack.code, kind, name)


BUILT_IN = {"filter": {"lowercase", "asciifolding", "elision", "porter_stem", "kstem", "german_normalization",
                       "polish_stem", "apostrophe", "decimal_digit", "cjk_width", "cjk_bigram", "arabic_normalization",
                       "persian_normalization", "indic_normalization", "sorani_normalization",
                       "scandinavian_normalization", "serbian_normalization", "classic", "trim", "unique",
                       "icu_folding", "icu_normalizer", "hindi_normalization", "bengali_normalization"},
            "char_filter": {"html_strip"}}


def test_polish_needs_stempel_and_the_others_no_plugin():
    assert "analysis-stempel" in get_pack("pl").es_plugins
    assert "polish" in json.dumps(get_pack("pl").es_settings())
    for code in ("en", "es", "de", "xx"):
        assert not get_pack(code).es_plugins, code


def test_client_mode_indexes_the_packs_tokens_with_a_bare_whitespace_analyzer(pack):
    body = es_bodies.index_body(pack, analysis="client", fields="flat", k1=1.2, b=0.75, shards=1, replicas=0)
    assert body["settings"]["analysis"] == {
        "analyzer": {"beirx_tokens": {"type": "custom", "tokenizer": "whitespace", "filter": []}}}
    assert body["mappings"]["properties"]["contents"]["analyzer"] == "beirx_tokens"
    assert set(body["mappings"]["properties"]) == {"doc_id", "contents"}
    doc = Doc("d7", "Koty polują na myszy; the cats' running über Straßen.", title="Zwierzęta / Animals")
    source = es_bodies.document(doc, "flat", pack.analyzer())
    assert source == {"doc_id": "d7", "contents": " ".join(pack.analyze(f"{doc.title} {doc.text}"))}
    assert all(" " not in tok and tok == tok.strip() for tok in pack.analyze(doc.text))


def test_documents_leave_out_empty_fields():
    doc = Doc("d1", "body words", title="")
    assert es_bodies.document(doc, "multifield") == {"doc_id": "d1", "text": "body words"}
    assert es_bodies.document(Doc("d2", "x", title="T"), "multifield") == {"doc_id": "d2", "title": "T", "text": "x"}
    assert es_bodies.document(doc, "flat") == {"doc_id": "d1", "contents": " body words"}
    stop_only = es_bodies.document(Doc("d3", "the", title="a"), "multifield", lambda text: [])
    assert stop_only == {"doc_id": "d3"}


def test_queries_are_beirs_best_fields_or_a_single_field_match():
    body = es_bodies.search_body("cat hunt", fields="multifield", tie_breaker=0.5, size=1000)
    assert body == {
        "query": {"multi_match": {"query": "cat hunt", "type": "best_fields", "fields": ["title", "text"],
                                  "tie_breaker": 0.5}},
        "size": 1000, "sort": [{"_score": {"order": "desc"}}, {"doc_id": {"order": "desc"}}],
        "_source": False, "track_total_hits": False}
    flat = es_bodies.search_body("cat", fields="flat", tie_breaker=0.5, size=10)
    assert flat["query"] == {"match": {"contents": {"query": "cat"}}}


def test_index_names_are_valid_and_keyed():
    name = es_bodies.index_name("BEIRX", "CQADupStack/Android x#y", "pl", "server", "0123abcd")
    assert name == "beirx-cqadupstack_android_x_y-pl-server-0123abcd"
    long = es_bodies.index_name("_p", "a" * 400, "en", "client", "k")
    assert len(long.encode()) <= 255 and not long.startswith(("_", "-", "+"))


def test_registered_and_cli_parameters():
    assert "elasticsearch" in RETRIEVERS
    assert RETRIEVERS.get("elasticsearch") is es_retriever.ElasticsearchRetriever
    from beirx.cli.flags import add_options, given

    cls = es_retriever.ElasticsearchRetriever
    parser = argparse.ArgumentParser()
    add_options(parser.add_argument_group("es"), cls.flag_options(), seen=set())
    defaults = cls.flag_params(given(parser.parse_args([]), cls.flag_options()))
    assert defaults == {"analysis": "server", "fields": "multifield", "k1": 1.2, "b": 0.75}
    args = parser.parse_args(["--es-url", "https://es:9243", "--es-analysis", "client", "--no-es-verify",
                              "--es-shards", "4", "--es-replicas", "1", "--fields", "flat", "--k1", "0.9"])
    assert cls.flag_params(given(args, cls.flag_options())) == {
        "analysis": "client", "fields": "flat", "k1": 0.9, "b": 0.75, "url": "https://es:9243", "verify": False,
        "shards": 4, "replicas": 1}


def test_bad_parameters_are_refused():
    pack = get_pack("en")
    with pytest.raises(BeirxError, match="--es-analysis"):
        es_retriever.ElasticsearchRetriever(pack, analysis="both")
    with pytest.raises(BeirxError, match="--fields"):
        es_retriever.ElasticsearchRetriever(pack, fields="title")
    with pytest.raises(BeirxError, match="--es-shards"):
        es_retriever.ElasticsearchRetriever(pack, shards=0)


def test_credentials_come_from_the_environment(monkeypatch):
    for var in ("BEIRX_ES_API_KEY", "BEIRX_ES_USER", "BEIRX_ES_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    assert auth_headers() == {}
    monkeypatch.setenv("BEIRX_ES_USER", "elastic")
    with pytest.raises(BeirxError, match="BEIRX_ES_PASSWORD"):
        auth_headers()
    monkeypatch.setenv("BEIRX_ES_PASSWORD", "s3cret")
    assert auth_headers() == {"authorization": "Basic " + base64.b64encode(b"elastic:s3cret").decode()}
    monkeypatch.setenv("BEIRX_ES_API_KEY", "ZW5jb2RlZA==")
    assert auth_headers() == {"authorization": "ApiKey ZW5jb2RlZA=="}
    # one redaction rule everywhere (issue 14): the user stays readable, the password never appears
    assert redact_url("https://elastic:s3cret@es.example:9243/prefix") == "https://elastic:***@es.example:9243/prefix"


def test_error_reason_walks_root_causes():
    body = {"error": {"type": "illegal_argument_exception", "reason": "outer",
                      "root_cause": [{"type": "illegal_argument_exception", "reason": "Unknown filter type [polish_stem]"}],
                      "caused_by": {"type": "x", "reason": "inner"}}, "status": 400}
    assert error_reason(body) == ("illegal_argument_exception: outer; x: inner; "
                                  "illegal_argument_exception: Unknown filter type [polish_stem]")


# -- connect() against fake servers -------------------------------------------------------------------
class _Fake(BaseHTTPRequestHandler):
    root: dict = {}
    status = 200
    reject_compat = False
    seen: list = []

    def do_GET(self):  # noqa: N802 (http.server API)
        type(self).seen.append(self.headers.get("authorization"))
        accept = self.headers.get("accept", "")
        if self.reject_compat and "compatible-with=9" in accept:
            status, body = 400, {"error": {"type": "media_type_header_exception",
                                           "reason": "Invalid media-type value on headers [Accept, Content-Type]",
                                           "caused_by": {"type": "status_exception",
                                                         "reason": "Accept version must be either version 8 or 7, but found 9"}},
                                 "status": 400}
        else:
            status, body = self.status, self.root
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        if self.root.get("version", {}).get("distribution") != "opensearch":
            self.send_header("x-elastic-product", "Elasticsearch")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_server():
    needs("elasticsearch", "es")  # beirx speaks to it through the client
    servers = []

    def start(root: dict, status: int = 200, reject_compat: bool = False):
        handler = type("Handler", (_Fake,), {"root": root, "status": status, "reject_compat": reject_compat,
                                             "seen": []})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append((server, handler))
        return f"http://127.0.0.1:{server.server_address[1]}", handler

    yield start
    for server, _ in servers:
        server.shutdown()
        server.server_close()


def test_an_8x_server_with_the_9x_client_gets_the_pip_command(fake_server):
    import elasticsearch

    if int(elasticsearch.__versionstr__.split(".")[0]) < 9:
        pytest.skip("the installed client already matches an 8.x server")
    url, _ = fake_server({"version": {"number": "8.13.4", "lucene_version": "9.10.0"}}, reject_compat=True)
    with pytest.raises(BeirxError, match=r"Elasticsearch 8\.13\.4.*pip install 'elasticsearch>=8,<9'"):
        connect(url)


def test_refused_credentials_name_the_environment_variables(fake_server, monkeypatch):
    monkeypatch.setenv("BEIRX_ES_API_KEY", "abc")
    url, _ = fake_server({"error": "unauthorized"}, status=401)
    with pytest.raises(BeirxError, match="BEIRX_ES_API_KEY"):
        connect(url)


def test_credentials_are_sent_and_the_server_described(fake_server, monkeypatch):
    monkeypatch.setenv("BEIRX_ES_API_KEY", "a2V5")
    url, handler = fake_server({"version": {"number": "9.1.0", "lucene_version": "10.2.2"}})
    cluster = connect(url)
    assert cluster.describe()["distribution"] == "elasticsearch" and cluster.info.version == "9.1.0"
    assert cluster.describe()["client"].startswith("elasticsearch-py ")
    # the plain-JSON probe, then the client's own GET /, both with the key
    assert handler.seen == ["ApiKey a2V5", "ApiKey a2V5"]


def test_opensearch_needs_the_optional_client(fake_server, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "opensearchpy", None)  # as if opensearch-py were not installed
    url, _ = fake_server({"version": {"distribution": "opensearch", "number": "2.15.0", "lucene_version": "9.10.0"}})
    with pytest.raises(MissingExtraError, match="opensearchpy"):
        connect(url)


def test_something_that_is_not_elasticsearch_is_named(fake_server):
    url, _ = fake_server({"hello": "world"})
    with pytest.raises(BeirxError, match="does not answer like Elasticsearch"):
        connect(url)


def test_unreachable_cluster_is_a_clear_error():
    needs("elasticsearch", "es")
    with pytest.raises(BeirxError, match="cannot reach Elasticsearch at http://127.0.0.1:9"):
        connect("http://127.0.0.1:9", timeout=2)
