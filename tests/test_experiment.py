"""Experiments: BM25 output unchanged, rerankers on identical (stored) candidates, run files as first stage,
fusion systems, cross-lingual pairs."""

from __future__ import annotations

import pytest

from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError, DataError
from beirx.evaluate.outputs import result_stem
from beirx.evaluate.runner import evaluate_system, run_experiment
from beirx.evaluate.stages import Stages
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, SystemSpec
from beirx.evaluate.fusion import fuse
from beirx.evaluate.metrics import evaluate
from beirx.evaluate.rerankers import RERANKERS
from beirx.evaluate.rerankers.base import PairwiseReranker as Reranker
from beirx.evaluate.runs import read_trec, truncate, write_trec
from conftest import write_beir

BM25 = SystemSpec("bm25", {"k1": 1.2, "b": 0.75, "fields": "multifield"})
BM25_FLAT = SystemSpec("bm25", {"fields": "flat"})


class Pack:
    """Stand-in language pack: lowercase whitespace tokens."""

    code = "en"

    def analyze(self, text):
        return text.lower().replace(";", " ").replace(".", " ").split()

    def analyzer(self):
        return self.analyze

    def describe(self):
        return {"code": self.code, "tokenizer": "whitespace"}


class OverlapReranker(Reranker):
    """Scores a document by the query words it contains; records every pair it scores."""

    name = "test-overlap"
    calls: list[tuple[str, str]] = []

    def __init__(self, model, *, lang="en", show_progress=True, use_cache=True):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        self.model = model

    def describe(self):
        return {"reranker": self.name, "model": self.model}

    def score_pairs(self, pairs, progress):
        OverlapReranker.calls += [(q.id, d.id) for q, d in pairs]
        bonus = 0.5 if self.model == "alt" else 0.0
        return [len(set(q.text.lower().split()) & set(f"{d.title} {d.text}".lower().split())) + bonus
                for q, d in pairs]


@pytest.fixture
def overlap_reranker(monkeypatch):
    monkeypatch.setitem(RERANKERS._entries, "test-overlap", f"{__name__}:OverlapReranker")
    OverlapReranker.calls = []
    yield OverlapReranker
    OverlapReranker.calls = []


def test_bm25_files_and_results_as_before(tiny_dataset, tmp_path):
    ds = BeirDataset(tiny_dataset, name="tiny")
    out = run_experiment(ds, Pack(), "test", BM25, tmp_path / "out", top_k=10, show_progress=False)
    assert out.results_path.name == "tiny-en-test-bm25-b_0.75-fields_multifield-k1_1.2.json"
    assert out.run_path.name == "tiny-en-test-bm25-b_0.75-fields_multifield-k1_1.2.trec"
    assert list(out.results.timings_seconds) == ["index", "search", "evaluate"]
    assert out.results.system.description["retriever"] == "bm25" and "run_from_cache" not in out.results.system.description
    assert out.results.dataset.query_language == "en" and out.results.query_dataset is None
    assert out.results.evaluation["top_k"] == 10
    assert "index_from_cache" not in out.results.system.description
    first = read_trec(out.run_path)
    # A later command loads the cached index and searches again: same files, same numbers.
    again = run_experiment(ds, Pack(), "test", BM25, tmp_path / "out2", top_k=10, show_progress=False)
    assert again.results.system.description["index_from_cache"] is True and "run_from_cache" not in again.results.system.description
    assert list(again.results.timings_seconds) == ["index", "search", "evaluate"]
    assert read_trec(again.run_path) == first and again.results.metrics == out.results.metrics
    fresh = run_experiment(ds, Pack(), "test", BM25, tmp_path / "out3", top_k=10, show_progress=False,
                           use_cache=False)
    assert "index_from_cache" not in fresh.results.system.description and read_trec(fresh.run_path) == first


