"""Config grids and the ``beirx eval`` command: systems x datasets x language pairs, caches reused."""

from __future__ import annotations

import json

import pytest

from beirx.artifacts.results import ResultsDocument
from beirx.cli import main
from beirx.errors import DataError
from beirx.data.language_pair import LanguagePair
from beirx.evaluate.plan import plan_from_config
from beirx.evaluate.runner import run_plan
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, SystemSpec
from conftest import write_beir

POLISH_QUERIES = [{"_id": "q1", "text": "które zwierzęta polują na myszy"},
                  {"_id": "q2", "text": "największe zwierzę w oceanie"},
                  {"_id": "q3", "text": "wierny pies towarzysz"}]


@pytest.fixture
def tiny_pl(tmp_path, tiny_dataset):
    """The tiny dataset's Polish version: same IDs, Polish queries (the corpus is not used in pl2en pairs)."""
    corpus = [json.loads(line) for line in (tiny_dataset / "corpus.jsonl").read_text().splitlines()]
    return write_beir(tmp_path / "tiny-pl", corpus, POLISH_QUERIES,
                      {"test": [("q1", "d1", 1), ("q1", "d3", 1), ("q2", "d4", 2), ("q3", "d2", 1)]})


def write_config(path, tiny, tiny_pl, e5):
    path.write_text(f"""
output = "out"
top_k = 5
languages = ["en", "pl2en"]

[[datasets]]
name = "{tiny}"
label = "tiny"
paths = {{ pl = "{tiny_pl}" }}

[[systems]]
name = "bm25"
retriever = "bm25"
fields = "flat"

[[systems]]
name = "e5"
retriever = "dense"
model = "{e5}"
max_length = 64

[[systems]]
name = "hybrid"
fusion = "rrf"
inputs = ["bm25", "e5"]
""", encoding="utf-8")
    return path


def test_grid_runs_every_system_and_language_pair_and_reuses_caches(e5_small, tiny_dataset, tiny_pl, tmp_path,
                                                                     beirx_home):
    config = write_config(tmp_path / "grid.toml", tiny_dataset, tiny_pl, e5_small)
    grid = plan_from_config(config)
    assert [d.pairs for d in grid.datasets] == [[LanguagePair("en", "en"), LanguagePair("pl", "en")]]
    assert grid.output == tmp_path / "out"
    hybrid = grid.systems["hybrid"]
    assert isinstance(hybrid, FusionSpec) and hybrid.inputs == [grid.systems["bm25"], grid.systems["e5"]]

    rows = run_plan(grid, show_progress=False)
    assert [(r.languages, r.system) for r in rows] == [("en", "bm25"), ("en", "e5"), ("en", "hybrid"),
                                                        ("pl2en", "bm25"), ("pl2en", "e5"), ("pl2en", "hybrid")]
    names = sorted(p.name for p in grid.output.glob("*.json"))
    assert names == sorted([f"tiny-{langs}-test-{s}.json" for langs in ("en", "pl2en") for s in ("bm25", "e5", "hybrid")]
                           + ["summary.json"])
    summary = (grid.output / "summary.tsv").read_text().splitlines()
    assert len(summary) == 7 and summary[0].startswith("dataset\tlanguages\tsplit\tsystem\t")
    cross = ResultsDocument.load(grid.output / "tiny-pl2en-test-e5.json")
    assert cross.dataset.language == "en" and cross.dataset.query_language == "pl" and cross.language_pair == "pl2en"
    assert cross.dataset.name == "tiny" and cross.query_dataset.source == str(tiny_pl)
    # The pl2en pair searches the same English corpus: its document embeddings were reused, not re-encoded.
    assert cross.system.description["index_from_cache"] is True
    assert len([p for p in (beirx_home / "embeddings").iterdir() if not p.name.startswith(".")]) == 1
    english = ResultsDocument.load(grid.output / "tiny-en-test-e5.json")
    assert english.metrics["NDCG@10"] > 0.8  # e5 finds these easy documents
    assert english.system.description["query_prompt"] == "query: " and english.label == "e5"

    # Rerunning the grid loads every index and all embeddings from the cache: nothing is re-encoded.
    again_plan = plan_from_config(config)
    again_plan.output = tmp_path / "again"
    again = run_plan(again_plan, show_progress=False)
    assert [r.metrics for r in again] == [r.metrics for r in rows]
    for path in (tmp_path / "again").glob("tiny-*.json"):
        system = ResultsDocument.load(path).system.description
        for part in system.get("systems", [system]):
            assert part["index_from_cache"] is True, path.name


def test_yaml_config_with_rerankers_and_run_files(tmp_path):
    (tmp_path / "runs").mkdir()
    config = tmp_path / "grid.yaml"
    config.write_text("""
datasets: [scifact, {name: nfcorpus, languages: ["de"]}]
languages: [en, {query: pl, corpus: en}]
split: dev
systems:
  - {name: ext, run_file: runs/splade.trec}
  - {name: e5, retriever: dense, model: intfloat/multilingual-e5-small, query_prompt: ""}
  - {name: ce, reranker: cross-encoder, first_stage: hyb, model: some/ce, depth: 50, interpolation: 0.5}
  - {name: hyb, fusion: linear, inputs: [ext, e5], normalization: none, weights: [1, 0.5]}
""", encoding="utf-8")
    grid = plan_from_config(config)
    assert [(d.spec, d.pairs) for d in grid.datasets] == [
        ("scifact", [LanguagePair("en", "en"), LanguagePair("pl", "en")]), ("nfcorpus", [LanguagePair("de", "de")])]
    assert grid.split == "dev"
    assert grid.systems["ext"] == RunFileSpec(tmp_path / "runs" / "splade.trec", name="ext")
    assert grid.systems["e5"] == SystemSpec("dense", {"model": "intfloat/multilingual-e5-small", "query_prompt": ""},
                                            name="e5")
    ce = grid.systems["ce"]
    assert isinstance(ce, RerankSpec) and ce.params == {"model": "some/ce"} and ce.depth == 50
    assert ce.interpolation == 0.5
    assert ce.first_stage is grid.systems["hyb"] and ce.first_stage.weights == [1, 0.5]


