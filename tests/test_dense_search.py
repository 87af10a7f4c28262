"""Chunked exact search equals brute force (ties included); the embeddings cache resumes and publishes atomically."""

from __future__ import annotations

import json

import numpy as np
import pytest

from beirx.models.embeddings_cache import EmbeddingCache, length_order
from beirx.evaluate.knn import exact_search, id_tie_ranks
from extras import needs


def brute_force(queries, corpus, k, doc_ids):
    scores = queries @ corpus.T
    return [sorted(range(len(doc_ids)), key=lambda i: (scores[r, i], doc_ids[i]), reverse=True)[:k]
            for r in range(len(queries))]


@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 500, None])
def test_chunked_search_equals_brute_force_with_ties(chunk_rows):
    rng = np.random.default_rng(3)
    corpus = rng.integers(0, 3, (500, 6)).astype(np.float32)  # small integers: many exactly tied scores
    queries = rng.integers(0, 3, (40, 6)).astype(np.float32)
    doc_ids = [f"doc{rng.integers(0, 10**6)}-{i}" for i in range(500)]
    expected = brute_force(queries, corpus, 25, doc_ids)
    idx, scores = exact_search(queries, corpus, 25, id_tie_ranks(doc_ids), chunk_rows=chunk_rows, query_block=16)
    assert idx.tolist() == expected
    assert np.array_equal(scores, np.take_along_axis(queries @ corpus.T, idx, axis=1))


def test_search_on_memmap_and_k_larger_than_corpus(tmp_path):
    rng = np.random.default_rng(5)
    matrix = np.lib.format.open_memmap(tmp_path / "m.npy", mode="w+", dtype=np.float32, shape=(30, 4))
    matrix[:] = rng.standard_normal((30, 4))
    matrix.flush()
    corpus = np.load(tmp_path / "m.npy", mmap_mode="r")
    ids = [f"d{i:02d}" for i in range(30)]
    q = rng.standard_normal((3, 4)).astype(np.float32)
    idx, _ = exact_search(q, corpus, 100, id_tie_ranks(ids), chunk_rows=8)
    assert idx.shape == (3, 30)
    assert idx.tolist() == brute_force(q, np.asarray(corpus), 30, ids)


def test_length_sorted_order_is_longest_first_and_stable():
    assert length_order([2, 1, 4, 2, 0]).tolist() == [2, 0, 3, 1, 4]


class Interrupt(Exception):
    pass


def fake_encoder(calls, fail_after=None):
    def encode(batch):
        calls.append(list(batch))
        if fail_after is not None and len(calls) > fail_after:
            raise Interrupt
        return np.array([[len(t), t.count("x"), 1.0] for t in batch], dtype=np.float32)
    return encode


def test_interrupted_encoding_resumes_and_publishes_only_when_complete(tmp_path):
    texts = ["x" * (i % 13) + "y" * i for i in range(100)]
    ids = [f"d{i}" for i in range(100)]
    order = length_order([len(t) for t in texts])
    cache = EmbeddingCache(tmp_path, "label", "key")
    calls = []
    with pytest.raises(Interrupt):
        # checkpoints every 32 batches of 2 texts: 64 texts are safe when the 40th batch fails
        cache.build(ids, texts, fake_encoder(calls, fail_after=39), 3, 2, {"model": "m"}, order, show_progress=False)
    assert not cache.exists() and cache.partial.is_dir()
    journal = [json.loads(line) for line in (cache.partial / "progress.jsonl").read_text().splitlines()]
    assert journal[-1]["end"] == 64  # the last committed chunk (each line: a chunk and its rows' checksum)

    resumed = []
    matrix, doc_ids = cache.build(ids, texts, fake_encoder(resumed), 3, 2, {"model": "m"}, order, show_progress=False)
    assert cache.exists() and not cache.partial.exists()
    assert sum(len(b) for b in resumed) == 36  # only what was not checkpointed, in the same order
    assert [t for b in calls[:32] + resumed for t in b] == [texts[i] for i in order]
    assert doc_ids == ids
    expected = np.array([[len(t), t.count("x"), 1.0] for t in texts], dtype=np.float32)
    assert np.array_equal(np.asarray(matrix), expected)
    assert isinstance(matrix, np.memmap)
    assert json.loads((cache.folder / "meta.json").read_text()) == {"model": "m"}
    again, _ = EmbeddingCache(tmp_path, "label", "key").load()
    assert np.array_equal(np.asarray(again), expected)


def test_faiss_search_equals_exact_search():
    needs("faiss", "faiss")
    from beirx.evaluate.knn import exact_search, faiss_search, id_tie_ranks

    rng = np.random.default_rng(5)
    corpus = rng.standard_normal((2000, 24)).astype(np.float32)
    queries = rng.standard_normal((17, 24)).astype(np.float32)
    ties = id_tie_ranks([f"d{i:05d}" for i in range(2000)])
    exact_idx, exact_scores = exact_search(queries, corpus, 50, ties, chunk_rows=300)
    faiss_idx, faiss_scores = faiss_search(queries, corpus, 50, ties)
    assert (faiss_idx == exact_idx).all()
    np.testing.assert_allclose(faiss_scores, exact_scores, rtol=1e-5, atol=1e-5)
