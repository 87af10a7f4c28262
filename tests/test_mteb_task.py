"""A beirx dataset as an MTEB task: metadata from the English task it adapts, a task object that runs and whose
results load through mteb's public API (nothing registered with mteb), a task file that imports, and
``mteb.evaluate`` on local data agreeing with beirx's own dense evaluation
(a tiny random-weight sentence-transformers model built here, and the real multilingual-e5-small)."""

from __future__ import annotations

import importlib.util
import json
import string

import pytest

from extras import needs

needs("mteb", "mteb")
needs("pyarrow", "hub")
torch = needs("torch", "neural")
transformers = needs("transformers", "neural")
st = needs("sentence_transformers", "neural")

import mteb  # noqa: E402
from artifact_fixtures import translation_manifest  # noqa: E402
from conftest import write_beir  # noqa: E402

from beirx.cli import main  # noqa: E402
from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.evaluate.runner import run_experiment
from beirx.evaluate.specs import SystemSpec  # noqa: E402
from beirx.evaluate.metrics import evaluate  # noqa: E402
from beirx.language_packs import get_pack  # noqa: E402
from beirx.publish.mteb_task import local_task  # noqa: E402
from beirx.publish.mteb_results import dataset_revision  # noqa: E402
from beirx.publish.mteb_task import build_spec, build_task_class, write_task_file  # noqa: E402

MANIFEST = dict(name="scifact", src="en", tgt="pl",
                translator={"backend": "ctranslate2", "model": "nllb-200-distilled-600M", "revision": "abc123"})


def _translated(tmp_path, name="scifact", lang="pl"):
    root = write_beir(tmp_path / f"{name}-{lang}",
                      [{"_id": "d1", "title": "Koty", "text": "Koty polują na myszy."},
                       {"_id": "d2", "title": "", "text": "Psy są lojalne."}],
                      [{"_id": "q1", "text": "Kto poluje na myszy?"}, {"_id": "d2", "text": "lojalny pies"}],
                      {"test": [("q1", "d1", 1), ("d2", "d2", 1)]})
    translation_manifest(**MANIFEST).save(root / "translation.json")
    return BeirDataset(root, name=name, lang=lang)


def test_translated_task_metadata(tmp_path, caplog):
    spec = build_spec(_translated(tmp_path), dataset_path="org/scifact-pl", dataset_revision="a" * 40)
    assert spec.name == "SciFact-PL-beirx"  # mteb's own SciFact-PL is BEIR-PL's data: never reused
    assert "mteb already has a task named SciFact-PL" in caplog.text
    meta = build_task_class(spec).metadata
    assert meta.type == "Retrieval" and meta.category == "t2t" and meta.main_score == "ndcg_at_10"
    assert meta.eval_langs == ["pol-Latn"] and meta.eval_splits == ["test"]
    assert meta.sample_creation == "machine-translated" and meta.adapted_from == ["SciFact"]
    assert meta.license == "cc-by-nc-4.0" and meta.annotations_creators == "expert-annotated"
    assert meta.dataset == {"path": "org/scifact-pl", "revision": "a" * 40}
    assert "ctranslate2, nllb-200-distilled-600M, abc123" in meta.description
    for key in ("@inproceedings{specter2020cohan", "@inproceedings{thakur2021beir", "@misc{wojtasik2024beirpl"):
        assert key in meta.bibtex_citation


def test_identical_ids_follow_the_catalogue(tmp_path):
    spec = build_spec(_translated(tmp_path, "arguana"), dataset_path="x/y", dataset_revision="r")
    assert spec.name == "ArguAna-PL-beirx" and spec.ignore_identical_ids is True
    assert build_task_class(spec).ignore_identical_ids is True
    assert build_spec(_translated(tmp_path, "nfcorpus"), dataset_path="x/y", dataset_revision="r",
                      name="NFCorpus-PL-mine").ignore_identical_ids is False


