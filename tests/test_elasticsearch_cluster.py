"""Elasticsearch backend against a server: noida-db started on 127.0.0.1 (always), and a real cluster when
BEIRX_ES_URL is set (credentials from BEIRX_ES_API_KEY or BEIRX_ES_USER/BEIRX_ES_PASSWORD).

noida-db scores are Lucene's BM25 times (k1 + 1) (see tests/elasticsearch_server.py); a real cluster's
are Lucene's. So every score check asserts ``es_score = c * expected`` with one constant c per run, c
being 1 or k1 + 1. noida-db also ignores the k1 and b of a similarity (it stores and reports them but
always scores with 1.2 and 0.75), so scores with other values are checked on a real cluster only.
"""

from __future__ import annotations

import os
import uuid

import pytest

from beirx.artifacts.results import ResultsDocument
from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.errors import BeirxError
from beirx.evaluate.runner import run_experiment
from beirx.evaluate.specs import SystemSpec
from beirx.evaluate.retrievers import es_cluster
from beirx.evaluate.retrievers.bm25 import BM25Retriever
from beirx.evaluate.retrievers.elasticsearch import ElasticsearchRetriever
from beirx.evaluate.runs import ranked
from beirx.language_packs import get_pack
from elasticsearch_server import noida_binary, noida_elasticsearch
from bm25_reference import WhitespacePack, lucene_bm25
from conftest import write_beir
from extras import needs

needs("elasticsearch", "es")  # every test here talks to a cluster through the client

NOIDA_URLS: set[str] = set()


@pytest.fixture(scope="module", params=["noida", "BEIRX_ES_URL"])
def es_url(request, tmp_path_factory):
    if request.param == "BEIRX_ES_URL":
        url = os.environ.get("BEIRX_ES_URL")
        if not url:
            pytest.skip("set BEIRX_ES_URL to also run these tests against a real cluster")
        yield url
        return
    if noida_binary() is None:
        pytest.skip("noida-db is not installed")
    with noida_elasticsearch(tmp_path_factory.mktemp("noida")) as url:
        NOIDA_URLS.add(url)
        yield url


@pytest.fixture
def prefix(es_url):
    """A unique index prefix per test; its indices are deleted afterwards (a real cluster stays clean)."""
    name = f"beirxtest{uuid.uuid4().hex[:10]}"
    yield name
    cluster = es_cluster.connect(es_url)
    for row in cluster.client.cat.indices(index=f"{name}-*", format="json"):
        cluster.delete(row["index"])


def make(pack, es_url, prefix, **params) -> ElasticsearchRetriever:
    return ElasticsearchRetriever(pack, url=es_url, index_prefix=prefix, show_progress=False, **params)


def assert_proportional(got: dict[str, float], expected: dict[str, float], k1: float = 1.2) -> None:
    assert list(got) == [d for d, _ in ranked(expected)]
    if not expected:
        return
    ratios = [got[d] / expected[d] for d in expected]
    c = ratios[0]
    assert c == pytest.approx(1.0, rel=1e-5) or c == pytest.approx(k1 + 1, rel=1e-5), ratios
    assert ratios == pytest.approx([c] * len(ratios), rel=1e-5)


def test_flat_scores_are_lucenes_bm25(es_url, prefix, fields_dataset):
    es = make(WhitespacePack(), es_url, prefix, analysis="client", fields="flat")
    es.index(fields_dataset)
    run = es.search({"q": Query("q", "apple pie")}, k=10)["q"]
    avgdl, n = 14 / 3, 3  # contents = title + " " + text: lengths a=5, b=6, c=3
    assert_proportional(run, {"a": lucene_bm25(3, 5, avgdl, 2, n) + lucene_bm25(1, 5, avgdl, 2, n),
                              "b": lucene_bm25(1, 6, avgdl, 2, n),
                              "c": lucene_bm25(2, 3, avgdl, 2, n)})


def _multifield_expected(k1: float, b: float) -> dict[str, float]:
    def bm(tf, dl, avgdl, df, n):
        return lucene_bm25(tf, dl, avgdl, df, n, k1=k1, b=b)

    # title: only a and c have one (N=2, avgdl 1.5); text: all three (N=3, avgdl 11/3)
    title = {"a": bm(1, 2, 1.5, 1, 2), "c": bm(1, 1, 1.5, 1, 2)}  # "apple" in a, "pie" in c
    text = {"a": bm(2, 3, 11 / 3, 2, 3) + bm(1, 3, 11 / 3, 2, 3), "b": bm(1, 6, 11 / 3, 2, 3),
            "c": bm(1, 2, 11 / 3, 2, 3)}
    return {d: max(title.get(d, 0), text[d]) + 0.5 * min(title.get(d, 0), text[d]) for d in text}


