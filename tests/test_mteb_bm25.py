"""beirx's BM25 as an MTEB model: on a SciFact-ES task generated offline (real SciFact documents translated by
the real Apertium engine with ``beirx translate``, built with ``beirx mteb task``), ``mteb.evaluate`` gives
the very run and scores ``beirx eval`` gives on the same folder; its ModelMeta and language choice.
"""

from __future__ import annotations

import json

import pytest

from extras import needs

needs("mteb", "mteb")

import mteb  # noqa: E402

from beirx.cli import main  # noqa: E402
from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.evaluate import mteb_bm25  # noqa: E402
from beirx.evaluate.runs import read_trec  # noqa: E402
from beirx.publish.mteb_task import local_task  # noqa: E402
from test_translate_pipeline_apertium import make_slice, pytestmark  # noqa: E402, F401  (skips without Apertium)


@pytest.fixture(scope="module")
def scifact_es(scifact_dir, tmp_path_factory):
    """120 real SciFact documents (with the queries judged on them) translated into Spanish by Apertium."""
    base = tmp_path_factory.mktemp("scifact-es")
    source = make_slice(scifact_dir, base / "scifact", 120)
    out = base / "scifact-es"
    assert main(["translate", "--dataset", str(source), "--lang", "es", "--translator", "apertium", "--output",
                 str(out), "--memory", str(base / "tm.sqlite"), "--no-quality", "--no-progress", "-q"]) == 0
    return out


def test_mteb_scores_equal_beirx_eval_on_generated_scifact_es(scifact_es, tmp_path, capsys):
    out = tmp_path / "beirx"
    assert main(["eval", "--dataset", str(scifact_es), "--lang", "es", "--retriever", "bm25", "--output", str(out),
                 "--no-progress"]) == 0
    [results_path] = out.glob("*.json")
    results = json.loads(results_path.read_text())
    beirx_run = read_trec(out / results["run_file"])

    dataset = BeirDataset(scifact_es, name="scifact", lang="es")
    cls, spec = local_task(dataset, name="SciFact-ES-bm25test")
    assert spec.eval_langs == ["spa-Latn"] and spec.sample_creation == "machine-translated"
    model = mteb_bm25.model()  # no language given: the task's own (spa-Latn -> the Spanish pack)
    folder = tmp_path / "predictions"
    result = mteb.evaluate(model, cls(), cache=None, prediction_folder=folder, overwrite_strategy="always",
                           show_progress_bar=False)
    assert model.retriever.pack.code == "es"
    mteb_run = json.loads(cls()._predictions_path(folder).read_text())["default"]["test"]
    assert set(mteb_run) == set(beirx_run)
    for qid, docs in beirx_run.items():  # the same documents with the same scores, so the same ranking
        assert mteb_run[qid] == pytest.approx(docs, abs=1e-5)
    scores = result.task_results[0].scores["test"][0]
    for ours, theirs in (("NDCG@10", "ndcg_at_10"), ("Recall@100", "recall_at_100"), ("MRR@10", "mrr_at_10")):
        assert scores[theirs] == pytest.approx(results["metrics"][ours], abs=1e-5)  # MTEB rounds to 5 places
    assert scores["ndcg_at_10"] > 0.5

    # The same through the command line, with the language given.
    assert main(["mteb", "task", str(scifact_es), "--lang", "es", "--name", "SciFact-ES-bm25cli", "--evaluate",
                 "bm25", "--results", str(tmp_path / "r"), "--output", str(tmp_path / "task.py")]) == 0
    printed = capsys.readouterr().out
    assert "MTEB model: beirx/bm25-es" in printed
    assert f"main score (nDCG@10) {scores['ndcg_at_10']:.5f}" in printed
    [path] = (tmp_path / "r" / "results").glob("beirx__bm25-es/*/SciFact-ES-bm25cli.json")
    assert mteb.TaskResult.from_disk(path).get_score() == pytest.approx(results["metrics"]["NDCG@10"], abs=1e-5)


def test_model_meta_and_language_choice():
    meta = mteb_bm25.model(lang="pl").mteb_model_meta
    assert (meta.name, meta.languages, meta.model_type, meta.n_parameters) == ("beirx/bm25-pl", ["pol-Latn"],
                                                                               ["sparse"], 0)
    assert meta.revision.startswith("beirx-") and meta.open_weights and meta.license == "apache-2.0"
    loaded = meta.load_model()
    assert isinstance(loaded, mteb_bm25.BeirxBM25) and loaded.lang == "pl"
    flat = mteb_bm25.model(lang="pl", fields="flat").mteb_model_meta
    assert flat.experiment_kwargs == {"fields": "flat"} and flat.loader_kwargs == {"lang": "pl", "fields": "flat"}
    everywhere = mteb_bm25.model().mteb_model_meta
    assert everywhere.name == "beirx/bm25" and {"pol-Latn", "eng-Latn"} <= set(everywhere.languages)

    task = mteb.get_task("SciFact-PL")  # mteb's own BEIR-PL task: Polish, so Stempel
    assert mteb_bm25.model().pack_for(task.metadata, "default").stemmer == "stempel"
    bilingual = type("Meta", (), {"name": "M", "eval_langs": {"x": ["pol-Latn", "eng-Latn"]}})()
    with pytest.raises(BeirxError, match="pass mteb_bm25.model"):
        mteb_bm25.model().pack_for(bilingual, "x")
    assert mteb_bm25.model(lang="en").pack_for(bilingual, "x").code == "en"  # a given language wins
