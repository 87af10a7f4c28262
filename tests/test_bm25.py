"""Embedded BM25: Lucene's formula by hand, best_fields combination, top-k ties, on-disk index reuse."""

from __future__ import annotations

import pytest

from beirx.data.records import Query
from beirx.evaluate.retrievers.bm25 import BM25Retriever, top_k
from tests.bm25_reference import WhitespacePack, lucene_bm25


def test_flat_scores_match_lucene_formula(fields_dataset):
    bm25 = BM25Retriever(WhitespacePack(), fields="flat", show_progress=False)
    bm25.index(fields_dataset)
    run = bm25.search({"q": Query("q", "apple pie")}, k=10)["q"]
    # flat field = title + " " + text; lengths a=5, b=6, c=3; avgdl = 14/3
    avgdl, n = 14 / 3, 3
    expected = {
        "a": lucene_bm25(3, 5, avgdl, 2, n) + lucene_bm25(1, 5, avgdl, 2, n),
        "b": lucene_bm25(1, 6, avgdl, 2, n),
        "c": lucene_bm25(2, 3, avgdl, 2, n),
    }
    assert run.keys() == expected.keys()
    for did, score in expected.items():
        assert run[did] == pytest.approx(score, rel=1e-6)


def test_multifield_is_best_fields_with_tie_breaker(fields_dataset):
    bm25 = BM25Retriever(WhitespacePack(), fields="multifield", tie_breaker=0.5, show_progress=False)
    bm25.index(fields_dataset)
    run = bm25.search({"q": Query("q", "apple pie")}, k=10)["q"]
    # title field exists in a and c only (N=2, avgdl=1.5); text field in all three (N=3, avgdl=11/3).
    t_a = lucene_bm25(1, 2, 1.5, 1, 2)                      # "apple" in "red apple"
    t_c = lucene_bm25(1, 1, 1.5, 1, 2)                      # "pie" in "pie"
    x_a = lucene_bm25(2, 3, 11 / 3, 2, 3) + lucene_bm25(1, 3, 11 / 3, 2, 3)
    x_b = lucene_bm25(1, 6, 11 / 3, 2, 3)
    x_c = lucene_bm25(1, 2, 11 / 3, 2, 3)
    expected = {"a": max(t_a, x_a) + 0.5 * min(t_a, x_a), "b": x_b, "c": max(t_c, x_c) + 0.5 * min(t_c, x_c)}
    for did, score in expected.items():
        assert run[did] == pytest.approx(score, rel=1e-6)


def test_repeated_query_token_counts_twice_and_unknown_query_is_empty(fields_dataset):
    bm25 = BM25Retriever(WhitespacePack(), fields="flat", show_progress=False)
    bm25.index(fields_dataset)
    run = bm25.search({"q1": Query("q1", "cherry"), "q2": Query("q2", "cherry cherry"), "q3": Query("q3", "zebra")}, 10)
    assert run["q2"]["c"] == pytest.approx(2 * run["q1"]["c"], rel=1e-6)
    assert run["q3"] == {}


def test_top_k_keeps_evaluation_order_on_ties():
    import numpy as np

    scores = np.array([1.0, 2.0, 1.0, 1.0, 0.0], dtype=np.float32)
    ids = ["d0", "d1", "d2", "d3", "d4"]
    assert list(top_k(scores, ids, 3)) == ["d1", "d3", "d2"]  # among ties, higher doc ID first
    assert list(top_k(scores, ids, 10)) == ["d1", "d3", "d2", "d0"]  # zero scores never returned


def test_index_is_cached_and_keyed_by_parameters(fields_dataset, beirx_home):
    first = BM25Retriever(WhitespacePack(), fields="flat", show_progress=False)
    first.index(fields_dataset)
    assert not first.loaded_from_cache and (first.index_dir / "COMPLETE").is_file()
    assert first.index_dir.is_relative_to(beirx_home)
    again = BM25Retriever(WhitespacePack(), fields="flat", show_progress=False)
    again.index(fields_dataset)
    assert again.loaded_from_cache and again.index_dir == first.index_dir
    q = {"q": Query("q", "apple pie")}
    assert again.search(q, 10) == first.search(q, 10)
    other = BM25Retriever(WhitespacePack(), fields="flat", k1=0.9, show_progress=False)
    other.index(fields_dataset)
    assert not other.loaded_from_cache and other.index_dir != first.index_dir