def test_rerankers_see_identical_candidates_and_are_cached(tiny_dataset, tmp_path, overlap_reranker):
    ds = BeirDataset(tiny_dataset, name="tiny")
    stages = Stages(ds, Pack(), "test", top_k=10, show_progress=False)
    a = RerankSpec(BM25_FLAT, "test-overlap", {"model": "overlap-v1"}, depth=2)
    b = RerankSpec(BM25_FLAT, "test-overlap", {"model": "alt"}, depth=2)
    out_a = evaluate_system(stages, a, tmp_path)
    seen_a = sorted(overlap_reranker.calls)
    overlap_reranker.calls = []
    out_b = evaluate_system(stages, b, tmp_path)
    seen_b = sorted(overlap_reranker.calls)
    first = stages.run(BM25_FLAT).run
    top2 = {q: list(truncate(first, 2)[q]) for q in first}
    assert seen_a == seen_b == sorted((q, d) for q, docs in top2.items() for d in docs)
    run_a = read_trec(out_a.run_path)
    assert {q: set(d) for q, d in run_a.items()} == {q: set(d) for q, d in top2.items() if d}
    assert out_a.run_path != out_b.run_path
    system = out_a.results.system.description
    assert system["reranker"] == {"reranker": "test-overlap", "model": "overlap-v1"} and system["rerank_depth"] == 2
    assert system["first_stage"]["retriever"] == "bm25"
    assert out_a.results.metrics == evaluate(ds.qrels("test"), run_a).metrics

    # A new command: the reranked candidates come from the stored first-stage run, and every pair score from
    # the reranker's cache. The first stage evaluated on its own is recomputed from the cached index.
    overlap_reranker.calls = []
    again = run_experiment(ds, Pack(), "test", a, tmp_path / "again", top_k=10, show_progress=False)
    assert overlap_reranker.calls == []  # every pair score is in the reranker's cache
    assert again.results.system.description["first_stage"]["run_from_cache"] is True
    assert read_trec(again.run_path) == run_a
    plain = run_experiment(ds, Pack(), "test", BM25_FLAT, tmp_path / "again", top_k=10, show_progress=False)
    assert plain.results.system.description["index_from_cache"] is True and "run_from_cache" not in plain.results.system.description
    assert truncate(read_trec(plain.run_path), 2).keys() == run_a.keys()


def test_run_file_as_first_stage(tiny_dataset, tmp_path, overlap_reranker):
    ds = BeirDataset(tiny_dataset, name="tiny")
    trec = tmp_path / "external.trec"
    write_trec(trec, {"q1": {"d5": 3.0, "d1": 2.0, "d3": 1.0}, "q2": {"d4": 1.0}, "qX": {"d1": 1.0}})
    rerank = RerankSpec(RunFileSpec(trec), "test-overlap", {"model": "m"}, 10)
    out = run_experiment(ds, Pack(), "test", rerank, tmp_path / "o")
    run = read_trec(out.run_path)
    assert set(run) == {"q1", "q2"} and set(run["q1"]) == {"d5", "d1", "d3"}
    assert list(truncate(run, 10)["q1"])[:2] in (["d3", "d1"], ["d1", "d3"])  # both share 2 query words
    assert out.results.system.description["first_stage"]["retriever"] == "run_file"
    bad = tmp_path / "bad.trec"
    write_trec(bad, {"q1": {"nope": 1.0}})
    with pytest.raises(BeirxError, match=r"bad\.trec: none of its document IDs is in the corpus of tiny \(e\.g\. 'nope'\)"):
        run_experiment(ds, Pack(), "test", RerankSpec(RunFileSpec(bad), "test-overlap", {"model": "m"}, 10),
                       tmp_path / "o")
    with pytest.raises(BeirxError, match="needs a model"):
        run_experiment(ds, Pack(), "test", RerankSpec(RunFileSpec(trec), "test-overlap", {}, 10), tmp_path / "o")
    foreign = tmp_path / "foreign.trec"
    write_trec(foreign, {"zz": {"d1": 1.0}})
    with pytest.raises(DataError, match="foreign.trec.*none of its query IDs"):
        run_experiment(ds, Pack(), "test", RunFileSpec(foreign), tmp_path / "o")


def test_fusion_system_uses_the_component_runs(tiny_dataset, tmp_path):
    ds = BeirDataset(tiny_dataset, name="tiny")
    stages = Stages(ds, Pack(), "test", top_k=3, show_progress=False)
    spec = FusionSpec([BM25, BM25_FLAT], "arithmetic", "l2", [0.3, 0.7])
    out = evaluate_system(stages, spec, tmp_path)
    expected = truncate(fuse([stages.run(BM25).run, stages.run(BM25_FLAT).run], "arithmetic", "l2", [0.3, 0.7]), 3)
    assert read_trec(out.run_path) == {q: d for q, d in expected.items() if d}
    system = out.results.system.description
    assert system["fusion"] == "arithmetic" and system["normalization"] == "l2" and system["weights"] == [0.3, 0.7]
    assert [s["fields"] for s in system["systems"]] == ["multifield", "flat"]
    assert out.run_path.name.startswith("tiny-en-test-arithmetic-l2-w0.3_0.7-bm25-")
    with pytest.raises(BeirxError, match="one weight per run"):
        FusionSpec([BM25, BM25_FLAT], "rrf", weights=[1.0])


