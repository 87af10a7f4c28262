"""Hardening battery: model folders that are damaged or of the wrong kind. Every command that takes a model folder
refuses it before any work (no index built, nothing encoded, trained or written) with exit code 2 and one sentence
naming the folder, what is wrong with it and, for a wrong kind, what it is and what was expected.

Damages, built from tiny models of each kind: a ``config.json`` field of the wrong type (transformers raised
``StrictDataclassFieldValidationError``), weights cut short (``SafetensorError``), an empty folder ("You need to
have sentencepiece or tiktoken installed", naming no folder), no tokenizer, and a folder of another kind (a BERT
bi-encoder given to ``--judge transformers`` ended in ``RuntimeError: index 128 is out of bounds``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentence_transformers")

from beirx.cli import main  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from conftest import translated_pair  # noqa: E402
from hardening_helpers import build_tiny_st  # noqa: E402

KIND_WORDS = {"bi-encoder": "a sentence embedding model", "encoder": "a transformers encoder",
              "cross-encoder": "a cross-encoder", "causal-lm": "a causal language model",
              "seq2seq": "a sequence-to-sequence model", "masked-lm": "a masked language model"}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """One whole tiny model of each kind (the valid folders the damages start from)."""
    import torch
    import transformers

    from tiny_models import build_tiny_causal_lm, build_tiny_marian, build_tiny_splade

    root = tmp_path_factory.mktemp("kinds")
    lines = ["the cat sleeps on the warm roof", "el gato duerme en el tejado", "which animals hunt mice"] * 20
    bi = build_tiny_st(root / "bi-encoder")
    cross = root / "cross-encoder"
    torch.manual_seed(1)
    tokenizer = transformers.BertTokenizer.from_pretrained(str(root / "bi-encoder-bert"))
    transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        num_labels=1)).save_pretrained(cross)
    tokenizer.save_pretrained(cross)
    return {"bi-encoder": bi, "encoder": bi, "cross-encoder": cross,
            "causal-lm": build_tiny_causal_lm(root, lines),
            "seq2seq": build_tiny_marian(root, lines, vocab_size=24, max_length=32),
            "masked-lm": build_tiny_splade(root / "splade", ["cat", "mice", "hunt"], {("cat", "mice"): 1.0})}


#: A folder of the wrong kind for each kind a command needs, and the words of what it is.
WRONG = {"bi-encoder": ("causal-lm", "a causal language model"), "encoder": ("seq2seq", "a sequence-to-sequence"),
         "cross-encoder": ("bi-encoder", "a sentence-transformers bi-encoder"),
         "causal-lm": ("bi-encoder", "a sentence-transformers bi-encoder"),
         "seq2seq": ("bi-encoder", "a sentence-transformers bi-encoder"),
         "masked-lm": ("bi-encoder", "a sentence-transformers bi-encoder")}


def damaged(models: dict[str, Path], kind: str, damage: str, where: Path) -> tuple[Path, str]:
    """A copy of ``kind``'s tiny model with ``damage``, and a phrase the refusal must hold."""
    if damage == "wrong-kind":
        other, words = WRONG[kind]
        return models[other], f"{words}"
    folder = where / f"{kind}-{damage}"
    if damage == "empty":
        folder.mkdir(parents=True)
        return folder, "it is empty"
    shutil.copytree(models[kind], folder)
    if damage == "config-type":
        config = json.loads((folder / "config.json").read_text())
        field = next(f for f in ("num_attention_heads", "encoder_attention_heads", "hidden_size") if f in config)
        config[field] = str(config[field])  # "2" where an int belongs
        (folder / "config.json").write_text(json.dumps(config))
        return folder, f"config.json cannot be read by transformers (Validation error for field '{field}'"
    if damage == "truncated":
        weights = max(folder.rglob("*.safetensors"), key=lambda p: p.stat().st_size)
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) * 2 // 3])
        return folder, "is cut short"
    if damage == "no-tokenizer":
        for path in folder.iterdir():
            if path.name.startswith(("tokenizer", "vocab", "special_tokens", "source.spm", "target.spm", "spm")):
                path.unlink()
        return folder, "it has no tokenizer"
    raise ValueError(damage)