def test_task_object_runs_and_its_results_load_with_public_api(tiny_dataset, tmp_path):
    """What a user of a beirx task needs, through mteb's public API only: the task object runs with
    ``mteb.evaluate``, its ``TaskResult`` file loads, validates against the task and scores, ``ResultCache``
    loads it back and a ``Benchmark`` of the task makes beirx's results table. mteb's registry is left alone:
    ``mteb.get_task`` knows only mteb's own tasks, and a name of one of them is refused."""
    from beirx.evaluate import mteb_bm25
    from beirx.publish.mteb_benchmark import results_table

    cls, spec = local_task(BeirDataset(tiny_dataset, name="tiny"), name="Tiny-public")
    with pytest.raises(KeyError):
        mteb.get_task("Tiny-public")
    cache = mteb.ResultCache(tmp_path / "r")
    result = mteb.evaluate(mteb_bm25.model(lang="en"), cls(), cache=cache, overwrite_strategy="always",
                           show_progress_bar=False)
    [ran] = result.task_results
    assert ran.task_name == "Tiny-public" and ran.dataset_revision == spec.dataset_revision
    [path] = (tmp_path / "r" / "results").glob("beirx__bm25-en/*/Tiny-public.json")
    loaded = mteb.TaskResult.from_disk(path)
    assert loaded.task_name == "Tiny-public" and loaded.get_score() == ran.get_score() > 0
    assert loaded.validate_and_filter_scores(task=cls()).get_score() == ran.get_score()
    [model_result] = cache.load_results(tasks=[cls()], require_model_meta=False, include_remote=False).model_results
    assert [r.get_score() for r in model_result.task_results] == [ran.get_score()]
    again = mteb.evaluate(mteb_bm25.model(lang="en"), cls(), cache=cache, overwrite_strategy="only-missing",
                          show_progress_bar=False)  # found in the cache by the task object, not run again
    assert again.task_results[0].get_score() == ran.get_score()
    header, rows = results_table(mteb.Benchmark(name="B", tasks=[cls()]), tmp_path / "r")
    assert header == ["model", "Tiny-public", "Mean(Task)"]
    assert rows == [["beirx/bm25-en", ran.get_score(), ran.get_score()]]
    with pytest.raises(BeirxError, match="mteb already has a task named SciFact-PL"):
        build_spec(_translated(tmp_path), dataset_path="x/y", dataset_revision="r", name="SciFact-PL")
    assert mteb.get_task("SciFact-PL").metadata.dataset["path"] == "mteb/SciFact-PL"  # built-in untouched


