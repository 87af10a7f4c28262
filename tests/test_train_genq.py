"""``beirx generate-queries`` with a tiny random T5 built here: the output is a BEIR training split whose IDs
match the corpus, a rerun generates nothing new and writes the same bytes, a killed run resumes to the output
of an uninterrupted one, and the manifest records what was done."""

from __future__ import annotations

import json
import os

import pytest

from extras import needs

torch = needs("torch", "neural")
transformers = needs("transformers", "neural")

from beirx.checksums import corpus_checksum  # noqa: E402
from beirx.cli import main  # noqa: E402
from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.train import genq  # noqa: E402
from beirx.train.examples import positive_pairs  # noqa: E402
from beirx.artifacts.generation import GenerationManifest  # noqa: E402

PIECES = ["<pad>", "</s>", "<unk>", "▁", ".", ",", ";", "?"] + [
    f"▁{w}" for w in ("cats", "dogs", "mice", "whales", "birds", "are", "small", "animals", "hunt", "what", "which",
                      "do", "the", "largest", "ocean", "loyal", "fly", "sing", "night", "rodents", "good")
] + list("abcdefghijklmnopqrstuvwxyzCDMWB")


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tiny-t5"
    torch.manual_seed(3)
    tok = transformers.T5Tokenizer(vocab=[(p, 0.0 if i < 3 else -1.0 - (len(p) < 3)) for i, p in enumerate(PIECES)],
                                   extra_ids=0)
    config = transformers.T5Config(vocab_size=len(PIECES), d_model=16, d_kv=8, d_ff=32, num_layers=1,
                                   num_decoder_layers=1, num_heads=2, relative_attention_num_buckets=8,
                                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    transformers.T5ForConditionalGeneration(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def opts(dataset, model, output, tmp_path, **kw):
    return genq.GenerationOptions(**{**dict(dataset=str(dataset), model=str(model), output=output, per_doc=2,
                                            batch_size=2, max_length=8, device="cpu", cache=tmp_path / "genq.sqlite"),
                                     **kw})


def read(folder):
    return {name: (folder / name).read_bytes() for name in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv")}


def test_output_is_a_training_split_consistent_with_the_corpus(tiny_dataset, tiny_t5, tmp_path):
    out = tmp_path / "genq"
    manifest = genq.generate_queries(opts(tiny_dataset, tiny_t5, out, tmp_path), show_progress=False)
    assert (out / "corpus.jsonl").read_bytes() == (tiny_dataset / "corpus.jsonl").read_bytes()
    ds = BeirDataset(out)
    corpus_ids = [d.id for d in ds.iter_corpus()]
    assert corpus_ids == ["d1", "d2", "d3", "d4", "d5"]
    qrels = ds.qrels("train")
    assert set(ds.queries) == set(qrels)  # every query is judged, every judged query exists
    for qid, docs in qrels.items():  # genq-<doc>-<n>, judged relevant (1) to exactly that document
        doc_id, n = qid.removeprefix("genq-").rsplit("-", 1)
        assert docs == {doc_id: 1} and doc_id in corpus_ids and n in {"1", "2"}
        assert ds.queries[qid].text.strip()
    c = manifest.counts
    assert (c["documents"], c["generated"], c["from_cache"], c["skipped_documents"]) == (5, 5, 0, 0)
    assert c["queries"] + c["empty_queries"] == 10 and c["queries"] == len(qrels)
    loaded = GenerationManifest.load(out / "generation.json")
    assert loaded.to_dict() == manifest.to_dict()
    assert loaded.source.corpus_checksum == corpus_checksum(tiny_dataset / "corpus.jsonl")
    assert loaded.generator["per_doc"] == 2 and loaded.generator["seed"] == 42
    assert loaded.output.files["queries.jsonl"] == "generated" and loaded.output.split == "train"
    assert len(positive_pairs(ds, "train")) == len(qrels)  # beirx train reads it


def test_rerun_generates_nothing_and_writes_the_same_bytes(tiny_dataset, tiny_t5, tmp_path):
    out = tmp_path / "genq"
    genq.generate_queries(opts(tiny_dataset, tiny_t5, out, tmp_path), show_progress=False)
    first = read(out)
    again = genq.generate_queries(opts(tiny_dataset, tiny_t5, out, tmp_path), show_progress=False)
    assert (again.counts["generated"], again.counts["from_cache"]) == (0, 5)
    assert read(out) == first


def test_killed_run_resumes_to_the_uninterrupted_output(tiny_dataset, tiny_t5, tmp_path, monkeypatch):
    straight = tmp_path / "straight"
    genq.generate_queries(opts(tiny_dataset, tiny_t5, straight, tmp_path, cache=tmp_path / "a.sqlite"), False)
    real = genq.Seq2SeqGenerator.generate
    calls = []

    def dies_on_second_batch(self, texts, seed):
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, texts, seed)

    monkeypatch.setattr(genq.Seq2SeqGenerator, "generate", dies_on_second_batch)
    killed = tmp_path / "killed"
    with pytest.raises(KeyboardInterrupt):
        genq.generate_queries(opts(tiny_dataset, tiny_t5, killed, tmp_path, cache=tmp_path / "b.sqlite"), False)
    assert not (killed / "queries.jsonl").exists() and not (killed / "generation.json").exists()
    monkeypatch.setattr(genq.Seq2SeqGenerator, "generate", real)
    resumed = genq.generate_queries(opts(tiny_dataset, tiny_t5, killed, tmp_path, cache=tmp_path / "b.sqlite"), False)
    assert (resumed.counts["from_cache"], resumed.counts["generated"]) == (2, 3)  # the first batch was kept
    assert read(killed) == read(straight)


def test_cli_and_bad_output(tiny_dataset, tiny_t5, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["generate-queries", "--dataset", str(tiny_dataset), "--model", str(tiny_t5), "--per-doc", "1",
                 "--output", str(out), "--max-length", "8", "--device", "cpu", "--no-progress",
                 "--cache", str(tmp_path / "c.sqlite")]) == 0
    assert "5 documents" in capsys.readouterr().out
    manifest = json.loads((out / "generation.json").read_text())
    assert manifest["schema_version"] == "beirx.generation/1" and manifest["counts"]["documents"] == 5
    if hasattr(os, "link"):
        assert manifest["output"]["files"]["corpus.jsonl"] in {"linked", "copied"}
    with pytest.raises(BeirxError, match="source dataset's folder"):
        genq.generate_queries(opts(tiny_dataset, tiny_t5, tiny_dataset, tmp_path), False)


def test_a_damaged_cache_is_moved_aside_and_replaced(tmp_path):
    """Opened like the translation memory (sqlite_store.connect), not crashed on."""
    from beirx.train.genq_cache import QueryCache

    path = tmp_path / "queries.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    with QueryCache(path) as cache:
        key = cache.register({"model": "m"})
        cache.add(key, [("d1", "text", ["q1"])])
        assert cache.lookup(key, [("d1", "text")]) == {"d1": ["q1"]}
    assert [p.name.startswith("queries.sqlite.damaged-") for p in tmp_path.iterdir() if p != path and
            not p.name.endswith(("-wal", "-shm"))] == [True]
