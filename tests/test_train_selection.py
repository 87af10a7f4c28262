"""The dev slice: training holds out a seeded share of its queries, evaluates the base and each checkpoint on them
as ``beirx eval`` does, and keeps the best, the base included. Run for real on a synthetic dataset with a tiny
bi-encoder (tests/train_toys.py): the scores of the curve equal ``beirx eval`` on the held-out queries, and the
saved weights are those of the point kept."""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")
pytest.importorskip("datasets")
pytest.importorskip("accelerate")

from beirx.artifacts.results import ResultsDocument  # noqa: E402
from beirx.cli import main  # noqa: E402
from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.data.front_matter import read_front_matter  # noqa: E402
from beirx.train import selection  # noqa: E402
from beirx.train.examples import positive_pairs  # noqa: E402
from beirx.train.options import TrainOptions  # noqa: E402
from beirx.train.session import checkpoint_spacing  # noqa: E402
from train_toys import synthetic_bi_encoder, synthetic_dataset  # noqa: E402


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    return synthetic_dataset(root / "data"), synthetic_bi_encoder(root / "model")


def weights(folder):
    from safetensors.torch import load_file

    found = {}
    for path in sorted(folder.rglob("model.safetensors")):
        if "checkpoints" not in path.relative_to(folder).parts:
            found.update({f"{path.parent.relative_to(folder)}/{k}": v for k, v in load_file(path).items()})
    return found


def same_weights(a, b) -> bool:
    wa, wb = weights(a), weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def train(kind, data, model, out, *extra):
    return main(["train", kind, "--dataset", str(data), "--model", str(model), "--output", str(out), "--device", "cpu",
                 "--batch-size", "8", "--epochs", "3", "--dev-fraction", "0.25", "--no-progress", *extra])


def dev_eval(data, dev_ids, flags, out) -> ResultsDocument:
    """``beirx eval`` on the held-out queries: their judgements written as a split of a copy of the dataset."""
    copy = out.parent / (out.name + "-data")
    shutil.copytree(data, copy)
    rows = [line for line in (data / "qrels" / "train.tsv").read_text().splitlines()[1:]
            if line.split("\t")[0] in dev_ids]
    (copy / "qrels" / "heldout.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    assert main(["eval", "--dataset", str(copy), "--split", "heldout", *flags, "--device", "cpu", "--output", str(out),
                 "--no-progress"]) == 0
    [path] = [p for p in out.glob("*.json") if "rerank" in p.name or "rerank" not in str(flags)]
    return ResultsDocument.load(path)


# -- the slice ---------------------------------------------------------------------------------------------------------
def test_dev_size_by_hand():
    assert selection.dev_size(809, 0.1, 1000) == 81  # SciFact's train queries
    assert selection.dev_size(500_000, 0.1, 1000) == 1000  # capped
    assert selection.dev_size(40, 0.1, 1000) == 0  # 4 queries cannot choose: no slice
    assert selection.dev_size(40, 0.25, 1000) == 10 and selection.dev_size(50, 0.1, 1000) == 5


def test_the_slice_is_seeded_whole_queries_and_left_out_of_training(toy):
    data, _ = toy
    dataset = BeirDataset(data)
    examples = positive_pairs(dataset, "train")
    kept, dev, reason = selection.hold_out(dataset, "train", examples, 0.25, 1000, 42)
    assert reason is None and len(dev.queries) == 10 and dev.of == 40
    assert not {e.query_id for e in kept} & set(dev.queries) and len(kept) == 30
    assert dev.qrels == {q: dataset.qrels("train")[q] for q in dev.queries}
    again = selection.hold_out(dataset, "train", examples, 0.25, 1000, 42)[1]
    other = selection.hold_out(dataset, "train", examples, 0.25, 1000, 7)[1]
    assert set(again.queries) == set(dev.queries) != set(other.queries)
    none = selection.hold_out(dataset, "train", examples, 0.1, 1000, 42)
    assert none[0] == examples and none[1] is None and "fewer than 5" in none[2]
    assert selection.hold_out(dataset, "train", examples, 0, 1000, 42)[2].startswith("--dev-fraction 0")


