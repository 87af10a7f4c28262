"""beirx results in MTEB's results format: key names, layout, merging, and loading back with mteb's own
``TaskResult`` and ``ResultCache``."""

from __future__ import annotations

import dataclasses
import json

import pytest

from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.evaluate.runner import run_experiment
from beirx.evaluate.specs import SystemSpec
from beirx.language_packs import get_pack
from beirx.publish.mteb_results import dataset_revision, model_folder, mteb_scores, write_mteb_results
from extras import needs


@pytest.fixture
def bm25_results(tiny_dataset, tmp_path):
    dataset = BeirDataset(tiny_dataset, name="tiny")
    return run_experiment(dataset, get_pack("en"), "test", SystemSpec("bm25"), tmp_path / "runs",
                          show_progress=False, use_cache=False)


def test_metric_names_follow_mteb():
    scores = mteb_scores({"NDCG@10": 0.5, "MAP@100": 0.25, "Recall@1": 0.125, "P@3": 0.2, "MRR@10": 0.75,
                          "R_cap@10": 0.9, "Hole@10": 0.1})
    assert scores == {"ndcg_at_10": 0.5, "map_at_100": 0.25, "recall_at_1": 0.125, "precision_at_3": 0.2,
                      "mrr_at_10": 0.75, "accuracy": 0.125, "main_score": 0.5}
    with pytest.raises(BeirxError, match="no NDCG@10"):
        mteb_scores({"MAP@10": 0.1})


def test_layout_and_content(bm25_results, tmp_path):
    doc = bm25_results.results
    path = write_mteb_results(doc, "Tiny-beirx", tmp_path / "results", model_name="org/my model", revision="r1")
    assert path == tmp_path / "results" / "org__my_model" / "r1" / "Tiny-beirx.json"
    data = json.loads(path.read_text())
    assert data["task_name"] == "Tiny-beirx"
    assert data["dataset_revision"] == "local-" + doc.dataset.checksum.split(":")[1][:12]
    entry = data["scores"]["test"][0]
    assert entry["hf_subset"] == "default" and entry["languages"] == ["eng-Latn"]
    assert entry["main_score"] == entry["ndcg_at_10"] == doc.metrics["NDCG@10"]
    assert entry["recall_at_100"] == doc.metrics["Recall@100"] and entry["mrr_at_10"] == doc.metrics["MRR@10"]
    assert entry["precision_at_1"] == doc.metrics["P@1"] and entry["map_at_1000"] == doc.metrics["MAP@1000"]
    assert data["evaluation_time"] == pytest.approx(sum(doc.timings_seconds.values()))


def test_mteb_loads_it(bm25_results, tmp_path):
    mteb = needs("mteb", "mteb")
    path = write_mteb_results(bm25_results.results, "Tiny-beirx", tmp_path / "cache" / "results")
    assert path.parent == tmp_path / "cache" / "results" / "bm25" / "no_revision_available"
    loaded = mteb.TaskResult.from_disk(path)
    assert loaded.task_name == "Tiny-beirx" and loaded.get_score() == bm25_results.results.metrics["NDCG@10"]
    assert loaded.scores["test"][0]["ndcg_at_10"] == bm25_results.results.metrics["NDCG@10"]
    bench = mteb.ResultCache(cache_path=tmp_path / "cache").load_results(require_model_meta=False,
                                                                        include_remote=False)
    [model] = bench.model_results
    assert model.model_name == "bm25" and [t.task_name for t in model.task_results] == ["Tiny-beirx"]


def test_splits_merge_and_other_data_is_refused(bm25_results, tmp_path):
    doc = bm25_results.results
    dev = dataclasses.replace(doc, dataset=dataclasses.replace(doc.dataset, split="dev"),
                              metrics={**doc.metrics, "NDCG@10": 0.123})
    write_mteb_results(doc, "T", tmp_path, model_name="m", revision="r")
    path = write_mteb_results(dev, "T", tmp_path, model_name="m", revision="r")
    data = json.loads(path.read_text())
    assert sorted(data["scores"]) == ["dev", "test"] and data["scores"]["dev"][0]["main_score"] == 0.123
    write_mteb_results(dev, "T", tmp_path, model_name="m", revision="r")  # same split again: replaced, not doubled
    assert len(json.loads(path.read_text())["scores"]["dev"]) == 1
    other = dataclasses.replace(doc, dataset=dataclasses.replace(doc.dataset, checksum="sha256:other"))
    with pytest.raises(BeirxError, match="holds results on dataset revision"):
        write_mteb_results(other, "T", tmp_path, model_name="m", revision="r")


def test_hub_commit_is_the_dataset_revision(bm25_results):
    doc = bm25_results.results
    doc = dataclasses.replace(doc, dataset=dataclasses.replace(
        doc.dataset, source="hf:BeIR/scifact@" + "a" * 40 + " qrels=hf:BeIR/scifact-qrels@" + "b" * 40))
    assert dataset_revision(doc) == "a" * 40
    assert model_folder("intfloat/multilingual-e5-small") == "intfloat__multilingual-e5-small"


def test_cli(bm25_results, tmp_path, capsys):
    out = tmp_path / "mteb"
    assert main(["mteb", "results", str(bm25_results.results_path), "--task", "Tiny-beirx", "--output", str(out),
                 "--model", "baseline/bm25", "--revision", "1"]) == 0
    assert (out / "baseline__bm25" / "1" / "Tiny-beirx.json").is_file()
    assert "Tiny-beirx.json" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["mteb", "results", str(bad), "--task", "T", "--output", str(out)]) == 2
    assert "not a beirx results document" in capsys.readouterr().err


def test_eval_writes_mteb_results_too(tiny_dataset, tmp_path, capsys):
    out = tmp_path / "mteb"
    assert main(["eval", "--dataset", str(tiny_dataset), "--output", str(tmp_path / "res"), "--mteb-results", str(out),
                 "--mteb-task", "Tiny-beirx"]) == 0
    [path] = list(out.glob("*/*/Tiny-beirx.json"))
    assert path.parent.parent.name == "bm25" and f"MTEB results: {path}" in capsys.readouterr().out
    assert main(["eval", "--dataset", str(tiny_dataset), "--output", str(tmp_path / "res"),
                 "--mteb-results", str(out)]) == 2
    assert "name the MTEB task for tiny (en) with --mteb-task" in capsys.readouterr().err