def cost_dataset(tmp_path: Path) -> Path:
    from conftest import TINY_CORPUS, TINY_QRELS, TINY_QUERIES, write_beir

    return write_beir(tmp_path / "tiny", TINY_CORPUS, TINY_QUERIES, TINY_QRELS)


def command(surface: str, model: Path, tmp_path: Path, models: dict[str, Path]) -> list[str]:
    """The command line of ``surface`` with ``model`` where the surface takes its model."""
    data = str(cost_dataset(tmp_path))
    out = str(tmp_path / "out")
    m = str(model)
    if surface == "train bi-encoder":
        return ["train", "bi-encoder", "--dataset", data, "--split", "test", "--model", m, "--output", out,
                "--device", "cpu", "--no-progress"]
    if surface == "train cross-encoder":
        return ["train", "cross-encoder", "--dataset", data, "--split", "test", "--model", m, "--output", out,
                "--device", "cpu", "--negatives", "1", "--no-progress"]
    if surface == "generate-queries":
        return ["generate-queries", "--dataset", data, "--model", m, "--output", out, "--device", "cpu"]
    if surface.startswith("eval --reranker"):
        reranker = surface.split()[2]
        extra = ["--llm-score", "yes-no"] if reranker == "llm-pointwise" else []
        return ["eval", "--dataset", data, "--retriever", "bm25", "--reranker", reranker, "--reranker-model", m,
                "--output", out, "--device", "cpu", "--no-progress", *extra]
    if surface.startswith("eval --retriever"):
        return ["eval", "--dataset", data, "--retriever", surface.split()[2], "--model", m, "--output", out,
                "--device", "cpu", "--no-progress"]
    if surface.startswith("subset --cost"):
        return ["subset", "--dataset", data, "--queries", "2", "--depth", "0", "--max-docs", "4", "--output", out,
                "--cost", surface.split()[2], "--cost-lang", "es", "--cost-model", m]
    if surface.startswith("translate"):
        return ["translate", "--dataset", data, "--lang", "es", "--translator", surface.split()[2], "--model", m,
                "--no-quality", "--output", out, "--no-progress"]
    if surface.startswith("quality"):
        en, es = translated_pair(tmp_path, ["The cat sleeps.", "Mice hunt."], ["El gato duerme.", "Cazan ratones."])
        if surface == "quality --encoder":
            return ["quality", str(es.root), "--source", str(en.root), "--lang", "es", "--encoder", m, "--output",
                    out, "--no-progress"]
        return ["quality", str(es.root), "--source", str(en.root), "--lang", "es", "--encoder",
                str(models["bi-encoder"]), "--judge", "transformers", "--judge-model", m, "--output", out,
                "--no-progress"]
    raise ValueError(surface)


#: Each command that takes a model folder, and the kind it needs.
SURFACES = {"train bi-encoder": "bi-encoder", "train cross-encoder": "encoder", "generate-queries": "seq2seq",
            "eval --reranker cross-encoder": "cross-encoder", "eval --reranker monot5": "seq2seq",
            "eval --reranker llm-pointwise": "causal-lm", "eval --reranker llm-listwise": "causal-lm",
            "eval --reranker bi-encoder": "bi-encoder", "eval --retriever dense": "bi-encoder",
            "eval --retriever splade": "masked-lm", "subset --cost hf": "seq2seq", "subset --cost hf-llm": "causal-lm",
            "translate --translator hf": "seq2seq", "translate --translator hf-llm": "causal-lm",
            "translate --translator ctranslate2": "seq2seq", "quality --judge transformers": "causal-lm",
            "quality --encoder": "bi-encoder"}
DAMAGES = ("config-type", "truncated", "empty", "no-tokenizer", "wrong-kind")


