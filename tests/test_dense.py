"""Dense retrieval plumbing with the real multilingual-e5-small on a slice of the real SciFact.

Checks that prompts reach the model, that the document text is BEIR's ``title + " " + text``, that the
chunked search equals brute force, that a second run loads the cached embeddings without encoding,
and that IDs come through untouched.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError, MissingExtraError
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.retrievers.dense import DenseRetriever, document_text
from beirx.models.files import ModelFiles, max_seq_length, resolve_model
from beirx.models.prompts import model_prompts
from conftest import write_beir
from extras import needs

MAX_LENGTH = 64  # shorter than e5's 512 to keep the test fast; the plumbing is the same


class Pack:
    code = "en"

    def describe(self):
        return {"code": "en"}


@pytest.fixture(scope="session")
def scifact_slice(scifact_dir, tmp_path_factory):
    """300 real SciFact documents and the test queries whose relevant documents are all among them."""
    from beirx.data.beir_io import iter_corpus, iter_queries, read_qrels

    qrels = read_qrels(scifact_dir / "qrels" / "test.tsv")
    wanted: list[str] = []
    for qid in list(qrels)[:60]:
        wanted += [d for d in qrels[qid] if d not in wanted]
    corpus = []
    for doc in iter_corpus(scifact_dir / "corpus.jsonl"):
        if doc.id in wanted or len(corpus) < 300 - len(wanted):
            corpus.append({"_id": doc.id, "title": doc.title, "text": doc.text})
    corpus = corpus[:300] if len(corpus) > 300 else corpus
    kept = {d["_id"] for d in corpus}
    judged = {q: docs for q, docs in qrels.items() if all(d in kept for d in docs)}
    queries = [{"_id": q.id, "text": q.text} for q in iter_queries(scifact_dir / "queries.jsonl") if q.id in judged]
    rows = [(q, d, s) for q, docs in judged.items() for d, s in docs.items()]
    root = write_beir(tmp_path_factory.mktemp("data") / "scifact-slice", corpus, queries, {"test": rows})
    return BeirDataset(root, name="scifact-slice")


def brute_force_run(retriever, queries, k):
    vectors = retriever.encode([q.text for q in queries.values()], retriever.query_prompt)
    scores = vectors @ np.asarray(retriever.embeddings).T
    ids = retriever.doc_ids
    run = {}
    for row, qid in enumerate(queries):
        top = sorted(range(len(ids)), key=lambda i: (scores[row, i], ids[i]), reverse=True)[:k]
        run[qid] = {ids[i]: float(scores[row, i]) for i in top}
    return run


def test_dense_retrieval_on_real_scifact_slice(e5_small, scifact_slice, beirx_home, monkeypatch):
    assert RETRIEVERS.get("dense") is DenseRetriever
    dense = DenseRetriever(Pack(), model=str(e5_small), max_length=MAX_LENGTH, chunk_rows=37, show_progress=False)
    # e5's prompts come from its config_sentence_transformers.json
    assert (dense.query_prompt, dense.passage_prompt, dense.similarity) == ("query: ", "passage: ", "cosine")
    dense.index(scifact_slice)
    assert not dense.loaded_from_cache
    corpus = list(scifact_slice.iter_corpus())
    assert dense.doc_ids == [d.id for d in corpus]  # IDs untouched, in corpus order
    assert dense.embeddings.shape == (len(corpus), 384)

    # The stored vectors are the model's encoding of "passage: " + title + " " + text, normalised.
    model = dense.model()
    some = [corpus[0], corpus[1], next(d for d in corpus if d.title)]
    direct = model.encode([f"passage: {d.title} {d.text}".strip() for d in some], normalize_embeddings=True)
    rows = [dense.doc_ids.index(d.id) for d in some]
    np.testing.assert_allclose(np.asarray(dense.embeddings)[rows], direct, atol=1e-5)
    without_prompt = model.encode([document_text(some[0])], normalize_embeddings=True)
    assert not np.allclose(without_prompt[0], direct[0], atol=1e-3)  # so the prompt really mattered

    queries, qrels = scifact_slice.queries_for_split("test")
    run = dense.search(queries, k=20)
    assert set(run) == set(queries)
    expected = brute_force_run(dense, queries, 20)
    for qid in queries:  # chunked (37 rows at a time) search == scoring everything at once
        assert list(run[qid]) == list(expected[qid])
        assert run[qid] == pytest.approx(expected[qid], abs=1e-6)
    assert all(did in scifact_slice.corpus for docs in run.values() for did in docs)
    hits = sum(any(d in qrels[q] for d in list(run[q])[:10]) for q in queries)
    assert hits / len(queries) > 0.7  # real model, real data: most queries find a relevant doc

    # Second run: embeddings come from the cache, and nothing is encoded.
    again = DenseRetriever(Pack(), model=str(e5_small), max_length=MAX_LENGTH, chunk_rows=37, show_progress=False)
    calls = []
    monkeypatch.setattr(again, "encode", lambda texts, prompt: calls.append(len(texts)) or dense.encode(texts, prompt))
    again.index(scifact_slice)
    assert again.loaded_from_cache and calls == []
    assert again.search(queries, k=20) == run
    assert calls == [len(queries)]  # only the queries
    folders = [p for p in (beirx_home / "embeddings").iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1
    meta = json.loads((folders[0] / "meta.json").read_text())
    assert meta["passage_prompt"] == "passage: " and meta["max_length"] == MAX_LENGTH
    assert meta["revision"].startswith("sha256:") and meta["corpus"].startswith("sha256:")

    # Explicit empty prompts override the model's (and so identify a different system).
    other = DenseRetriever(Pack(), model=str(e5_small), max_length=MAX_LENGTH, passage_prompt="", query_prompt="",
                           show_progress=False)
    assert other.describe()["passage_prompt"] == "" and other.describe()["query_prompt"] == ""
    assert other.describe() != dense.describe()


def test_prompts_from_config_known_models_and_overrides(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "Q: ", "document": "D: ", "classification": "C: "}}))
    assert model_prompts(ModelFiles("org/model", folder, "r")) == {"query": "Q: ", "passage": "D: "}
    bare = tmp_path / "bare"
    bare.mkdir()
    assert model_prompts(ModelFiles("intfloat/multilingual-e5-small", bare, "r")) == {"query": "query: ",
                                                                                       "passage": "passage: "}
    assert model_prompts(ModelFiles("intfloat/e5-base-v2", bare, "r"))["passage"] == "passage: "
    assert model_prompts(ModelFiles("sentence-transformers/all-MiniLM-L6-v2", bare, "r")) == {}


def test_max_length_is_read_as_sentence_transformers_6_saves_it(tmp_path):
    """sentence-transformers >= 6 saves the length as the tokenizer's ``model_max_length``, not in
    ``sentence_bert_config.json``: a MiniLM trained by beirx (base 256) must not be evaluated at 512."""
    def folder(name, sbert, tokenizer, config):
        path = tmp_path / name
        path.mkdir()
        for filename, content in (("sentence_bert_config.json", sbert), ("tokenizer_config.json", tokenizer),
                                  ("config.json", config)):
            if content is not None:
                (path / filename).write_text(json.dumps(content))
        return ModelFiles(name, path, "r")

    legacy = folder("legacy", {"max_seq_length": 256}, {"model_max_length": 512}, {"max_position_embeddings": 512})
    saved_by_st6 = folder("st6", {"transformer_task": "feature-extraction"}, {"model_max_length": 256},
                          {"max_position_embeddings": 512})
    unlimited = folder("unlimited", None, {"model_max_length": 1e30}, {"max_position_embeddings": 514})
    bare = folder("bare", None, None, None)
    assert [max_seq_length(f) for f in (legacy, saved_by_st6, unlimited, bare)] == [256, 256, 514, 512]


def test_local_model_revision_is_a_content_hash(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"abc")
    (folder / "README.md").write_text("notes")
    first = resolve_model(str(folder)).revision
    (folder / "README.md").write_text("other notes")  # documentation does not change the weights
    assert resolve_model(str(folder)).revision == first
    (folder / "weights.bin").write_bytes(b"abd")
    assert resolve_model(str(folder)).revision != first
    with pytest.raises(BeirxError, match="model folder not found"):
        resolve_model(str(tmp_path / "missing"))


def test_missing_sentence_transformers_names_the_neural_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r"beirx\[neural\]"):
        DenseRetriever(Pack(), model=str(tmp_path))


def test_dense_without_a_model_uses_the_language_default():
    # Offline (conftest) and not cached: the English default is looked up and the error names it.
    needs("sentence_transformers", "neural")  # without it, that extra is what the error names first
    with pytest.raises(BeirxError, match=r"(?s)'intfloat/e5-base-v2'.*pass a local model folder"):
        DenseRetriever(Pack())
