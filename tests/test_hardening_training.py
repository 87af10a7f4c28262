"""Hardening battery, class 14: training memory. The bi-encoder's in-batch loss runs through GradCache, so memory
follows ``--mini-batch-size``, not the batch (and the weights do not depend on it); the maximum length comes from
the data when not given; the peak is estimated before the first step, and a run that would not fit stops with a
message naming options that do (exit code 2, nothing trained).

Class 15, refusals before the work: an ``--evaluate`` split without judgements, an evaluation folder that is a file,
a cross-encoder ``--evaluate`` on a bi-encoder base, an ``--eval-split`` without judgements, a training length the
model cannot read, and a review of a read-only dataset were refused only after training (or serving) began, if at
all. Class 16, a killed or refused command leaves a state its rerun completes: a kill during the evaluation is
completed by the same command, a NaN or out-of-range number is refused by its flag before any checkpoint record is
written, and a record with no checkpoint beside it binds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beirx.cli import main
from beirx.data.front_matter import read_front_matter
from beirx.errors import BeirxError
from beirx.train import memory
from conftest import TINY_CORPUS, TINY_QRELS, TINY_QUERIES, write_beir
from hardening_helpers import tiny_st  # noqa: F401 (a fixture)
from extras import needs

E5_SMALL = memory.Shape(layers=12, hidden=384, heads=12, intermediate=1536)


def test_activation_bytes_by_hand():
    # per layer: s*h*(34 + 8*i/h) + 9*a*s^2 = 512*384*66 + 9*12*512^2 = 12,976,128 + 28,311,552
    # x 12 layers + embedding output and last states 4*512*384*2 = 1,572,864
    assert E5_SMALL.sequence_bytes(512) == 12 * (12_976_128 + 28_311_552) + 1_572_864 == 497_025_024
    assert E5_SMALL.sequence_bytes(128) == 12 * (128 * 384 * 66 + 9 * 12 * 128 ** 2) + 4 * 128 * 384 * 2


def test_the_pass_peak_uses_the_measured_coefficients_by_hand():
    # per layer: 2.24 * 12,976,128 + 10.5 * 12 * 512^2 = 29,066,526.72 + 33,030,144; x 12 + 1,572,864
    assert E5_SMALL.peak_sequence_bytes(512) == int(12 * (29_066_526.72 + 33_030_144) + 1_572_864) == 746_732_912
    # 25% over 8 sequences and the 0.53 GB the allocator keeps
    assert E5_SMALL.pass_bytes(8, 512) == int(1.25 * (8 * 746_732_912 + int(0.53 * (1 << 30))))
    # the README example (mini-batch 8 of 512 tokens, 0.9 GB resident): 9.8 GB; the whole run peaked at 9.4 GB
    gb = 1 << 30
    assert f"{memory.estimate(E5_SMALL, 117_653_760, 8, 512, int(0.9 * gb)).peak / gb:.1f}" == "9.8"


class WordTokenizer:
    """One token per word (and one per pair joint), as a stand-in for a real tokenizer."""

    def __call__(self, texts, pairs=None, truncation=False):
        if pairs is not None:
            return {"input_ids": [[0] * (len(a.split()) + len(b.split()) + 1) for a, b in zip(texts, pairs)]}
        return {"input_ids": [[0] * len(t.split()) for t in texts]}


def test_length_from_data_is_the_99th_percentile_capped_by_the_model():
    texts = [" ".join(["w"] * n) for n in range(1, 101)]  # 1..100 words
    queries = ["a b"] * 100
    # 99th percentile ("higher") of 2..101 tokens with the prompt word is 100 -> a multiple of 8: 104
    assert memory.length_from_data(WordTokenizer(), [queries, texts], ["query: ", "passage: "], 512) == 104
    assert memory.length_from_data(WordTokenizer(), [queries, texts], ["query: ", "passage: "], 64) == 64
    pairs = list(zip(queries, texts))  # 2 + n + 1 tokens: 99th percentile 102 -> 104
    assert memory.length_from_data(WordTokenizer(), [pairs], [""], 512) == 104


def test_check_fits_names_options_that_fit():
    gb = 1 << 30
    resident, params = 2 * gb, 118_000_000
    est = memory.estimate(E5_SMALL, params, 32, 512, resident)
    assert est.peak == 2 * gb + 12 * params + E5_SMALL.pass_bytes(32, 512)  # 31.8 GB: the README example, no GradCache
    with pytest.raises(BeirxError) as caught:
        memory.check_fits(E5_SMALL, params, 32, 512, 6.0, "--mini-batch-size", resident=resident)
    message = str(caught.value)
    room = 6 * gb - resident - 12 * params
    assert E5_SMALL.pass_bytes(2, 512) <= room < E5_SMALL.pass_bytes(3, 512)  # 2 sequences of 512 tokens fit
    assert "--mini-batch-size 2 (about " in message and "--max-seq-length " in message
    tokens = int(message.split("--max-seq-length ")[1].split()[0])
    assert E5_SMALL.pass_bytes(32, tokens) <= room < E5_SMALL.pass_bytes(32, tokens + 8)
    assert message.startswith("training needs about 31.8 GB at its peak") and "nothing was trained" in message
    assert memory.check_fits(E5_SMALL, params, 2, 512, 6.0, "--mini-batch-size", resident=resident).peak < 6 * gb
    with pytest.raises(BeirxError, match="the model alone does not fit"):
        memory.check_fits(E5_SMALL, params, 1, 512, 1.0, "--mini-batch-size", resident=resident)


@pytest.fixture
def tiny(tmp_path):
    return write_beir(tmp_path / "tiny", TINY_CORPUS, TINY_QUERIES, TINY_QRELS)


def _train(tiny, model, out, *extra):
    needs("accelerate", "train")
    return main(["train", "bi-encoder", "--dataset", str(tiny), "--split", "test", "--model", str(model),
                 "--output", str(out), "--device", "cpu", "--batch-size", "4", "--max-steps", "2", "--save-steps", "1",
                 "--no-progress", *extra])


def test_a_run_that_will_not_fit_stops_before_the_first_step(tiny, tiny_st, tmp_path, capsys):
    assert _train(tiny, tiny_st, tmp_path / "out", "--max-memory", "0.01") == 2
    err = capsys.readouterr().err
    assert "error: training needs about" in err and "more than --max-memory 0.01 allows" in err
    assert not (tmp_path / "out" / "checkpoints").exists() and not (tmp_path / "out" / "model.safetensors").exists()


def test_gradcache_mini_batches_change_memory_not_the_gradient(tiny, tiny_st, tmp_path):
    """Without dropout (whose random masks depend on how a batch is split, so the mini-batch size is recorded as a
    training parameter), one text per pass and the whole batch at once give the same weights."""
    import shutil

    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    model = tmp_path / "no-dropout"
    shutil.copytree(tiny_st, model)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "hidden_dropout_prob": 0.0,
                                                   "attention_probs_dropout_prob": 0.0}))
    assert _train(tiny, model, tmp_path / "one", "--mini-batch-size", "1") == 0
    assert _train(tiny, model, tmp_path / "four", "--mini-batch-size", "4") == 0
    a, b = load_file(tmp_path / "one" / "model.safetensors"), load_file(tmp_path / "four" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    loss = read_front_matter(tmp_path / "one" / "README.md")["beirx"]["loss"]
    assert loss["gradcache"] == {"loss_class": "CachedMultipleNegativesRankingLoss", "mini_batch_size": 1}
    assert loss["name"] == "MultipleNegativesRankingLoss" and loss["max_seq_length_from"].startswith("data (99th")
    assert "compare --max-seq-length 64 or 128" in (tmp_path / "one" / "README.md").read_text()
    judged = {q for q, _, _ in TINY_QRELS["test"]} | {d for _, d, _ in TINY_QRELS["test"]}
    texts = [q["text"] for q in TINY_QUERIES if q["_id"] in judged] + \
        [f"{d['title']} {d['text']}".strip() for d in TINY_CORPUS if d["_id"] in judged]
    longest = max(len(ids) for ids in AutoTokenizer.from_pretrained(str(model))(texts)["input_ids"])
    assert loss["max_seq_length"] == min(48, -(-longest // 8) * 8)  # a column's 99th percentile of few is its max


def test_on_a_gpu_the_budget_is_the_devices_free_memory(monkeypatch):
    """No GPU here: torch.cuda's three answers are stubbed, the arithmetic and the message are beirx's."""
    torch = needs("torch", "neural")

    gb = 1 << 30
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda index: int(0.5 * gb) if index == 1 else 0)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index: (3 * gb, 16 * gb) if index == 1 else (0, 0))
    where = memory.Where("cuda")
    params = 118_000_000
    with pytest.raises(BeirxError) as caught:  # 0.5 GB of weights + 1.3 GB of state + 8 x 512 tokens > 3.5 GB
        memory.check_fits(E5_SMALL, params, 8, 512, None, "--mini-batch-size", where=where)
    message = str(caught.value)
    assert "more than the free memory of GPU 1 allows (3.5 GB)" in message
    room = 3 * gb - 12 * params  # the free memory, less gradients and optimizer state; the weights are in use already
    fit = max(n for n in range(1, 8) if E5_SMALL.pass_bytes(n, 512) <= room)
    assert f"--mini-batch-size {fit} (about " in message
    assert memory.check_fits(E5_SMALL, params, fit, 512, None, "--mini-batch-size", where=where).resident == 0.5 * gb
    assert memory.Where("cpu").in_use() > 0 and not memory.Where("cpu").cuda  # the host: the resident memory


# -- refusals before the work ---------------------------------------------------------------------------------------
# Each was refused only after training ended (the model saved, so the same command then said "pass --overwrite"),
# or not at all. Now each is exit code 2 with nothing trained: no output folder, no checkpoint record.
def _refused_before_training(code, out, err, phrase):
    assert code == 2, err
    assert phrase in err, err
    assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))


def test_evaluate_on_a_split_without_judgements_is_refused_before_training(tiny, tiny_st, tmp_path, capsys):
    (tiny / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t0\n", encoding="utf-8")
    code = _train(tiny, tiny_st, tmp_path / "out", "--evaluate", "dev")
    _refused_before_training(code, tmp_path / "out", capsys.readouterr().err,
                             f"--evaluate dev: {tiny / 'qrels' / 'dev.tsv'} has no positive judgement of a query "
                             "with a text (judged queries: 1): nothing to evaluate on")


def test_an_evaluation_folder_that_is_a_file_is_refused_before_training(tiny, tiny_st, tmp_path, capsys):
    import shutil

    shutil.copy(tiny / "qrels" / "test.tsv", tiny / "qrels" / "dev.tsv")
    (tmp_path / "out-evaluation").write_text("not a folder")
    code = _train(tiny, tiny_st, tmp_path / "out", "--evaluate", "dev")
    _refused_before_training(code, tmp_path / "out", capsys.readouterr().err,
                             f"--evaluate writes its results to {tmp_path / 'out-evaluation'}, which is a file")


def test_a_cross_encoder_evaluate_on_a_bi_encoder_base_is_refused_before_training(tiny, tiny_st, tmp_path, capsys):
    import shutil

    pytest.importorskip("accelerate")
    shutil.copy(tiny / "qrels" / "test.tsv", tiny / "qrels" / "dev.tsv")
    code = main(["train", "cross-encoder", "--dataset", str(tiny), "--split", "test", "--model", str(tiny_st),
                 "--output", str(tmp_path / "out"), "--device", "cpu", "--negatives", "1", "--max-steps", "1",
                 "--no-progress", "--evaluate", "dev"])
    _refused_before_training(code, tmp_path / "out", capsys.readouterr().err,
                             f"--model {tiny_st}: a sentence-transformers bi-encoder (BertModel), not a cross-encoder")


def test_an_eval_split_without_judgements_is_refused_before_mining(tiny, tiny_st, tmp_path, capsys, beirx_home):
    (tiny / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td1\t0\n", encoding="utf-8")
    code = _train(tiny, tiny_st, tmp_path / "out", "--eval-split", "dev")
    _refused_before_training(code, tmp_path / "out", capsys.readouterr().err, "--eval-split dev: ")
    assert not any(p.is_file() for p in beirx_home.rglob("*"))  # no BM25 index was built


def test_a_length_the_model_cannot_read_is_refused_before_training(tiny, tiny_st, tmp_path, capsys):
    code = _train(tiny, tiny_st, tmp_path / "out", "--max-seq-length", "4096")
    _refused_before_training(code, tmp_path / "out", capsys.readouterr().err,
                             f"--max-seq-length 4096 is more than {tiny_st} can read (48 tokens)")


def test_a_review_of_a_read_only_dataset_is_refused_before_serving(tmp_path):
    """No review there yet: the folder the review would be made in is read-only. Refused before a port is taken
    or a sample drawn, naming the folder; nothing is written."""
    import os
    import subprocess
    import sys

    from hardening_helpers import small_fs_runner
    from local_processes import free_port
    from review_fixtures import write_pair

    runner = small_fs_runner()
    if runner is None:
        pytest.skip("cannot mount a read-only folder here (no unprivileged namespaces, not root)")
    data, ro, out = tmp_path / "data", tmp_path / "ro", tmp_path / "out"
    write_pair(data / "clean")
    ro.mkdir()
    out.mkdir()
    before = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    script = (f"set -e; mount --bind {data} {ro}; mount -o remount,ro,bind {ro}; set +e; timeout 60 {sys.executable} "
              f"-m beirx review {ro}/clean/es --sample 3 --port {free_port()} >{out}/o 2>{out}/e; echo $? >{out}/rc")
    repo = Path(__file__).resolve().parents[1]
    subprocess.run([*runner, script], check=True, env={**os.environ, "PYTHONPATH": str(repo)}, timeout=120)
    err = (out / "e").read_text()
    assert int((out / "rc").read_text()) == 2, err
    assert f"{ro}/clean/es is read-only (a read-only file system or folder): the review app saves every rating " \
           "there, so it cannot run; no review was started" in err, err
    assert "open http" not in (out / "o").read_text() and "--output" not in err
    assert {p: p.read_bytes() for p in data.rglob("*") if p.is_file()} == before


# -- a killed or refused command leaves a state its rerun completes ---------------------------------------------------
def test_a_kill_during_the_evaluation_is_completed_by_the_rerun(tiny, tiny_st, tmp_path, capsys):
    """SIGKILL while ``--evaluate`` evaluates the trained model (the base is evaluated, the model and its card are
    saved): the same command completes the evaluation and trains nothing; it used to say "already holds a model
    trained by beirx" and never evaluated."""
    import os
    import shutil
    import signal
    import subprocess
    import sys

    shutil.copy(tiny / "qrels" / "test.tsv", tiny / "qrels" / "dev.tsv")
    out = tmp_path / "out"
    argv = ["train", "bi-encoder", "--dataset", str(tiny), "--split", "test", "--model", str(tiny_st), "--output",
            str(out), "--device", "cpu", "--batch-size", "4", "--max-steps", "2", "--save-steps", "1", "--no-progress",
            "--evaluate", "dev"]
    killer = ("import os, signal, sys\n"
              "import beirx.evaluate.runner as runner\n"
              "real, calls = runner.evaluate_system, []\n"
              "def evaluate_system(*args, **kwargs):\n"
              "    calls.append(1)\n"
              "    if len(calls) == 2:\n"
              "        os.kill(os.getpid(), signal.SIGKILL)  # the trained model's turn\n"
              "    return real(*args, **kwargs)\n"
              "runner.evaluate_system = evaluate_system\n"
              "from beirx.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", killer, *argv], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": f"{repo}:{repo / 'tests'}"})
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    weights = (out / "model.safetensors").read_bytes()
    assert "evaluation" not in read_front_matter(out / "README.md")["beirx"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "already holds the model this command trains: nothing trained; its evaluation completed" in printed
    assert "NDCG@10: base" in printed
    record = read_front_matter(out / "README.md")["beirx"]
    assert record["evaluation"]["split"] == "dev" and (out / "model.safetensors").read_bytes() == weights
    assert json.loads((tmp_path / "out-evaluation" / "evaluation.json").read_text()) == record["evaluation"]
    assert main(argv) == 0  # once more: nothing to do
    assert "nothing trained" in capsys.readouterr().out
    assert main([*argv, "--learning-rate", "1e-4"]) == 2  # another run's options: refused, naming what differs
    assert "already holds a model trained by beirx with a different learning_rate" in capsys.readouterr().err


def test_a_nan_learning_rate_is_refused_and_the_corrected_rerun_trains(tiny, tiny_st, tmp_path, capsys):
    out = tmp_path / "out"
    assert _train(tiny, tiny_st, out, "--learning-rate", "nan") == 2
    assert "argument --learning-rate/--lr: expected a finite number, got 'nan'" in capsys.readouterr().err
    assert not out.exists()
    assert _train(tiny, tiny_st, out, "--learning-rate", "1e-4") == 0


def test_a_record_of_a_run_that_saved_no_checkpoint_does_not_block_the_corrected_rerun(tiny, tiny_st, tmp_path):
    """A run that stopped before its first checkpoint (killed in step 1, or a value the trainer refused) left only
    checkpoints/run.json: the rerun with other values replaces it."""
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "run.json").write_text(json.dumps({"learning_rate": "nan"}))
    assert _train(tiny, tiny_st, out) == 0
    assert read_front_matter(out / "README.md")["beirx"]["parameters"]["learning_rate"] == 2e-5