def test_multifield_is_best_fields_with_tie_breaker(es_url, prefix, fields_dataset):
    es = make(WhitespacePack(), es_url, prefix, analysis="client", fields="multifield")
    es.index(fields_dataset)
    run = es.search({"q": Query("q", "apple pie")}, k=10)["q"]
    assert_proportional(run, _multifield_expected(1.2, 0.75))
    assert es.describe()["index_similarity"] == {"type": "BM25", "k1": "1.2", "b": "0.75"}


def test_k1_and_b_live_in_the_index_similarity(es_url, prefix, fields_dataset):
    es = make(WhitespacePack(), es_url, prefix, analysis="client", fields="multifield", k1=0.9, b=0.4)
    es.index(fields_dataset)
    assert es.describe()["index_similarity"] == {"type": "BM25", "k1": "0.9", "b": "0.4"}  # as the cluster reports
    if es_url in NOIDA_URLS:
        pytest.skip("noida-db stores k1/b but always scores with 1.2/0.75")
    run = es.search({"q": Query("q", "apple pie")}, k=10)["q"]
    assert_proportional(run, _multifield_expected(0.9, 0.4), k1=0.9)


@pytest.mark.parametrize("fields", ["multifield", "flat"])
def test_client_analysis_gives_the_embedded_bm25s_ranking(es_url, prefix, tiny_dataset, fields):
    pack = get_pack("en")
    dataset = BeirDataset(tiny_dataset)
    es = make(pack, es_url, prefix, analysis="client", fields=fields)
    es.index(dataset)
    embedded = BM25Retriever(pack, fields=fields, use_cache=False, show_progress=False)
    embedded.index(dataset)
    queries = dataset.queries | {"empty": Query("empty", "the of and")}  # stop words only: no tokens
    got, want = es.search(queries, 10), embedded.search(queries, 10)
    assert got["empty"] == {} == want["empty"]
    assert all(want[qid] for qid in ("q1", "q2", "q3"))
    for qid in dataset.queries:
        assert_proportional(got[qid], want[qid])


def test_rerun_reuses_the_complete_index(es_url, prefix, tiny_dataset, monkeypatch):
    pack = get_pack("en")
    first = make(pack, es_url, prefix, analysis="client")
    first.index(BeirDataset(tiny_dataset))
    expected = first.search(BeirDataset(tiny_dataset).queries, 10)
    assert first.loaded_from_cache is False

    def no_bulk(*args, **kwargs):
        raise AssertionError("a complete index must not be rebuilt")

    monkeypatch.setattr(es_cluster.Cluster, "bulk", no_bulk)
    again = make(pack, es_url, prefix, analysis="client", replicas=1)  # replicas are not part of the identity
    again.index(BeirDataset(tiny_dataset))
    assert again.loaded_from_cache is True and again.index_name == first.index_name
    assert again.cluster.settings(again.index_name)["number_of_replicas"] == "1"
    assert again.search(BeirDataset(tiny_dataset).queries, 10) == expected


def test_interrupted_or_damaged_index_is_rebuilt(es_url, prefix, tiny_dataset, monkeypatch):
    pack, dataset = get_pack("en"), BeirDataset(tiny_dataset)
    real_bulk = es_cluster.Cluster.bulk

    def bulk_then_die(self, actions, **kwargs):
        for n, item in enumerate(real_bulk(self, actions, **kwargs)):
            yield item
            if n == 1:
                raise KeyboardInterrupt  # the user pressed Ctrl-C after two documents

    monkeypatch.setattr(es_cluster.Cluster, "bulk", bulk_then_die)
    with pytest.raises(KeyboardInterrupt):
        make(pack, es_url, prefix, analysis="client", bulk_size=1).index(dataset)
    monkeypatch.setattr(es_cluster.Cluster, "bulk", real_bulk)

    es = make(pack, es_url, prefix, analysis="client")
    assert es.cluster.exists(es_bodies_name(es, dataset)) and es.cluster.meta(es_bodies_name(es, dataset))["complete"] is False
    es.index(dataset)
    assert es.loaded_from_cache is False and es.cluster.count(es.index_name) == 5
    assert es.cluster.meta(es.index_name) | {"key": None} == {
        "complete": True, "doc_count": 5, "key": None, "dataset": "tiny", "dataset_checksum": dataset.checksum(),
        "language_pack": "en", "analysis": "client", "fields": "multifield"}

    # A complete mark whose document count no longer matches (someone deleted a document) also rebuilds.
    es.cluster.client.delete(index=es.index_name, id="d5", refresh=True)
    again = make(pack, es_url, prefix, analysis="client")
    again.index(dataset)
    assert again.loaded_from_cache is False and again.cluster.count(again.index_name) == 5