@pytest.mark.parametrize("systems, message", [
    ('[{name: a, fusion: rrf, inputs: [a, b]}, {name: b, retriever: bm25}]', "cycle: a -> a"),
    ('[{name: a, reranker: x, first_stage: nope}]', "refers to 'nope'"),
    ('[{name: a, retriever: bm25}, {name: b, reranker: x, first_stage: a, interpolation: 1.5}]',
     r"'interpolation' is the reranker's weight, a number in \(0, 1\], got 1.5"),
    ('[{name: a, retriever: bm25}, {name: b, reranker: x, first_stage: a, interpolation: true}]',
     r"'interpolation' is the reranker's weight, a number in \(0, 1\], got True"),
    ('[{name: a, retriever: bm25, fusion: rrf}]', "exactly one of"),
    ('[{retriever: bm25}]', "needs a 'name'"),
    ('[{name: a, retriever: bm25}, {name: a, retriever: dense}]', "two systems are named 'a'"),
    ('[{name: a, fusion: max, inputs: [b, c]}, {name: b, retriever: bm25}, {name: c, retriever: bm25}]',
     "unknown fusion method"),
])
def test_config_errors_name_the_file(tmp_path, systems, message):
    config = tmp_path / "bad.yaml"
    config.write_text(f"datasets: [scifact]\nsystems: {systems}\n", encoding="utf-8")
    with pytest.raises(DataError, match=message) as err:
        plan_from_config(config)
    assert str(config) in str(err.value)


def test_eval_command_with_two_retrievers_and_fusions(e5_small, tiny_dataset, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["eval", "--dataset", str(tiny_dataset), "--retriever", "bm25", "--retriever", "dense",
                 "--model", str(e5_small), "--max-length", "64", "--fusion", "rrf", "--fusion", "harmonic",
                 "--weights", "1,2", "--top-k", "5", "--output", str(out)])
    assert code == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["system", "NDCG@10", "MRR@10", "Recall@100"]
    assert len(printed) == 1 + 4 + 1
    files = sorted(p.name for p in out.glob("*.json"))
    assert len(files) == 4 and files[0].startswith("tiny-en-test-bm25-b_0.75-fields_multifield-k1_1.2")
    fused = [ResultsDocument.load(p) for p in out.glob("tiny-en-test-harmonic-*.json")]
    assert len(fused) == 1 and fused[0].system.description["weights"] == [1.0, 2.0]
    assert fused[0].system.description["normalization"] == "min_max" and fused[0].system.kind == "fusion"


def test_eval_command_argument_errors(tiny_dataset, tmp_path, capsys):
    assert main(["eval", "--config", str(tmp_path / "x.toml"), "--dataset", "scifact"]) == 2
    assert "drop --dataset" in capsys.readouterr().err
    assert main(["eval", "--dataset", str(tiny_dataset), "--query-lang", "pl"]) == 2
    assert "--query-dataset" in capsys.readouterr().err
    assert main(["eval", "--dataset", str(tiny_dataset), "--fusion", "rrf"]) == 2
    assert "at least two" in capsys.readouterr().err
    assert main(["eval", "--dataset", str(tiny_dataset), "--reranker", "cross-encoder", "--reranker-model", "a",
                 "--reranker-model", "b"]) == 2
    assert "one model per reranker" in capsys.readouterr().err


def parse(argv):
    from beirx.cli import build_parser
    from beirx.cli.eval import systems_from_args

    return list(systems_from_args(build_parser(argv).parse_args(argv)).values())


def test_command_line_systems(tmp_path):
    systems = parse(["eval", "--dataset", "x", "--retriever", "bm25", "--retriever", "dense", "--model", "m",
                     "--fusion", "rrf", "--reranker", "cross-encoder", "--reranker-model", "ce",
                     "--reranker", "monot5", "--reranker-model", "t5", "--first-stage", "rrf", "--rerank-depth", "50"])
    bm25, dense, rrf, ce, t5 = systems
    assert bm25 == SystemSpec("bm25", {"k1": 1.2, "b": 0.75, "fields": "multifield"})
    assert dense == SystemSpec("dense", {"model": "m"})
    assert isinstance(rrf, FusionSpec) and rrf.inputs == [bm25, dense] and rrf.method == "rrf"
    assert (ce.reranker, ce.params, ce.depth, t5.reranker, t5.params) == ("cross-encoder", {"model": "ce"}, 50,
                                                                           "monot5", {"model": "t5"})
    assert ce.first_stage is rrf and t5.first_stage is rrf  # both rerank the very same candidates

    every = parse(["eval", "--dataset", "x", "--retriever", "bm25", "--retriever", "dense", "--reranker", "colbert"])
    assert [s.first_stage.retriever for s in every[2:]] == ["bm25", "dense"]

    trec = tmp_path / "first.trec"
    trec.write_text("q1 Q0 d1 1 2.0 x\n")
    from_file = parse(["eval", "--dataset", "x", "--first-stage", str(trec), "--reranker", "cross-encoder"])
    assert from_file == [RunFileSpec(trec), RerankSpec(RunFileSpec(trec), "cross-encoder", {}, 100)]