TRAIN_NUMBERS = {  # flag: values refused, each before anything is written
    "--epochs": ["nan", "inf", "-1"], "--max-steps": ["0", "-2", "1.5"], "--batch-size": ["0", "nan"],
    "--learning-rate": ["nan", "inf", "0", "-1e-5"], "--warmup-ratio": ["nan", "1", "-0.1"],
    "--max-seq-length": ["0", "nan"], "--seed": ["-1", "nan", str(2 ** 32)], "--save-steps": ["0", "nan"],
    "--logging-steps": ["0"], "--negatives": ["0"], "--eval-steps": ["0"], "--eval-candidates": ["0"],
    "--mini-batch-size": ["0"], "--scale": ["nan", "inf", "0"], "--max-memory": ["nan", "0", "inf"],
    "--dev-fraction": ["nan", "0.6", "-0.1", "inf"], "--dev-max-queries": ["0", "nan"]}


@pytest.mark.parametrize("flag,value", [(f, v) for f, values in TRAIN_NUMBERS.items() for v in values])
def test_every_numeric_training_option_is_checked_before_any_work(flag, value, tiny, tiny_st, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["train", "bi-encoder", "--dataset", str(tiny), "--split", "test", "--model", str(tiny_st),
                 "--output", str(out), "--device", "cpu", "--no-progress", flag, value])
    err = capsys.readouterr().err
    assert code == 2 and f"argument {flag}" in err and "Traceback" not in err, err
    assert not out.exists()


