"""Fairness of a subset to the systems that did not pool: leave-one-family-out on a toy corpus with the bias
computed by hand, discriminative power and significant reversals on hand-built per-query scores, the pool-bias
verdict of a swap, the estimate of full-corpus nDCG, cuts of part of a pool equal to fresh cuts, the manifest
round trip and the printout."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from conftest import write_beir
from test_subsets import DOCS, QRELS, QUERIES, _run_file

from beirx.artifacts import SubsetManifest
from beirx.artifacts.subset import FamilyBias, PoolBias
from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.evaluate.metrics import evaluate
from beirx.publish.cards import subset_note
from beirx.subsets import fidelity
from beirx.subsets.check import check_ranking, compare
from beirx.subsets.cut import gather, make_subset, select
from beirx.subsets.estimate import estimated_ndcg, fill_probability
from beirx.subsets.families import Families
from beirx.subsets.reusability import relative_change
from beirx.subsets.system_args import parse_pool, parse_systems

RANK2 = 1 / math.log2(3)  # nDCG@10 of one relevant document at rank 2
RANK3 = 1 / math.log2(4)

# Four queries with one relevant document each (d1..d4). On q1..q3 system A ranks its own hard negative a_i
# first, B ranks b_i first, C ranks c_i and e_i above the relevant one; on q4 A and B rank d4 first and C puts a1
# above it. Every run ranks all the documents.
TOY_DOCS = [{"_id": d, "title": "", "text": f"text of {d}"}
            for d in ["d1", "d2", "d3", "d4", "a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3", "e1", "e2", "e3"]]
TOY_QUERIES = [{"_id": f"q{i}", "text": f"query {i}"} for i in (1, 2, 3, 4)]
TOY_QRELS = {"test": [(f"q{i}", f"d{i}", 1) for i in (1, 2, 3, 4)]}
FIRST = {"a": (["a", "d", "b"], ["d4"]), "b": (["b", "d", "a"], ["d4"]), "c": (["c", "e", "d"], ["a1", "d4"])}


def _ranking(head: list[str]) -> list[str]:
    return head + [d["_id"] for d in TOY_DOCS if d["_id"] not in head]


@pytest.fixture
def toy(tmp_path):
    full = BeirDataset(write_beir(tmp_path / "toy", TOY_DOCS, TOY_QUERIES, TOY_QRELS), name="toy")
    runs = {}
    for name, (first, fourth) in FIRST.items():
        lists = {f"q{i}": _ranking([f"{x}{i}" for x in first]) for i in (1, 2, 3)} | {"q4": _ranking(fourth)}
        runs[name] = _run_file(tmp_path / f"{name}.trec", lists)
    # pool depth 1 from A and B, no budget: judged d1..d4 + a1..a3 + b1..b3, no fill
    make_subset(full, tmp_path / "sub", queries=4, pool=parse_pool([str(runs["a"]), str(runs["b"])]), depth=1,
                max_docs=None, seed=0, show_progress=False)
    return full, BeirDataset(tmp_path / "sub"), runs


def test_leave_one_family_out_by_hand(toy, tmp_path):
    """Full set: on q1..q3 A and B find d_i at rank 2 (nDCG@10 1/log2(3)) and C at rank 3 (1/log2(4)); on q4 A and B
    score 1 and C 1/log2(3). The subset keeps a_i and b_i, so A and B are unchanged, and C, whose c_i and e_i are
    missing, finds d1..d3 first (+1/2 each) and is unchanged on q4. Without A's family the cut keeps only b_i: A
    finds d1..d3 first (+1 - 1/log2(3)) and is unchanged on q4, while B, the reference, is unchanged: A's bias is
    3/4 (1 - 1/log2(3)); without B alike. C, which never pooled, shows 3/4 * 1/2 against A and B on the subset."""
    full, subset, runs = toy
    systems = parse_systems([str(runs["a"]), str(runs["b"]), str(runs["c"])])
    check = check_ranking(full, subset, systems, tmp_path / "check", show_progress=False)
    bias = check.pool_bias
    assert bias.reproduced is True and bias.note is None
    by_family = {f.family: f for f in bias.families}
    assert set(by_family) == {"run a.trec", "run b.trec"}
    per_query = np.array([1 - RANK2] * 3 + [0.0])
    draws = fidelity.draw_counts(4, fidelity.RESAMPLES, 0) @ per_query / 4
    for own, other in (("a", "b"), ("b", "a")):
        found = by_family[f"run {own}.trec"]
        assert found.systems == [f"run {own}.trec"] and found.reference == [f"run {other}.trec"]
        assert found.bias == pytest.approx(0.75 * (1 - RANK2), abs=1e-12) and found.change == pytest.approx(found.bias)
        assert found.reference_change == 0
        assert found.interval == pytest.approx([np.percentile(draws, 2.5), np.percentile(draws, 97.5)], abs=1e-12)
        assert (found.documents, found.depth_reached, found.queries, found.inexact_queries) == (7, 1, 4, 0)
    assert bias.expected == pytest.approx(0.75 * (1 - RANK2)) and bias.expected_family == "run a.trec"
    (unseen,) = bias.unseen
    assert unseen.system == "run c.trec" and unseen.bias == pytest.approx(0.75 * 0.5) and unseen.change == unseen.bias
    # the cut without A on disk: judged and B's pool, nothing else
    cut = BeirDataset(tmp_path / "check" / "leave-out" / "run_a.trec" / "data")
    assert set(cut.corpus) == {"d1", "d2", "d3", "d4", "b1", "b2", "b3"}
    marks = {s.label: (s.pooled, s.family_pooled, s.families) for s in check.systems}
    assert marks["run c.trec"] == (False, False, ["run c.trec"]) and marks["run a.trec"] == (True, True, ["run a.trec"])
    # on the subset C scores (3 + 1/log2(3)) / 4 and A (3/log2(3) + 1) / 4: C leads by (1 - 1/log2(3)) / 2, below
    # the expected bias 3/4 (1 - 1/log2(3)), so both swaps are within the expected pool bias
    swaps = [s for s in check.swaps if s.second == "run c.trec"]
    assert len(swaps) == 2 and all(s.verdict == "within the expected pool bias" for s in swaps)
    assert [s.subset_difference for s in swaps] == pytest.approx([-0.5 * (1 - RANK2)] * 2)


def test_a_single_pooling_family_is_measured_against_nothing(toy, tmp_path):
    full, _, runs = toy
    make_subset(full, tmp_path / "one", queries=4, pool=parse_pool([str(runs["a"])]), depth=1, max_docs=None,
                seed=0, show_progress=False)
    check = check_ranking(full, BeirDataset(tmp_path / "one"), parse_systems([str(runs["a"]), str(runs["b"])]),
                          tmp_path / "check", show_progress=False)
    (family,) = check.pool_bias.families
    assert family.reference == [] and family.reference_change is None and family.depth_reached == 0
    assert family.bias == pytest.approx(0.75 * (1 - RANK2)) and "no other family pooled" in family.note


def test_nobody_pooled_measures_each_family_against_the_others(toy, tmp_path, capsys):
    """No pool and no budget: the subset is the judged documents alone, where every system finds d_i first. On
    q1..q3 A and B gain 1 - 1/log2(3), C gains 1/2; on q4 only C gains (1 - 1/log2(3)). Against the other two:
    A's bias is ((1 - 1/log2(3)) - 3/4) / 4, C's (3/2 - 2 (1 - 1/log2(3))) / 4, the largest."""
    full, _, runs = toy
    make_subset(full, tmp_path / "none", queries=4, pool={}, depth=0, max_docs=None, seed=0, show_progress=False)
    assert main(["subset", "check", str(full.root), str(tmp_path / "none"), "--runs", str(runs["a"]), str(runs["b"]),
                 str(runs["c"]), "--check-output", str(tmp_path / "check"), "-q"]) == 0
    bias = SubsetManifest.find(tmp_path / "none").ranking_check.pool_bias
    gain = 1 - RANK2
    by_family = {f.family: f for f in bias.families}
    assert by_family["run a.trec"].bias == pytest.approx((gain - 0.75) / 4)
    assert by_family["run c.trec"].bias == pytest.approx((1.5 - 2 * gain) / 4)
    assert by_family["run c.trec"].reference == ["run a.trec", "run b.trec"] and not by_family["run c.trec"].cut
    assert (bias.expected_family, bias.reproduced, bias.unseen) == ("run c.trec", None, [])
    assert not (tmp_path / "check" / "leave-out").exists()
    printed = capsys.readouterr().out
    assert "pool bias: nobody pooled, so a new system is cut like every checked one" in printed
    assert "NO *" not in printed and "- no pool: beyond the judged documents the corpus is a uniform random " \
                                     "sample, the same for every system" in printed
    assert all(line.endswith("  -") for line in printed.splitlines()[1:4])
    from beirx.report.sources import Sources
    from beirx.report.subsets import ranking_check_table
    table = ranking_check_table([(tmp_path / "none", SubsetManifest.find(tmp_path / "none"))], Sources())
    assert [row[2].value for row in table.rows] == ["no pool"] * 3
    assert (f"expected bias of a new system: none from pooling; the family the cut raises most gains "
            f"{(1.5 - 2 * gain) / 4:+.4f}") in printed
    check = SubsetManifest.find(tmp_path / "none").ranking_check
    note = subset_note(tmp_path / "none")
    assert "a uniform random sample of the others (0; no pool, so no system is favoured by how the documents were " \
           "chosen)" in note
    change = sum(s.subset - s.full for s in check.systems) / 3
    assert f"The checked systems score {change:+.3f} NDCG@10 higher on it than on the full set on average" in note
    assert (f"No system pooled, so a new system is cut like the checked ones; the cut raises the families' scores "
            f"unevenly, by up to {(1.5 - 2 * gain) / 4:+.3f} over the others (run c.trec).") in note
    assert "should expect to gain" not in note


def test_relative_change_by_hand():
    full = {"f": {"q1": 0.5, "q2": 0.2}, "g": {"q1": 0.4, "q2": 0.4}, "r": {"q1": 0.3, "q2": 0.6}}
    cut = {"f": {"q1": 0.9, "q2": 0.2}, "g": {"q1": 0.4, "q2": 0.8}, "r": {"q1": 0.3, "q2": 0.7}}
    # per query: own change (0.4 + 0) / 2 = 0.2 and (0 + 0.4) / 2 = 0.2; reference 0 and 0.1; bias 0.2 and 0.1
    found = relative_change(full, cut, ["f", "g"], ["r"], resamples=1000, seed=3)
    assert found["bias"] == pytest.approx(0.15) and found["change"] == pytest.approx(0.2)
    assert found["reference_change"] == pytest.approx(0.05) and found["queries"] == 2
    # two queries: a draw holds (0.2, 0.2), (0.2, 0.1) or (0.1, 0.1), so the interval is within [0.1, 0.2]
    assert 0.1 - 1e-12 <= found["interval"][0] <= found["interval"][1] <= 0.2 + 1e-12
    draws = fidelity.draw_counts(2, 1000, 3) @ np.array([0.2, 0.1]) / 2
    assert found["interval"] == pytest.approx([np.percentile(draws, 2.5), np.percentile(draws, 97.5)], abs=1e-12)
    assert relative_change(full, cut, ["f"], [])["bias"] == pytest.approx(0.2)


def test_discriminative_power_by_hand():
    """Six queries, so the randomization test is exact (64 sign flips): six equal differences give p = 2/64.
    The full set separates x>y, x>w, y>w and z>w (x-z: three zeros and three equal differences, p = 1/4; y-z: mean
    0). The subset keeps x>w and y>w, reverses x<y, cannot separate z=w, and separates x>z and y>z the full set
    does not."""
    q = [f"q{i}" for i in range(6)]
    full = {"x": dict.fromkeys(q, 0.9), "y": dict.fromkeys(q, 0.8), "z": dict(zip(q, [0.9, 0.7] * 3)),
            "w": dict.fromkeys(q, 0.5)}
    subset = {"x": dict.fromkeys(q, 0.8), "y": dict.fromkeys(q, 0.9), "z": dict.fromkeys(q, 0.5),
              "w": dict.fromkeys(q, 0.5)}
    full_p, subset_p = fidelity.pair_p_values(full), fidelity.pair_p_values(subset)
    assert full_p[("x", "y")] == pytest.approx(2 / 64) and full_p[("x", "z")] == pytest.approx(16 / 64)
    means = {side: {s: float(np.mean(list(v.values()))) for s, v in scores.items()}
             for side, scores in (("full", full), ("subset", subset))}
    power = fidelity.discriminative_power(means["full"], means["subset"], full_p, subset_p)
    assert (power.full_separated, power.same_order, power.reversals, power.subset_only, power.pairs) == (4, 2, 1, 2, 6)
    assert power.retained == 0.5
    none = fidelity.discriminative_power(means["full"], means["full"], {("x", "y"): 0.5}, {("x", "y"): 0.01})
    assert none.retained is None and none.subset_only == 1


def test_swaps_are_judged_against_the_expected_pool_bias():
    """u did not pool and overtakes p by 0.03: within an expected bias of 0.05, not within 0.02."""
    q = [f"q{i}" for i in range(4)]
    per_query = [({k: 0.60 for k in q}, {k: 0.62 for k in q}), ({k: 0.58 for k in q}, {k: 0.65 for k in q})]

    def judged(expected):
        bias = PoolBias(method="m", families=[], expected=expected, expected_family="lexical", expected_interval=None,
                        reproduced=True)
        check = compare(["p", "u"], [0.60, 0.58], [0.62, 0.65], metric="NDCG@10", split="test", threshold=0.9,
                        full_checksum="f", subset_checksum="s", per_query=per_query, families=[["lexical"], ["dense"]],
                        family_pooled=[True, False], pool_bias=bias)
        return check.swaps[0].verdict

    assert judged(0.05) == "within the expected pool bias"
    assert judged(0.02) == judged(None) == "noise on both"  # four queries never separate at 95%


def test_estimate_of_full_corpus_ndcg():
    qrels = {"q1": {"r": 1, "n": 0}, "q2": {"s": 2, "t": 1}}
    run = {"q1": {"x": 0.9, "c": 0.8, "r": 0.7}, "q2": {"s": 0.5, "y": 0.4, "t": 0.3}}
    exact = evaluate(qrels, run, k_values=(10,)).per_query
    nothing_drawn = estimated_ndcg(qrels, run, set(), 1.0)
    assert nothing_drawn == pytest.approx({q: v["NDCG@10"] for q, v in exact.items()}, abs=1e-12)
    # x and y were drawn with probability 1/4: each stands for 4 documents of the full corpus
    found = estimated_ndcg(qrels, run, {"x", "y"}, 0.25)
    assert found["q1"] == pytest.approx(1 / math.log2(1 + 6))  # r: 1 + 4 (x) + 1 (c)
    ideal = 2 + 1 / math.log2(3)
    assert found["q2"] == pytest.approx((2 + 1 / math.log2(1 + 6)) / ideal)  # t: 1 + 1 (s) + 4 (y)
    assert estimated_ndcg(qrels, run, {"x", "c"}, 0.1, k=10)["q1"] == 0  # r estimated at rank 21
    assert fill_probability(100, 10, 20, 35) == 0.5 and fill_probability(30, 10, 20, 0) is None
    with pytest.raises(ValueError):
        estimated_ndcg(qrels, run, set(), 0)


def test_selecting_part_of_a_pool_equals_a_fresh_cut(tmp_path):
    """One scan for two pooling systems; selecting the lists of one gives the documents a cut pooling only it
    makes (same queries, seed and budget, random fill included)."""
    source = BeirDataset(write_beir(tmp_path / "toy", DOCS, QUERIES, QRELS), name="toy")
    keep = [f"q{i}" for i in range(1, 9)]
    run_a = _run_file(tmp_path / "a.trec", {q: [f"d{20 + i:02d}", f"d{30 + i:02d}"] for i, q in enumerate(keep)})
    run_b = _run_file(tmp_path / "b.trec", {q: ["d38", f"d{12 + i:02d}"] for i, q in enumerate(keep)})
    from beirx.language_packs import get_pack
    from beirx.subsets.pool import pool_runs

    kept = {q: source.queries[q] for q in keep}
    pooled = pool_runs(source, get_pack("en"), kept, parse_pool([str(run_a), str(run_b)]), 2, False)
    found = gather(source, kept, source.qrels("test"), pooled, 25, 5)
    for part, spec in ((pooled[:1], run_a), (pooled[1:], run_b), (pooled, None)):
        pool = parse_pool([str(run_a), str(run_b)] if spec is None else [str(spec)])
        fresh = make_subset(source, tmp_path / f"fresh-{len(part)}-{spec and spec.stem}", queries=8, pool=pool,
                            depth=2, max_docs=25, seed=5, show_progress=False)
        selection = select(found, part, 2, 25)
        assert selection.keep == set(BeirDataset(tmp_path / f"fresh-{len(part)}-{spec and spec.stem}").corpus)
        assert (len(selection.fill), selection.reached) == (fresh.counts.random, fresh.method.depth_reached)


def test_families_of_descriptions(tmp_path):
    families = Families()
    e5 = {"retriever": "dense", "model": "/models/e5", "revision": "sha256:abc"}
    onnx = {**e5, "precision": "onnx-int8"}
    assert families.of({"retriever": "bm25", "fields": "flat"}) == families.of({"retriever": "bm25"})
    assert families.of(e5) == families.of(onnx) and [f.label for f in families.of(e5)] == ["dense e5"]
    fused = families.of({"systems": [{"retriever": "bm25"}, e5]})
    assert sorted(f.label for f in fused) == ["dense e5", "lexical"]
    reranked = families.of({"reranker": {"reranker": "cross_encoder", "model": "/m/ce", "revision": "sha256:1"},
                            "first_stage": {"retriever": "bm25"}})
    assert sorted(f.label for f in reranked) == ["cross_encoder ce", "lexical"]
    # a run file written by beirx eval is the system its results document describes
    out = tmp_path / "runs"
    assert main(["eval", "--dataset", str(write_beir(tmp_path / "d", DOCS, QUERIES, QRELS)), "--retriever", "bm25",
                 "--output", str(out), "-q"]) == 0
    (run,) = out.glob("*.trec")
    assert [f.label for f in families.of({"retriever": "run_file", "path": str(run)})] == ["lexical"]
    other = _run_file(tmp_path / "x.trec", {"q1": ["d01"]})
    assert [f.label for f in families.of({"retriever": "run_file", "path": str(other), "sha256": "1"})] == ["run x.trec"]


def test_manifest_round_trip_and_printout(toy, tmp_path, capsys):
    full, subset, runs = toy
    assert main(["subset", "check", str(full.root), str(subset.root), "--runs", str(runs["a"]), str(runs["b"]),
                 str(runs["c"]), "--check-output", str(tmp_path / "check"), "-q"]) == 0
    printed = capsys.readouterr().out
    check = SubsetManifest.find(subset.root).ranking_check
    path = tmp_path / "again.json"
    manifest = SubsetManifest.find(subset.root)
    manifest.save(path)
    assert SubsetManifest.load(path) == manifest and isinstance(check.pool_bias.families[0], FamilyBias)
    assert dataclasses.asdict(check.discriminative_power)["pairs"] == 3
    family = check.pool_bias.families[0]
    expected = f"{family.bias:+.4f} [{family.interval[0]:+.4f}, {family.interval[1]:+.4f}]"
    assert (f"  without run a.trec (1 of its systems, 1 reference): {expected} (own change {family.bias:+.4f}, "
            "reference +0.0000; the cut: 7 documents, depth 1)") in printed
    assert (f"expected bias of a system that did not pool: {expected} NDCG@10 (without run a.trec, the largest of 2 "
            "families)") in printed
    assert f"  observed, did not pool: run c.trec {0.375:+.4f}" in printed
    assert "discriminative power: the full set separates none of the 3 pairs at 95%" in printed
    assert "-> within the expected pool bias" in printed
    assert printed.rstrip().endswith(f"; a system that did not pool is expected to gain {family.bias:+.3f} over those "
                                     "that did, so read its lead over a pooled system net of that.")
    skipped = tmp_path / "skipped"
    assert main(["subset", "check", str(full.root), str(subset.root), "--runs", str(runs["a"]), str(runs["b"]),
                 "--check-output", str(skipped), "--no-pool-bias", "-q"]) == 0
    assert SubsetManifest.find(subset.root).ranking_check.pool_bias is None and not (skipped / "leave-out").exists()


def test_a_run_with_none_of_the_cut_documents_is_refused_naming_it(tmp_path):
    """A run file whose documents for the kept queries are all outside the part it is restricted to cannot rank
    it: the error names the file, nothing is written."""
    from beirx.errors import DataError
    from beirx.evaluate.specs import RunFileSpec
    from beirx.subsets.restrict import Restrict

    run = tmp_path / "other.trec"
    run.write_text("q1 Q0 x1 1 2.0 r\nq1 Q0 x2 2 1.0 r\nq2 Q0 d1 1 1.0 r\n", encoding="utf-8")
    restrict = Restrict({"d1", "d2"}, {"q1"}, tmp_path / "out", full_documents=10)
    with pytest.raises(DataError, match=r"other\.trec.*none of the documents it retrieves for the 1 queries"):
        restrict(RunFileSpec(run))
    assert not (tmp_path / "out").exists()
    kept = Restrict({"x2"}, {"q1"}, tmp_path / "ok", full_documents=10)(RunFileSpec(run, name="r"))
    assert kept.path.read_text(encoding="utf-8").split()[:3] == ["q1", "Q0", "x2"]