def es_bodies_name(es: ElasticsearchRetriever, dataset: BeirDataset) -> str:
    """The index name ``es.index(dataset)`` would use, without indexing."""
    from beirx.evaluate.retrievers import es_bodies
    from beirx.checksums import cache_key
    from beirx.evaluate.retrievers.elasticsearch import _INDEX_FORMAT

    body = es._index_body()
    body["settings"].pop("number_of_replicas")
    key = cache_key(_INDEX_FORMAT, dataset.checksum(), es.pack.describe(), body)
    return es_bodies.index_name(es.index_prefix, dataset.name, es.pack.code, es.analysis, key)


def test_two_datasets_never_share_an_index(es_url, prefix, tmp_path):
    pack = get_pack("en")
    docs = [{"_id": "x1", "title": "", "text": "apples and pears"}, {"_id": "x2", "title": "", "text": "pears"}]
    one = BeirDataset(write_beir(tmp_path / "one" / "shop", docs, [{"_id": "q", "text": "apples"}],
                                 {"test": [("q", "x1", 1)]}))
    other = BeirDataset(write_beir(tmp_path / "two" / "shop", docs[:1] + [{"_id": "y9", "title": "", "text": "apples"}],
                                   [{"_id": "q", "text": "apples"}], {"test": [("q", "y9", 1)]}))
    es_one, es_other = make(pack, es_url, prefix, analysis="client"), make(pack, es_url, prefix, analysis="client")
    es_one.index(one)
    es_other.index(other)
    assert es_one.index_name != es_other.index_name  # same folder name "shop", different checksums
    assert set(es_one.search(one.queries, 10)["q"]) == {"x1"}
    assert set(es_other.search(other.queries, 10)["q"]) == {"x1", "y9"}


def test_deep_paging_with_and_without_point_in_time(es_url, prefix, tiny_dataset, monkeypatch):
    pack, dataset = get_pack("en"), BeirDataset(tiny_dataset)
    queries = {"q1": Query("q1", "animals hunt mice small"), "q3": Query("q3", "nothing matches zzz")}
    es = make(pack, es_url, prefix, analysis="client")
    es.index(dataset)
    expected = es.search(queries, 5)  # one _msearch
    assert len(expected["q1"]) == 4 and expected["q3"] == {}

    paged = make(pack, es_url, prefix, analysis="client", page_size=2)  # k > page size: search_after pages
    paged.index(dataset)
    assert paged.search(queries, 5) == expected
    assert paged.describe()["deep_paging"] == "search_after in a point in time"
    assert paged.search(queries, 3) == {"q1": dict(ranked(expected["q1"])[:3]), "q3": {}}

    def no_pit(self, index, keep_alive):
        raise es_cluster.ServerError("opening a point in time", 404, "no handler found for uri [/_pit]")

    monkeypatch.setattr(es_cluster.Cluster, "open_pit", no_pit)
    fallback = make(pack, es_url, prefix, analysis="client", page_size=2)
    fallback.index(dataset)
    assert fallback.search(queries, 5) == expected
    assert fallback.describe()["deep_paging"] == "search_after without a point in time"


def test_several_shards_score_like_one(es_url, prefix, tiny_dataset):
    pack, dataset = get_pack("en"), BeirDataset(tiny_dataset)
    one = make(pack, es_url, prefix, analysis="client")
    one.index(dataset)
    three = make(pack, es_url, prefix, analysis="client", shards=3)
    three.index(dataset)
    assert three.index_name != one.index_name and three.describe()["search_type"] == "dfs_query_then_fetch"
    want = one.search(dataset.queries, 10)
    got = three.search(dataset.queries, 10)
    for qid in want:
        assert got[qid] == pytest.approx(want[qid], rel=1e-6)