@pytest.mark.parametrize("field,value", [("learning_rate", float("nan")), ("epochs", float("nan")),
                                         ("warmup_ratio", float("inf")), ("scale", float("nan")),
                                         ("max_memory", float("inf")), ("dev_fraction", float("nan")),
                                         ("batch_size", 2.5), ("seed", -1)])
def test_training_options_refuse_nan_infinity_and_ranges_by_flag_name(field, value):
    from beirx.train.options import TrainOptions

    with pytest.raises(BeirxError, match=f"--{field.replace('_', '-')} must be "):
        TrainOptions(dataset="d", model="m", output="o", **{field: value})


GENQ_NUMBERS = {"--per-doc": ["0", "nan"], "--batch-size": ["0"], "--max-length": ["0"], "--doc-max-length": ["0"],
                "--top-p": ["nan", "0", "1.5"], "--top-k": ["-1", "nan"], "--seed": ["-1", "nan"]}


@pytest.mark.parametrize("flag,value", [(f, v) for f, values in GENQ_NUMBERS.items() for v in values])
def test_every_numeric_generate_queries_option_is_checked_before_any_work(flag, value, tiny, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["generate-queries", "--dataset", str(tiny), "--model", str(tmp_path / "no-model"), "--output",
                 str(out), flag, value])
    err = capsys.readouterr().err
    assert code == 2 and f"argument {flag}" in err and "Traceback" not in err, err
    assert not out.exists()