def test_cross_lingual_pair_takes_queries_from_one_version_and_corpus_from_the_other(tiny_dataset, tmp_path):
    corpus_en = BeirDataset(tiny_dataset, name="tiny", lang="en")
    pl = [{"_id": "q1", "text": "które zwierzęta polują na mysz mice"}, {"_id": "q2", "text": "największe zwierzę oceanu"},
          {"_id": "q3", "text": "wierny pies"}]
    queries_pl = BeirDataset(write_beir(tmp_path / "tiny-pl", [{"_id": "d1", "text": "x"}], pl, {"test": []}),
                             name="tiny", lang="pl")
    stages = Stages(corpus_en, Pack(), "test", top_k=5, show_progress=False, query_dataset=queries_pl)
    assert {q: x.text for q, x in stages.queries.items()} == {x["_id"]: x["text"] for x in pl}
    assert stages.qrels == corpus_en.qrels("test")
    out = evaluate_system(stages, BM25_FLAT, tmp_path / "out")
    assert out.results_path.name == result_stem(corpus_en, "test", BM25_FLAT.tag(), "pl") + ".json"
    assert out.results_path.name.startswith("tiny-pl2en-test-")
    assert out.results.dataset.language == "en" and out.results.dataset.query_language == "pl"
    assert out.results.query_dataset.language == "pl"
    assert out.results.query_dataset.checksum == queries_pl.checksum()
    assert set(read_trec(out.run_path)) == {"q1"}  # only "mice" is shared vocabulary
    assert out.results.evaluation["num_queries"] == 3

    other_ids = BeirDataset(write_beir(tmp_path / "other", [{"_id": "d1", "text": "x"}],
                                       [{"_id": "zz", "text": "nic"}], {"test": []}), lang="pl")
    with pytest.raises(DataError, match="same IDs"):
        Stages(corpus_en, Pack(), "test", query_dataset=other_ids)


def test_interpolation_weighs_min_max_scores_of_the_reranked_documents():
    from beirx.evaluate.stages import interpolate

    first = {"q": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.5}}
    reranked = {"q": {"a": 0.0, "b": 10.0, "c": 5.0}}  # the top 3 of the first stage, rescored
    run, description = interpolate(first, reranked, depth=3, weight=0.5)
    # first stage min-max over a, b, c: 1, 0.5, 0.001 (the minimum floored, as fusion does); reranker: 0.001, 1,
    # 0.5; halves summed; d was not reranked
    assert run == {"q": {"a": 0.5005, "b": 0.75, "c": 0.2505}}
    assert description["interpolation"]["reranker_weight"] == 0.5
    assert description["interpolation"]["weights"] == [0.5, 0.5]


def test_reranker_interpolated_with_its_first_stage(tiny_dataset, tmp_path, overlap_reranker):
    ds = BeirDataset(tiny_dataset, name="tiny")
    trec = tmp_path / "external.trec"
    write_trec(trec, {"q1": {"d5": 3.0, "d1": 2.0, "d3": 1.0}, "q2": {"d4": 1.0, "d2": 0.0}})
    alone = run_experiment(ds, Pack(), "test", RerankSpec(RunFileSpec(trec), "test-overlap", {"model": "m"}, 10),
                           tmp_path / "o")
    spec = RerankSpec(RunFileSpec(trec), "test-overlap", {"model": "m"}, 10, interpolation=0.25)
    mixed = run_experiment(ds, Pack(), "test", spec, tmp_path / "o")
    assert mixed.run_path != alone.run_path and mixed.run_path.name.endswith("-depth_10-interpolation_0.25.trec")
    assert spec.label().endswith("(w 0.25)")
    reranker, first = read_trec(alone.run_path), {"q1": {"d5": 3.0, "d1": 2.0, "d3": 1.0}}

    def min_max(scores):
        low, high = min(scores.values()), max(scores.values())
        return {d: max((s - low) / (high - low), 0.001) if high > low else 1.0 for d, s in scores.items()}

    r, f = min_max(reranker["q1"]), min_max(first["q1"])
    expected = {d: 0.25 * r[d] + 0.75 * f[d] for d in f}
    assert read_trec(mixed.run_path)["q1"] == pytest.approx(expected)
    described = mixed.results.system.description["interpolation"]
    assert described["reranker_weight"] == 0.25 and described["weights"] == [0.75, 0.25]
    assert described["fusion"] == "linear" and described["normalization"] == "min_max"
