"""Metrics equal pytrec_eval's, also on runs full of tied scores; BEIR's extras hand-computed."""

from __future__ import annotations

import random

import pytest
import pytrec_eval

from beirx.evaluate.metrics import evaluate
from beirx.evaluate.runs import ranked, read_trec, truncate, write_trec
from beirx.errors import DataError


def _tied_fixture(seed=7, n_queries=30, n_docs=60):
    rng = random.Random(seed)
    docs = [f"doc{i:02d}" for i in range(n_docs)]
    qrels = {f"q{i}": {d: rng.choice([0, 1, 1, 2]) for d in rng.sample(docs, 8)} for i in range(n_queries)}
    # Only four distinct score values: nearly every rank is decided by the tie-break.
    run = {q: {d: float(rng.choice([0.5, 1.0, 1.5, 2.0])) for d in rng.sample(docs, 40)} for q in qrels}
    return qrels, run


def test_metrics_equal_pytrec_eval_on_tied_scores():
    qrels, run = _tied_fixture()
    ours = evaluate(qrels, run, k_values=(1, 3, 5, 10, 100))
    families = {"ndcg_cut": "NDCG", "map_cut": "MAP", "recall": "Recall", "P": "P"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {f"{f}.1,3,5,10,100" for f in families}).evaluate(run)
    judged = [q for q in qrels if any(r > 0 for r in qrels[q].values())]
    for family, label in families.items():
        for k in (1, 3, 5, 10, 100):
            for q in judged:
                assert ours.per_query[q][f"{label}@{k}"] == ref[q][f"{family}_{k}"]
            mean = sum(ref[q][f"{family}_{k}"] for q in judged) / len(judged)
            assert ours.metrics[f"{label}@{k}"] == pytest.approx(mean, abs=1e-12)


def test_mrr_at_k_uses_pytrec_eval_tie_break():
    # All scores tie: trec_eval ranks doc IDs descending, so the order is c, b, a.
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    ev = evaluate(qrels, run, k_values=(1, 2, 3))
    assert (ev.metrics["MRR@1"], ev.metrics["MRR@2"], ev.metrics["MRR@3"]) == (0.0, 0.0, pytest.approx(1 / 3))
    assert ranked(run["q"]) == [("c", 1.0), ("b", 1.0), ("a", 1.0)]
    full = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
    assert ev.metrics["MRR@3"] == full


def test_capped_recall_and_hole_hand_computed():
    qrels = {"q1": {"a": 1, "b": 1, "c": 1, "x": 0}, "q2": {"z": 1}}
    run = {"q1": {"a": 3.0, "u": 2.0, "x": 1.5, "b": 1.0}, "q2": {"y": 2.0, "z": 1.0}}
    ev = evaluate(qrels, run, k_values=(2, 4))
    # q1 top-2 = a, u: 1 relevant / min(2, 3) = 0.5; top-4 = a, u, x, b: 2 / min(4, 3) = 2/3.
    assert ev.per_query["q1"]["R_cap@2"] == 0.5 and ev.per_query["q1"]["R_cap@4"] == pytest.approx(2 / 3)
    # Unjudged anywhere: u (q1) and y (q2); x is judged (0) so not a hole.
    assert ev.per_query["q1"]["Hole@2"] == 0.5 and ev.per_query["q1"]["Hole@4"] == 0.25
    assert ev.per_query["q2"]["Hole@2"] == 0.5
    assert ev.metrics["R_cap@2"] == pytest.approx((0.5 + 1.0) / 2)


def test_missing_queries_score_zero_and_are_counted():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    ev = evaluate(qrels, {"q1": {"a": 1.0}}, k_values=(10,))
    assert ev.missing_queries == ["q2"]
    assert ev.metrics["NDCG@10"] == 0.5 and ev.per_query["q2"]["NDCG@10"] == 0.0


def test_ignore_identical_ids_removes_the_query_itself():
    qrels = {"q1": {"d": 1}}
    run = {"q1": {"q1": 9.0, "d": 1.0}}
    assert evaluate(qrels, run, k_values=(1,)).metrics["P@1"] == 0.0
    assert evaluate(qrels, run, k_values=(1,), ignore_identical_ids=True).metrics["P@1"] == 1.0


def test_trec_roundtrip_keeps_exact_scores_and_tie_order(tmp_path):
    qrels, run = _tied_fixture(n_queries=3)
    run["q0"]["precise"] = 0.1 + 0.2  # not representable in few digits
    write_trec(tmp_path / "run.trec", run, tag="my system")
    back = read_trec(tmp_path / "run.trec")
    assert back == run
    first = (tmp_path / "run.trec").read_text().splitlines()[0].split()
    assert first[1] == "Q0" and first[3] == "1" and first[5] == "my_system"
    assert truncate(run, 5)["q1"] == dict(ranked(run["q1"])[:5])


def test_bad_run_file_names_line(tmp_path):
    path = tmp_path / "bad.trec"
    path.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 notanumber x\n")
    with pytest.raises(DataError, match=r"bad.trec:2: score is not a number"):
        read_trec(path)


def test_mrr_at_k_equals_recip_rank_of_truncated_runs():
    qrels, run = _tied_fixture(seed=3, n_queries=60)
    ev = evaluate(qrels, run, k_values=(1, 3, 5, 10, 100))
    judged = [q for q in qrels if any(r > 0 for r in qrels[q].values())]
    for k in (1, 3, 5, 10, 100):
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(truncate(run, k))
        for q in judged:
            assert ev.per_query[q][f"MRR@{k}"] == ref[q]["recip_rank"]


def test_metric_names_are_typed_measure_cutoff_keys():
    from beirx.artifacts.results import MEASURES, MetricKey

    evaluation = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0, "d2": 0.5}}, k_values=[1, 10])
    keys = [MetricKey.parse(name) for name in evaluation.metrics]
    assert keys == [MetricKey(m, k) for m in MEASURES for k in (1, 10)]
    assert [str(k) for k in keys] == list(evaluation.metrics) and set(evaluation.per_query["q1"]) == set(evaluation.metrics)
    assert MetricKey.parse("R_cap@100") == MetricKey("R_cap", 100) and str(MetricKey("NDCG", 10)) == "NDCG@10"
    assert [MetricKey.parse(bad) for bad in ("NDCG", "ndcg@10", "NDCG@x", "F1@10", "NDCG@-1")] == [None] * 5