def test_checkpoints_are_about_a_quarter_of_the_run_apart():
    opts = TrainOptions(dataset="d", model="m", output="o", batch_size=8, epochs=3)
    assert checkpoint_spacing(opts, 30, "cpu") == 3  # ceil(30 / 8) = 4 steps an epoch, 12 in all, a quarter: 3
    assert checkpoint_spacing(TrainOptions(dataset="d", model="m", output="o", max_steps=10_000), 30, "cpu") == 500
    assert checkpoint_spacing(TrainOptions(dataset="d", model="m", output="o", save_steps=7), 30, "cpu") == 7
    assert checkpoint_spacing(TrainOptions(dataset="d", model="m", output="o", dev_fraction=0), 30, "cpu") == 500


def test_a_large_corpus_is_restricted_to_judged_bm25_and_a_seeded_sample(toy, monkeypatch):
    from beirx.evaluate.retrievers.bm25 import BM25Retriever
    from beirx.language_packs import get_pack

    data, _ = toy
    dataset = BeirDataset(data)
    _, dev, _ = selection.hold_out(dataset, "train", positive_pairs(dataset, "train"), 0.25, 1000, 42)
    monkeypatch.setattr(selection, "DEV_CORPUS_LIMIT", 40)
    monkeypatch.setattr(selection, "RERANK_DEPTH", 2)
    bm25 = BM25Retriever(get_pack("en"), show_progress=False)
    bm25.index(dataset)
    selection.restrict_corpus(dev, dataset, bm25)
    judged = {d for docs in dev.qrels.values() for d in docs}
    pooled = {d for docs in bm25.search(dev.queries, 2).values() for d in docs}
    assert len(dev.documents) == 40 and judged | pooled <= set(dev.documents) and dev.corpus_size == 100
    assert "40 of the corpus's 100 documents: every document judged for a dev query" in dev.describe()["corpus"]


# -- the choice, for real ----------------------------------------------------------------------------------------------
def test_when_no_checkpoint_beats_the_base_the_output_is_the_base(toy, tmp_path, capsys):
    """A learning rate of 1e-12 leaves every ranking as it was: each checkpoint ties the base, and a tie keeps the
    base. The scores are beirx eval's on the held-out queries."""
    data, model = toy
    out = tmp_path / "out"
    assert train("bi-encoder", data, model, out, "--learning-rate", "1e-12") == 0
    printed = capsys.readouterr().out
    record = read_front_matter(out / "README.md")["beirx"]
    chosen, dev = record["training"]["selection"], record["training_data"]["dev"]
    assert [p["step"] for p in chosen["curve"]] == [0, 3, 6, 9, 12] and chosen["kept"] == "base"
    assert all(p["ndcg@10"] == chosen["curve"][0]["ndcg@10"] for p in chosen["curve"])
    assert chosen["verdict"].startswith("no checkpoint beat the base model on the dev slice")
    assert "the output is the base model" in printed and chosen["verdict"] in (out / "README.md").read_text()
    assert same_weights(out, model)  # the base's weights, exactly
    assert record["training_data"]["num_queries"] == 30 and dev["num_queries"] == 10
    by_hand = dev_eval(data, set(dev["query_ids"]), ["--retriever", "dense", "--model", str(model)], tmp_path / "e")
    assert chosen["curve"][0]["ndcg@10"] == round(by_hand.metrics["NDCG@10"], 6)
    assert chosen["curve"][0]["recall@100"] == round(by_hand.metrics["Recall@100"], 6)