def test_task_file_imports_and_matches(tmp_path):
    spec = build_spec(_translated(tmp_path, "arguana"), dataset_path="org/arguana-pl", dataset_revision="b" * 40)
    path = write_task_file(spec, tmp_path / "arguana_pl.py")
    source = path.read_text(encoding="utf-8")
    assert "class ArguAnaPLBeirx(AbsTaskRetrieval):\n    ignore_identical_ids = True\n" in source
    assert 'name="ArguAna-PL-beirx",' in source and 'eval_langs=["pol-Latn"],' in source
    module_spec = importlib.util.spec_from_file_location("arguana_pl", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    assert module.ArguAnaPLBeirx.metadata == build_task_class(spec).metadata
    assert module.ArguAnaPLBeirx.ignore_identical_ids is True


def test_cli_writes_pr_ready_file(tmp_path, capsys):
    dataset = _translated(tmp_path)
    out = tmp_path / "task.py"
    assert main(["mteb", "task", str(dataset.root), "--lang", "pl", "--name", "SciFact-PL-cli", "--repo", "org/sf-pl",
                 "--revision", "c" * 40, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "task SciFact-PL-cli: pol-Latn, splits test" in printed
    assert 'dataset={"path": "org/sf-pl", "revision": "' + "c" * 40 + '"}' in out.read_text()
    assert 'reference="https://huggingface.co/datasets/org/sf-pl"' in out.read_text()


# -- mteb.evaluate on local data -------------------------------------------------------------------
WORDS = sorted(set("""cats are small domestic animals that hunt mice dogs loyal and good companions rodents
them at night whales the largest in ocean birds can fly sing which hunt largest ocean animal loyal companion dog
unjudged query""".split()))


@pytest.fixture(scope="session")
def tiny_st_model(tmp_path_factory):
    """A 2-layer, 16-dim BERT with mean pooling and random (seeded) weights, as a sentence-transformers folder."""
    path = tmp_path_factory.mktemp("models") / "tiny-st"
    bert_dir = tmp_path_factory.mktemp("models") / "tiny-bert"
    torch.manual_seed(7)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(string.punctuation) + WORDS
    tokenizer = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=64)
    transformers.BertModel(config, add_pooling_layer=False).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    model = st.SentenceTransformer(str(bert_dir), device="cpu")  # a plain BERT folder gets mean pooling
    model.max_seq_length = 48
    model.save(str(path))
    return path


def _mteb_run(task, model, tmp_path, prompts=None):
    from mteb.models import SentenceTransformerEncoderWrapper

    wrapped = SentenceTransformerEncoderWrapper(model, model_prompts=prompts) if prompts else model
    folder = tmp_path / "predictions"
    result = mteb.evaluate(wrapped, task, cache=None, encode_kwargs={"batch_size": 8}, prediction_folder=folder,
                           overwrite_strategy="always", show_progress_bar=False)
    run = json.loads(task._predictions_path(folder).read_text())["default"]["test"]
    return result.task_results[0], run


def test_mteb_evaluate_runs_offline_and_agrees_with_beirx(tiny_dataset, tiny_st_model, tmp_path):
    dataset = BeirDataset(tiny_dataset, name="tiny")
    cls, spec = local_task(dataset, name="Tiny-beirx")
    assert spec.dataset_path.startswith(str(tmp_path)) and spec.dataset_revision.startswith("local-")
    task_result, run = _mteb_run(cls(), st.SentenceTransformer(str(tiny_st_model)), tmp_path)
    assert task_result.task_name == "Tiny-beirx" and task_result.dataset_revision == spec.dataset_revision
    beirx_side = run_experiment(dataset, get_pack("en"), "test", SystemSpec("bm25"), tmp_path / "bm25",
                                show_progress=False, use_cache=False)
    assert dataset_revision(beirx_side.results) == spec.dataset_revision  # converted results match the task
    scores = task_result.scores["test"][0]
    assert scores["hf_subset"] == "default" and scores["languages"] == ["eng-Latn"]
    _, qrels = dataset.queries_for_split("test")
    ours = evaluate(qrels, run, k_values=(1, 3, 10)).metrics  # MTEB's ranking, beirx's metrics
    for k in (1, 3, 10):
        assert scores[f"ndcg_at_{k}"] == pytest.approx(ours[f"NDCG@{k}"], abs=1e-5)  # MTEB rounds to 5 decimals
        assert scores[f"mrr_at_{k}"] == pytest.approx(ours[f"MRR@{k}"], abs=1e-9)
    outcome = run_experiment(dataset, get_pack("en"), "test", SystemSpec("dense", {"model": str(tiny_st_model)}),
                             tmp_path / "beirx", show_progress=False, use_cache=False)
    assert outcome.results.metrics["NDCG@10"] == pytest.approx(scores["ndcg_at_10"], abs=1e-4)


def test_e5_small_slice_mteb_equals_beirx_dense(e5_small, scifact_dir, tmp_path):
    """The real multilingual-e5-small on 6 SciFact test queries and 24 short documents: MTEB (with its registered
    E5 prompts) and beirx's dense retriever give the same nDCG@10 (benchmarks/mteb_parity.py: full SciFact)."""
    full = BeirDataset(scifact_dir)
    qrels = full.qrels("test")
    qids = sorted(qrels, key=int)[:6]
    keep = {d for q in qids for d in qrels[q]}
    corpus = list(full.iter_corpus())
    keep |= {d.id for d in corpus[:24 - len(keep)]}
    root = write_beir(tmp_path / "scifact", [{"_id": d.id, "title": d.title, "text": d.text[:200]}
                                             for d in corpus if d.id in keep],
                      [{"_id": q, "text": full.queries[q].text} for q in qids],
                      {"test": [(q, d, s) for q in qids for d, s in qrels[q].items()]})
    dataset = BeirDataset(root, name="scifact")
    cls, spec = local_task(dataset)
    assert spec.name == "SciFact-beirx"
    prompts = dict(mteb.get_model_meta("intfloat/multilingual-e5-small").loader_kwargs["model_prompts"])
    assert prompts == {"query": "query: ", "document": "passage: "}
    task_result, _ = _mteb_run(cls(), st.SentenceTransformer(str(e5_small), device="cpu"),
                               tmp_path, prompts)
    outcome = run_experiment(dataset, get_pack("en"), "test",
                             SystemSpec("dense", {"model": str(e5_small), "batch_size": 8}), tmp_path / "beirx",
                             show_progress=False, use_cache=False)
    assert outcome.results.system.description["passage_prompt"] == "passage: "
    assert outcome.results.metrics["NDCG@10"] == pytest.approx(task_result.scores["test"][0]["ndcg_at_10"],
                                                                  abs=1e-4)
    assert task_result.get_score() > 0.5


def test_cli_evaluate_writes_mteb_results(tiny_dataset, tiny_st_model, tmp_path, capsys):
    assert main(["mteb", "task", str(tiny_dataset), "--name", "Tiny-cli", "--evaluate", str(tiny_st_model),
                 "--results", str(tmp_path / "r"), "--output", str(tmp_path / "tiny_cli.py"), "--batch-size", "4"]) == 0
    printed = capsys.readouterr().out
    assert "prompts for MTEB: none" in printed and "Tiny-cli main score (nDCG@10)" in printed
    [path] = list((tmp_path / "r" / "results").glob("*/*/Tiny-cli.json"))
    assert mteb.TaskResult.from_disk(path).task_name == "Tiny-cli"
