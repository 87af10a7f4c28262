"""One experiment plan: flags and grid files give the same plan and the same results documents."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from beirx.artifacts.results import ResultsDocument
from beirx.cli import build_parser, main
from beirx.data.language_pair import LanguagePair
from beirx.errors import BeirxError
from beirx.cli.eval import systems_from_args
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, SystemSpec

# What legitimately differs between two runs of the same experiment.
_VOLATILE = ("created", "timings_seconds", "efficiency")


def _comparable(path) -> dict:
    doc = ResultsDocument.load(path).to_dict()
    return {k: v for k, v in doc.items() if k not in _VOLATILE}


def test_grid_file_and_equivalent_flags_write_identical_results(tiny_dataset, tmp_path):
    """Both without the index cache, so neither records ``index_from_cache`` the other lacks."""
    run_file = tmp_path / "external.trec"
    run_file.write_text("q1 Q0 d3 1 3.5 ext\nq1 Q0 d2 2 1.0 ext\nq2 Q0 d4 1 2.0 ext\nq3 Q0 d5 1 1.0 ext\n")
    flags_out, grid_out = tmp_path / "flags", tmp_path / "grid"
    assert main(["eval", "--dataset", str(tiny_dataset), "--lang", "en", "--retriever", "bm25", "--fields", "flat",
                 "--first-stage", str(run_file), "--fusion", "rrf", "--name", "bm25", "--name", "ext",
                 "--name", "hybrid", "--top-k", "10", "--output", str(flags_out), "--no-index-cache"]) == 0
    config = tmp_path / "grid.toml"
    config.write_text(f"""
top_k = 10
languages = ["en"]
datasets = ["{tiny_dataset}"]

[[systems]]
name = "bm25"
retriever = "bm25"
fields = "flat"

[[systems]]
name = "ext"
run_file = "{run_file}"

[[systems]]
name = "hybrid"
fusion = "rrf"
inputs = ["bm25", "ext"]
""", encoding="utf-8")
    assert main(["eval", "--config", str(config), "--output", str(grid_out), "--no-index-cache"]) == 0
    names = ["tiny-en-test-bm25", "tiny-en-test-ext", "tiny-en-test-hybrid"]
    for name in names:
        assert _comparable(flags_out / f"{name}.json") == _comparable(grid_out / f"{name}.json"), name
        assert (flags_out / f"{name}.trec").read_bytes() == (grid_out / f"{name}.trec").read_bytes()
    hybrid = ResultsDocument.load(grid_out / "tiny-en-test-hybrid.json")
    assert (hybrid.label, hybrid.system.kind, hybrid.language_pair) == ("hybrid", "fusion", "en")


def test_a_grid_given_as_a_dict_is_the_grid_file(tiny_dataset, tmp_path, monkeypatch):
    """From Python (a notebook) the grid is a dict with the file's keys: same plan, same results bytes."""
    from beirx.evaluate.plan import plan_from_config
    from beirx.evaluate.runner import run_plan

    grid = {"top_k": 10, "languages": ["en"], "datasets": [str(tiny_dataset)], "output": str(tmp_path / "dict"),
            "systems": [{"name": "bm25", "retriever": "bm25", "fields": "flat"}]}
    config = tmp_path / "grid.toml"
    config.write_text(f'top_k = 10\nlanguages = ["en"]\ndatasets = ["{tiny_dataset}"]\n'
                      '[[systems]]\nname = "bm25"\nretriever = "bm25"\nfields = "flat"\n', encoding="utf-8")
    (row,) = run_plan(plan_from_config(grid), show_progress=False, use_cache=False)
    assert main(["eval", "--config", str(config), "--output", str(tmp_path / "file"), "--no-index-cache"]) == 0
    assert row.results_path == tmp_path / "dict" / "tiny-en-test-bm25.json"
    assert _comparable(row.results_path) == _comparable(tmp_path / "file" / "tiny-en-test-bm25.json")
    assert row.run_path.read_bytes() == (tmp_path / "file" / "tiny-en-test-bm25.trec").read_bytes()
    monkeypatch.chdir(tmp_path)  # relative paths in a dict are relative to the working directory
    assert plan_from_config({**grid, "output": "out"}).output == Path("out")
    with pytest.raises(BeirxError, match=r"^<grid dict>: 'datasets' must be a non-empty list$"):
        plan_from_config({"systems": grid["systems"]})