def test_the_best_checkpoint_is_kept_and_scored_as_beirx_eval_scores_it(toy, tmp_path, capsys):
    data, model = toy
    out = tmp_path / "out"
    assert train("bi-encoder", data, model, out, "--learning-rate", "1e-3", "--keep-checkpoints") == 0
    record = read_front_matter(out / "README.md")["beirx"]
    chosen = record["training"]["selection"]
    best = max(chosen["curve"], key=lambda p: (p["ndcg@10"], -p["step"]))
    assert chosen["kept_step"] == best["step"] > 0 and best["ndcg@10"] > chosen["curve"][0]["ndcg@10"]
    assert f"kept checkpoint-{best['step']}" in capsys.readouterr().out
    assert same_weights(out, out / "checkpoints" / f"checkpoint-{best['step']}")
    by_hand = dev_eval(data, set(record["training_data"]["dev"]["query_ids"]),
                       ["--retriever", "dense", "--model", str(out)], tmp_path / "e")
    assert best["ndcg@10"] == round(by_hand.metrics["NDCG@10"], 6)


def test_a_cross_encoder_keeps_its_best_checkpoint_even_an_early_one(toy, tmp_path):
    """Reranking BM25's top 100 as beirx eval does; here the first checkpoint is the best, so the saved weights are
    loaded back from it (not the last step's)."""
    data, model = toy
    out = tmp_path / "ce"
    assert train("cross-encoder", data, model, out, "--learning-rate", "1e-3", "--epochs", "2", "--negatives", "1",
                 "--keep-checkpoints") == 0
    record = read_front_matter(out / "README.md")["beirx"]
    chosen = record["training"]["selection"]
    best = max(chosen["curve"], key=lambda p: (p["ndcg@10"], -p["step"]))
    assert chosen["kept_step"] == best["step"] and 0 < best["step"] < record["training"]["steps"]
    assert same_weights(out, out / "checkpoints" / f"checkpoint-{best['step']}")
    by_hand = dev_eval(data, set(record["training_data"]["dev"]["query_ids"]),
                       ["--retriever", "bm25", "--reranker", "cross-encoder", "--reranker-model", str(out)],
                       tmp_path / "e")
    assert best["ndcg@10"] == round(by_hand.metrics["NDCG@10"], 6)


def test_a_killed_run_resumes_its_dev_curve_without_evaluating_the_base_again(toy, tmp_path, monkeypatch):
    from transformers import TrainerCallback

    from beirx.train import bi_encoder, checkpoints

    data, model = toy
    opts = dict(dataset=str(data), model=str(model), lang="en", batch_size=8, epochs=3, learning_rate=1e-3,
                dev_fraction=0.25, device="cpu")

    class Kill(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == 6:
                raise KeyboardInterrupt  # after checkpoint-6 is saved and evaluated, as a kill would leave it

    killed = tmp_path / "killed"
    with pytest.raises(KeyboardInterrupt):
        bi_encoder.train_bi_encoder(TrainOptions(output=killed, **opts), False, callbacks=(Kill(),))
    sealed = (checkpoints.base_dir(killed) / checkpoints.SEAL).read_bytes()
    calls = []
    original = selection.dense_scorer

    def counting(*args, **kwargs):
        score = original(*args, **kwargs)
        return lambda model, base_model=False: calls.append(base_model) or score(model, base_model)

    monkeypatch.setattr(selection, "dense_scorer", counting)
    resumed = bi_encoder.train_bi_encoder(TrainOptions(output=killed, **opts), False)
    assert resumed["training"]["resumed_from"] == "checkpoint-6" and calls == [False, False]  # steps 9 and 12 only
    assert (sealed and not checkpoints.checkpoint_dir(killed).exists())
    monkeypatch.setattr(selection, "dense_scorer", original)
    straight = bi_encoder.train_bi_encoder(TrainOptions(output=tmp_path / "straight", **opts), False)
    assert resumed["training"]["selection"]["curve"] == straight["training"]["selection"]["curve"]
    assert same_weights(killed, tmp_path / "straight")
    assert json.loads(json.dumps(resumed["training_data"]["dev"])) == straight["training_data"]["dev"]