def test_english_server_analysis(es_url, prefix, tiny_dataset):
    es = make(get_pack("en"), es_url, prefix, analysis="server")
    dataset = BeirDataset(tiny_dataset)
    es.index(dataset)
    run = es.search(dataset.queries, 10)
    assert next(iter(run["q2"])) == "d4" and next(iter(run["q3"])) == "d2"  # "ocean animal", "loyal companion dog"
    assert {"d1", "d3"} <= set(run["q1"])  # "hunt" matches "hunt", "animals" "animal" after stemming
    assert es.describe()["index_analysis"] == get_pack("en").es_settings()["analysis"]


def test_polish_server_analysis_without_stempel_says_what_to_do(es_url, prefix, tiny_dataset, monkeypatch):
    pack, dataset = get_pack("pl"), BeirDataset(tiny_dataset)
    es = make(pack, es_url, prefix, analysis="server")
    if "analysis-stempel" in (es.cluster.plugins() or set()):
        pytest.skip("this cluster has the analysis-stempel plugin")
    with pytest.raises(BeirxError, match=r"needs plugin\(s\) analysis-stempel.*elasticsearch-plugin install "
                                         r"analysis-stempel.*--es-analysis client"):
        es.index(dataset)
    # Where plugins cannot be listed (a restricted API key), the server's refusal gives the same advice.
    monkeypatch.setattr(es_cluster.Cluster, "plugins", lambda self: None)
    with pytest.raises(BeirxError, match=r"\(server: .*polish.*needs plugin\(s\) analysis-stempel"):
        make(pack, es_url, prefix, analysis="server").index(dataset)
    # Client-side analysis works on the same cluster with the pack's Polish stemmer.
    client = make(pack, es_url, prefix, analysis="client")
    client.index(dataset)
    assert client.search({"q": Query("q", "ocean")}, 5)["q"]


def test_experiment_and_cli_write_results_with_provenance(es_url, prefix, tmp_path, monkeypatch, capsys):
    corpus = [{"_id": "q1", "title": "", "text": "the query itself about whales"},
              {"_id": "d1", "title": "Whales", "text": "whales are large"},
              {"_id": "d2", "title": "", "text": "small fish"}]
    root = write_beir(tmp_path / "selfref", corpus, [{"_id": "q1", "text": "whales"}], {"test": [("q1", "d1", 1)]})
    dataset = BeirDataset(root)
    system = SystemSpec("elasticsearch", {"url": es_url, "index_prefix": prefix, "analysis": "client"})
    outcome = run_experiment(dataset, get_pack("en"), "test", system, tmp_path / "out", top_k=10,
                             ignore_identical_ids=True, show_progress=False)
    run_lines = outcome.run_path.read_text().splitlines()
    assert [line.split()[2] for line in run_lines] == ["d1"]  # q1 itself was retrieved and dropped
    assert outcome.results.metrics["NDCG@10"] == 1.0
    system_doc = outcome.results.system.description
    assert system_doc["retriever"] == "elasticsearch" and system_doc["analysis"] == "client"
    assert float(system_doc["index_similarity"]["k1"]) == 1.2 and system_doc["server"]["version"]
    assert "index_from_cache" not in system_doc

    from beirx.cli import main

    monkeypatch.setenv("BEIRX_ES_URL", es_url)
    code = main(["eval", "--dataset", str(root), "--retriever", "elasticsearch", "--es-analysis", "client",
                 "--es-index-prefix", prefix, "--ignore-identical-ids", "--output", str(tmp_path / "cli")])
    assert code == 0
    results = ResultsDocument.load(next((tmp_path / "cli").glob("*.json")))
    assert results.system.description["index_from_cache"] is True  # run_experiment above built the same index
    assert results.metrics["NDCG@10"] == 1.0
    assert "selfref" in capsys.readouterr().out


def test_opensearch_client_path(es_url, prefix, tiny_dataset):
    """The opensearch-py adapter (used when GET / reports OpenSearch) against the same REST API."""
    needs("opensearchpy", "es")
    pack, dataset = get_pack("en"), BeirDataset(tiny_dataset)
    reference = make(pack, es_url, prefix, analysis="client")
    reference.index(dataset)
    expected = reference.search(dataset.queries, 5)
    info = es_cluster.ServerInfo("opensearch", "2.15.0", "9.10.0")
    es = make(pack, es_url, prefix + "os", analysis="client", page_size=2)
    es._cluster = es_cluster._connect_opensearch(es_url, es_cluster.auth_headers(), {"verify_certs": True}, 30, info)
    try:
        es.index(dataset)
        assert es.cluster.describe()["client"].startswith("opensearch-py")
        assert es.search(dataset.queries, 5) == expected  # search_after pages, with or without OpenSearch's PIT
    finally:
        es.cluster.delete(es.index_name)
