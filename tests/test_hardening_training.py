"""Hardening battery, class 14: training memory. The bi-encoder's in-batch loss runs through GradCache, so memory
follows ``--mini-batch-size``, not the batch (and the weights do not depend on it); the maximum length comes from
the data when not given; the peak is estimated before the first step, and a run that would not fit stops with a
message naming options that do (exit code 2, nothing trained)."""

from __future__ import annotations

import json

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
