"""Hardening battery, class 11: a resumable cache's progress record never claims more than its data holds, and
a reader verifies the claim before trusting it. The case the issue found: an embedding cache whose progress
record counted rows that never reached the disk was resumed as complete and sealed, and ``beirx eval`` reported a
plausible but wrong nDCG. Now the rows are checked against their recorded checksums, re-encoded, and the metrics
equal the clean run's. Training checkpoints are sealed the same way. A SPLADE index killed after its encoding
(before or after its seal) is finished from what was encoded, never encoded again."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from beirx.cache_integrity import ProgressJournal, digest_bytes
from beirx.cli import main
from beirx.models.embeddings_cache import EmbeddingCache, length_order
from conftest import write_beir
from hardening_helpers import eval_cli, tiny_st  # noqa: F401 (a fixture)
from test_splade import tiny_splade  # noqa: F401 (a fixture)


def _claimed(caplog) -> bool:
    return any("its progress record claims positions" in r.getMessage() for r in caplog.records)


# -- the journal --------------------------------------------------------------------------------------------
def test_journal_resumes_after_the_last_chunk_that_verifies(tmp_path, caplog):
    data = bytearray(b"abcdefghij")
    journal = ProgressJournal(tmp_path / "p.jsonl", {"rows": 10})
    assert journal.resume(lambda a, b: "") == 0  # no journal yet
    journal.begin()
    synced = []
    for start, end in ((0, 4), (4, 7), (7, 10)):
        journal.commit(start, end, digest_bytes(data[start:end]), sync=lambda: synced.append(end))
    assert synced == [4, 7, 10]  # the data was synced before each record line
    digest = lambda a, b: digest_bytes(data[a:b])  # noqa: E731
    assert ProgressJournal(tmp_path / "p.jsonl", {"rows": 10}).resume(digest) == 10
    data[5:6] = b"X"  # the second chunk's data is not what its record claims
    with caplog.at_level(logging.WARNING):
        again = ProgressJournal(tmp_path / "p.jsonl", {"rows": 10})
        assert again.resume(digest) == 4
    assert _claimed(caplog)
    assert len((tmp_path / "p.jsonl").read_text().splitlines()) == 2  # the unverified claims are dropped
    again.commit(4, 10, digest_bytes(data[4:10]), sync=lambda: None)
    assert ProgressJournal(tmp_path / "p.jsonl", {"rows": 10}).resume(digest) == 10
    assert ProgressJournal(tmp_path / "p.jsonl", {"rows": 11}).resume(digest) == 0  # another build: start afresh
    with open(tmp_path / "p.jsonl", "a") as fh:
        fh.write('{"start": 10, "end": 1')  # a torn last line (killed mid-append) is ignored
    assert ProgressJournal(tmp_path / "p.jsonl", {"rows": 10}).resume(digest) == 10


# -- the embedding cache, through its API ---------------------------------------------------------------------
class Stop(Exception):
    pass


def encoder(calls: list, stop_after: int | None = None):
    def encode(batch):
        if stop_after is not None and len(calls) >= stop_after:
            raise Stop
        calls.append(list(batch))
        return np.array([[len(t), t.count("x") + 1.0, 3.0] for t in batch], dtype=np.float32)
    return encode


@pytest.mark.parametrize("damage", ["rows never written", "rows overwritten", "matrix truncated"])
def test_progress_that_claims_more_than_the_matrix_holds_is_not_trusted(tmp_path, caplog, damage):
    texts = ["x" * (i % 13) + "y" * i for i in range(200)]
    ids = [f"d{i}" for i in range(200)]
    order = length_order([len(t) for t in texts])
    cache = EmbeddingCache(tmp_path, "label", "key")
    with pytest.raises(Stop):  # checkpoints every 32 batches of 2 texts: rows 0-64 and 64-128 recorded, then it dies
        cache.build(ids, texts, encoder([], stop_after=70), 3, 2, {"model": "m"}, order, show_progress=False)
    matrix_path = cache.partial / "embeddings.npy"
    matrix = np.lib.format.open_memmap(matrix_path, mode="r+")
    if damage == "rows never written":  # as after a crash with the record on disk before the rows
        matrix[order[100:128]] = 0.0
    elif damage == "rows overwritten":
        matrix[order[10]] = 7.0
    matrix.flush()
    del matrix
    if damage == "matrix truncated":
        matrix_path.write_bytes(matrix_path.read_bytes()[:-200])
    resumed: list = []
    with caplog.at_level(logging.INFO):
        built, _ = cache.build(ids, texts, encoder(resumed), 3, 2, {"model": "m"}, order, show_progress=False)
    redone = sum(map(len, resumed))
    assert redone == {"rows never written": 200 - 64, "rows overwritten": 200, "matrix truncated": 200}[damage]
    assert _claimed(caplog)  # (a truncated matrix is extended with zeros by numpy's memmap: its rows do not verify)
    expected = np.array([[len(t), t.count("x") + 1.0, 3.0] for t in texts], dtype=np.float32)
    assert np.array_equal(np.asarray(built), expected) and cache.exists()


# -- the same through beirx eval: the wrong-nDCG path -------------------------------------------------------
WORDS = ["cats", "dogs", "mice", "whales", "birds", "animals", "ocean", "hunt", "loyal", "small", "sing", "fly"]


@pytest.fixture
def wide(tmp_path):
    """40 documents (more than one checkpoint of encoding, 32 batches, at --batch-size 1) and 12 judged queries."""
    corpus = [{"_id": f"d{i}", "title": WORDS[i % 12], "text": " ".join(WORDS[(i * j) % 12] for j in range(1, 2 + i % 7))}
              for i in range(40)]
    queries = [{"_id": f"q{k}", "text": f"{WORDS[k]} {WORDS[(k + 5) % 12]}"} for k in range(12)]
    qrels = {"test": [(f"q{k}", f"d{k}", 1) for k in range(12)] + [(f"q{k}", f"d{k + 12}", 1) for k in range(12)]}
    return write_beir(tmp_path / "wide", corpus, queries, qrels)


def test_eval_after_a_crash_that_left_progress_ahead_of_its_rows_equals_the_clean_run(
        wide, tmp_path, beirx_home, monkeypatch, caplog, tiny_st):
    args = ("--retriever", "dense", "--model", str(tiny_st), "--device", "cpu", "--batch-size", "1", "--no-index-cache")
    code, clean = eval_cli(wide, tmp_path / "clean", *args)
    assert code == 0
    cached = [a for a in args if a != "--no-index-cache"]

    from beirx.evaluate.retrievers.dense import DenseRetriever

    real, calls = DenseRetriever.encode, []

    def dies_after_34_batches(self, texts, prompt):
        if len(calls) == 34:
            raise KeyboardInterrupt  # the run is killed after its first checkpoint (32 batches) of 40
        calls.append(1)
        return real(self, texts, prompt)

    monkeypatch.setattr(DenseRetriever, "encode", dies_after_34_batches)
    assert eval_cli(wide, tmp_path / "killed", *cached)[0] == 130
    monkeypatch.setattr(DenseRetriever, "encode", real)
    [partial] = (beirx_home / "embeddings").glob(".*.partial")
    matrix = np.lib.format.open_memmap(partial / "embeddings.npy", mode="r+")
    journal = [json.loads(line) for line in (partial / "progress.jsonl").read_text().splitlines()]
    assert journal[-1]["end"] == 32
    matrix[:] = 0.0  # the recorded rows never reached the disk
    matrix.flush()
    del matrix
    with caplog.at_level(logging.WARNING):
        code, resumed = eval_cli(wide, tmp_path / "resumed", *cached)
    assert code == 0 and _claimed(caplog)
    assert resumed["metrics"] == clean["metrics"] and resumed["per_query"] == clean["per_query"]
    assert resumed["metrics"]["NDCG@10"] > 0.1
    [run] = (tmp_path / "resumed").glob("*.trec")
    assert run.read_bytes() == next((tmp_path / "clean").glob("*.trec")).read_bytes()


# -- a SPLADE index killed between its encoding and its publication -------------------------------------------
@pytest.mark.parametrize("window,resumed_how", [
    ("seal", "resuming SPLADE encoding at 24/24 documents"),  # postings built, not sealed
    ("publish_dir", "publishing the complete SPLADE index left in"),  # sealed, not published
])
def test_splade_killed_after_its_encoding_never_encodes_again(tiny_splade, tmp_path, beirx_home, monkeypatch,
                                                              caplog, window, resumed_how):
    from beirx.data.dataset import BeirDataset
    from beirx.evaluate.retrievers import sparse_index
    from beirx.evaluate.retrievers.splade import SpladeRetriever
    from beirx.models.splade import SpladeEncoder
    from test_dense import Pack
    from test_splade import QUERIES, WORDS

    docs = [{"_id": f"doc{i:02d}", "title": "", "text": " ".join(WORDS[j % 4] for j in range(i % 7 + 1))}
            for i in range(24)]
    dataset = BeirDataset(write_beir(tmp_path / "many", docs, QUERIES, {"test": [("q1", "doc00", 1)]}))
    real = getattr(sparse_index, window)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # what a kill leaves on disk: nothing after this point runs

    monkeypatch.setattr(sparse_index, window, killed)
    with pytest.raises(KeyboardInterrupt):
        SpladeRetriever(Pack(), model=str(tiny_splade), batch_size=4, show_progress=False).index(dataset)
    monkeypatch.setattr(sparse_index, window, real)
    calls = []
    encode = SpladeEncoder.encode
    monkeypatch.setattr(SpladeEncoder, "encode",
                        lambda self, texts, max_length: calls.append(len(texts)) or encode(self, texts, max_length))
    resumed = SpladeRetriever(Pack(), model=str(tiny_splade), batch_size=4, show_progress=False)
    with caplog.at_level(logging.INFO):
        resumed.index(dataset)
    assert calls == [] and resumed_how in caplog.text  # no document encoded again
    assert sorted(p.name for p in resumed.index_location.iterdir()) == ["COMPLETE", "doc_ids.json", "docs.npy",
                                                                        "indptr.npy", "weights.npy"]
    assert not list(resumed.index_location.parent.glob(".*.partial"))
    fresh = SpladeRetriever(Pack(), model=str(tiny_splade), use_cache=False, show_progress=False)
    fresh.index(dataset)
    assert resumed.search(dataset.queries, k=30) == fresh.search(dataset.queries, k=30) != {}
    for name in ("docs.npy", "weights.npy", "indptr.npy", "doc_ids.json"):
        assert (resumed.index_location / name).read_bytes() == (fresh.index_location / name).read_bytes()


# -- training checkpoints --------------------------------------------------------------------------------
def test_a_half_written_checkpoint_is_not_resumed(tmp_path, caplog):
    from beirx.cache_integrity import seal
    from beirx.train import checkpoints

    folder = checkpoints.checkpoint_dir(tmp_path)
    for step in (2, 4, 6):
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        (folder / f"checkpoint-{step}" / "model.safetensors").write_bytes(bytes(range(256)) * step)
        (folder / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    seal(folder / "checkpoint-2", checkpoints.SEAL, {"step": 2})
    seal(folder / "checkpoint-4", checkpoints.SEAL, {"step": 4})
    (folder / "checkpoint-4" / "model.safetensors").write_bytes(b"\0" * 100)  # damaged after it was sealed
    # checkpoint-6: killed while the trainer wrote it, never sealed
    with caplog.at_level(logging.WARNING):
        assert checkpoints.last_checkpoint(tmp_path) == str(folder / "checkpoint-2")
    problems = [r.getMessage() for r in caplog.records if "damaged training checkpoint" in r.getMessage()]
    assert len(problems) == 2 and "checkpoint-6" in problems[0] and "checkpoint-4" in problems[1]
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint-2"]
    assert main(["train", "bi-encoder", "--dataset", str(tmp_path / "none"), "--model", "m",
                 "--output", str(tmp_path / "o"), "--mini-batch-size", "0"]) == 2  # range-checked