def test_results_record_efficiency_of_a_retriever(tiny_dataset, tmp_path):
    assert main(["eval", "--dataset", str(tiny_dataset), "--retriever", "bm25", "--fields", "flat",
                 "--output", str(tmp_path)]) == 0
    doc = ResultsDocument.load(tmp_path / "tiny-en-test-bm25-b_0.75-fields_flat-k1_1.2.json")
    eff = doc.efficiency
    assert doc.label == "bm25 fields=flat" and doc.system.tag == "bm25-b_0.75-fields_flat-k1_1.2"
    assert eff.num_queries == 3 and eff.latency_sample == 3 and eff.device == "cpu"
    assert 0 < eff.latency_ms_p50 <= eff.latency_ms_p95 and eff.index_bytes > 0 and eff.peak_rss_bytes > 0
    assert eff.queries_per_second > 0 and eff.search_seconds > 0


def test_names_must_match_the_systems(tiny_dataset, capsys):
    assert main(["eval", "--dataset", str(tiny_dataset), "--retriever", "bm25", "--name", "a", "--name", "b"]) == 2
    assert "2 --name for 1 systems" in capsys.readouterr().err


def _systems(argv):
    return list(systems_from_args(build_parser(argv).parse_args(argv)).values())


def test_backends_contribute_their_own_flags():
    argv = ["eval", "--dataset", "x", "--retriever", "bm25", "--retriever", "dense", "--model", "org/e5-small",
            "--batch-size", "8", "--reranker", "monot5", "--reranker-model", "t5", "--monot5-true-token", "prawda",
            "--monot5-false-token", "fałsz", "--device", "cpu", "--first-stage", "bm25"]
    bm25, dense, t5 = _systems(argv)
    assert bm25 == SystemSpec("bm25", {"k1": 1.2, "b": 0.75, "fields": "multifield"})
    assert dense == SystemSpec("dense", {"model": "org/e5-small", "device": "cpu", "batch_size": 8})
    assert t5 == RerankSpec(bm25, "monot5", {"model": "t5", "device": "cpu", "true_token": "prawda",
                                              "false_token": "fałsz"}, 100)
    assert dense.label() == "dense e5-small" and t5.label() == "bm25 fields=multifield >> monot5 t5"


def test_default_labels_are_short_and_readable(tmp_path):
    bm25 = SystemSpec("bm25", {"fields": "flat", "k1": 1.2, "b": 0.75})
    dense = SystemSpec("dense", {"model": str(tmp_path / "e5-small")})
    fused = FusionSpec([bm25, dense], "arithmetic")
    assert fused.label() == "arithmetic/min_max(bm25 fields=flat + dense e5-small)"
    assert RunFileSpec(tmp_path / "splade.trec").label() == "run splade.trec"
    assert SystemSpec("bm25", {}, name="BM25 (ours)").label() == "BM25 (ours)"


def test_one_spelling_of_a_language_pair(caplog):
    assert LanguagePair.parse("pl2en") == LanguagePair("pl", "en") and LanguagePair("pl", "en").label == "pl2en"
    assert LanguagePair.parse("pl") == LanguagePair("pl", "pl") and LanguagePair("pl", "pl").label == "pl"
    assert LanguagePair.of("en", "pl").label == "pl2en" and LanguagePair.of("en").label == "en"
    with caplog.at_level(logging.WARNING):
        assert LanguagePair.parse("pl:en") == LanguagePair("pl", "en")
    assert "'pl2en'" in caplog.text
    with pytest.raises(BeirxError, match="QUERY2CORPUS"):
        LanguagePair.parse("polish-english")


def test_grid_with_report_and_fusion_efficiency(tiny_dataset, tmp_path):
    config = tmp_path / "grid.toml"
    config.write_text(f"""
languages = ["en"]
datasets = ["{tiny_dataset}"]

[[systems]]
name = "flat"
retriever = "bm25"
fields = "flat"

[[systems]]
name = "multi"
retriever = "bm25"

[[systems]]
name = "rrf"
fusion = "rrf"
inputs = ["flat", "multi"]
""", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["eval", "--config", str(config), "--output", str(out), "--report", "--no-progress"]) == 0
    docs = {name: ResultsDocument.load(out / f"tiny-en-test-{name}.json") for name in ("flat", "multi", "rrf")}
    fused, parts = docs["rrf"].efficiency, [docs["flat"].efficiency, docs["multi"].efficiency]
    assert fused.index_bytes == sum(p.index_bytes for p in parts) > 0
    assert fused.search_seconds >= sum(p.search_seconds for p in parts) and fused.latency_ms_p50 is None
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "rrf" in html and "<table" in html


def test_a_missing_dense_model_fails_before_any_work(tiny_dataset, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["eval", "--dataset", str(tiny_dataset), "--retriever", "bm25", "--retriever", "dense",
                 "--model", str(tmp_path / "no-such-model"), "--output", str(out)])
    assert code == 2 and "no-such-model" in capsys.readouterr().err
    assert not list(out.glob("*.json"))  # BM25 did not run first
