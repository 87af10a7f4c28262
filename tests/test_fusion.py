"""Hybrid fusion: every method against hand-computed scores, missing documents, ties, weights."""

from __future__ import annotations

import math

import pytest

from beirx.errors import BeirxError
from beirx.evaluate.fusion import fuse, normalize
from beirx.evaluate.runs import ranked

# BM25-like and dense-like runs for one query. Min-max: A -> a 1, b 0.5, c 0.001 (the list minimum);
# B -> b 1, d 0.5, a 0.001. c is missing from B and d from A (normalised score 0 there).
A = {"q": {"a": 5.0, "b": 3.0, "c": 1.0}}
B = {"q": {"b": 3.0, "d": 2.0, "a": 1.0}}


def order(run, qid="q"):
    return [did for did, _ in ranked(run[qid])]


def test_min_max_floor_and_constant_lists():
    assert normalize(A["q"], "min_max") == {"a": 1.0, "b": 0.5, "c": 0.001}
    assert normalize({"x": 7.0}, "min_max") == {"x": 1.0}          # one document
    assert normalize({"x": 2.0, "y": 2.0}, "min_max") == {"x": 1.0, "y": 1.0}
    assert normalize({}, "min_max") == {}


def test_l2_normalisation():
    norm = math.sqrt(25 + 9 + 1)
    assert normalize(A["q"], "l2") == pytest.approx({"a": 5 / norm, "b": 3 / norm, "c": 1 / norm})
    assert normalize({"x": 0.0}, "l2") == {"x": 0.0}


def test_arithmetic_mean_counts_missing_as_zero():
    run = fuse([A, B], "arithmetic", "min_max")["q"]
    assert run == pytest.approx({"a": (1 + 0.001) / 2, "b": (0.5 + 1) / 2, "c": 0.001 / 2, "d": 0.5 / 2})
    assert order({"q": run}) == ["b", "a", "d", "c"]


def test_weighted_arithmetic_mean():
    run = fuse([A, B], "arithmetic", "min_max", weights=[1, 3])["q"]
    assert run == pytest.approx({"a": (1 + 3 * 0.001) / 4, "b": (0.5 + 3) / 4, "c": 0.001 / 4, "d": 3 * 0.5 / 4})
    assert order({"q": run}) == ["b", "d", "a", "c"]


def test_geometric_mean_skips_missing_documents():
    run = fuse([A, B], "geometric", "min_max")["q"]
    # c and d are found by one run only: they keep that run's normalised score.
    assert run == pytest.approx({"a": math.sqrt(0.001), "b": math.sqrt(0.5), "c": 0.001, "d": 0.5})
    weighted = fuse([A, B], "geometric", "min_max", weights=[1, 3])["q"]
    assert weighted["a"] == pytest.approx(math.exp((math.log(1.0) + 3 * math.log(0.001)) / 4))


def test_harmonic_mean_skips_missing_documents():
    run = fuse([A, B], "harmonic", "min_max")["q"]
    assert run == pytest.approx({"a": 2 / (1 / 1.0 + 1 / 0.001), "b": 2 / (1 / 0.5 + 1), "c": 0.001, "d": 0.5})
    assert order({"q": run}) == ["b", "d", "a", "c"]


def test_linear_is_b_plus_f_times_n():
    run = fuse([A, B], "linear", "min_max", weights=[1, 2])["q"]
    assert run == pytest.approx({"a": 1 + 2 * 0.001, "b": 0.5 + 2 * 1.0, "c": 0.001, "d": 2 * 0.5})
    raw = fuse([A, B], "linear", "none", weights=[1, 0.5])["q"]
    assert raw == pytest.approx({"a": 5 + 0.5, "b": 3 + 1.5, "c": 1.0, "d": 1.0})


def test_rrf_cormack_k60_missing_contributes_nothing():
    run = fuse([A, B], "rrf")["q"]
    assert run == pytest.approx({"a": 1 / 61 + 1 / 63, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62})
    assert order({"q": run}) == ["b", "a", "d", "c"]
    weighted = fuse([A, B], "rrf", weights=[2, 1], rrf_k=10)["q"]
    assert weighted["c"] == pytest.approx(2 / 13)


def test_rrf_ranks_tied_input_scores_by_doc_id_descending():
    tied = {"q": {"x": 1.0, "y": 1.0}}        # evaluation order: y (rank 1), then x (rank 2)
    other = {"q": {"z": 5.0}}
    run = fuse([tied, other], "rrf")["q"]
    assert run["y"] == pytest.approx(1 / 61) and run["x"] == pytest.approx(1 / 62)


def test_fused_ties_follow_evaluation_order():
    left = {"q": {"p": 2.0, "r": 1.0}}
    right = {"q": {"r": 2.0, "p": 1.0}}
    run = fuse([left, right], "rrf")
    assert run["q"]["p"] == run["q"]["r"]
    assert order(run) == ["r", "p"]            # equal scores: higher document ID first, as trec_eval


def test_queries_missing_from_one_run():
    only_a = {"q2": {"a": 4.0, "b": 2.0}}
    run = fuse([{**A, **only_a}, B], "arithmetic", "min_max")
    assert run["q2"] == pytest.approx({"a": 0.5, "b": 0.0005})
    assert fuse([{"q": {}}, B], "rrf")["q"] == pytest.approx({"b": 1 / 61, "d": 1 / 62, "a": 1 / 63})


def test_three_runs_and_bad_arguments():
    C = {"q": {"d": 9.0, "c": 0.0}}
    run = fuse([A, B, C], "arithmetic", "min_max")["q"]
    assert run["d"] == pytest.approx((0 + 0.5 + 1.0) / 3)
    with pytest.raises(BeirxError, match="one weight per run"):
        fuse([A, B], "arithmetic", weights=[1])
    with pytest.raises(BeirxError, match="at least two"):
        fuse([A], "rrf")
    with pytest.raises(BeirxError, match="unknown fusion method"):
        fuse([A, B], "max")
    with pytest.raises(BeirxError, match="fusion weights: must be 0 or more, got -1.0"):
        fuse([A, B], "linear", weights=[1, -1])