def no_work_done(home: Path, out: Path) -> list[str]:
    """What the command made: files under the output, and index, embedding, run or score caches."""
    made = [str(p) for p in out.rglob("*") if p.is_file()] if out.is_dir() else []
    made += [str(p) for p in home.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    return made


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_damaged_or_wrong_model_folder_is_refused_before_any_work(surface, damage, models, tmp_path, beirx_home,
                                                                    capsys):
    kind = SURFACES[surface]
    if "ctranslate2" in surface:
        pytest.importorskip("ctranslate2")
    folder, phrase = damaged(models, kind, damage, tmp_path / "models")
    argv = command(surface, folder, tmp_path, models)
    capsys.readouterr()
    try:
        code = main(argv)
    except BaseException as exc:  # noqa: BLE001 - a traceback is what this battery is about
        pytest.fail(f"{surface} with a {damage} folder raised {type(exc).__name__}: {exc}")
    err = capsys.readouterr().err
    assert code == 2, err
    message = [line for line in err.splitlines() if "error:" in line]
    assert message and str(folder) in message[0] and phrase in message[0], err
    if damage == "wrong-kind":
        assert f"not {KIND_WORDS[kind]}" in message[0], err
    if surface.startswith("subset --cost"):
        assert f"--cost-model {folder}" in message[0], err
    assert "Traceback" not in err
    assert no_work_done(beirx_home, tmp_path / "out") == []


def test_a_bert_bi_encoder_or_a_cross_encoder_is_not_a_judge(models):
    """The example of the report: both loaded as causal LMs with a new head; now refused by what they are."""
    from beirx.models.llm import connect

    for kind, words in (("bi-encoder", "a sentence-transformers bi-encoder (BertModel)"),
                        ("cross-encoder", "a sequence-classification model, i.e. a cross-encoder "
                                          "(BertForSequenceClassification)")):
        with pytest.raises(BeirxError) as caught:
            connect(str(models[kind]), backend="transformers", what="--judge", flag="--judge-model")
        assert str(caught.value) == (f"--judge-model {models[kind]}: {words}, not a causal language model (an "
                                     "architecture ending in ForCausalLM or LMHeadModel), which --judge transformers "
                                     "needs")


def test_whole_folders_of_every_kind_pass_and_are_described(models):
    from beirx.models.checks import check_model, inspect_folder

    described = {kind: inspect_folder(folder)[0].describe() for kind, folder in models.items()}
    assert described == {"bi-encoder": "a sentence-transformers bi-encoder (BertModel)",
                         "encoder": "a sentence-transformers bi-encoder (BertModel)",
                         "cross-encoder": "a sequence-classification model, i.e. a cross-encoder "
                                          "(BertForSequenceClassification)",
                         "causal-lm": "a causal language model (LlamaForCausalLM)",
                         "seq2seq": "a sequence-to-sequence model (MarianMTModel)",
                         "masked-lm": "a masked language model (BertForMaskedLM)"}
    for kind, folder in models.items():
        check_model(folder, kind)


def test_the_safetensors_check_reads_the_header_only(tmp_path):
    """By hand: an 8-byte little-endian header length, the JSON header, then the data its offsets announce."""
    from beirx.models.checks import safetensors_problem

    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    whole = len(header).to_bytes(8, "little") + header + b"\0" * 8
    (tmp_path / "a.safetensors").write_bytes(whole)
    assert safetensors_problem(tmp_path / "a.safetensors") is None
    (tmp_path / "a.safetensors").write_bytes(whole[:-1])
    assert safetensors_problem(tmp_path / "a.safetensors") == (
        f"a.safetensors is cut short: {len(whole) - 1:,} bytes where its header announces {len(whole):,}")
    (tmp_path / "a.safetensors").write_bytes(whole[:20])
    assert "a.safetensors is cut short or not a safetensors file" in safetensors_problem(tmp_path / "a.safetensors")
