"""The ranking check: Kendall's tau equal to scipy's and to hand counts, ranks and swapped pairs, each system's
metric equal to pytrec_eval on the full set and the subset, the check in subset.json and in ``beirx report``,
and the cost of translating a subset next to its full dataset (``beirx translate --dry-run``)."""

from __future__ import annotations

import json
import math

import pytest
from scipy.stats import kendalltau

from conftest import write_beir
from test_subsets import DOCS, QRELS, QUERIES, _run_file

from beirx.artifacts import SubsetManifest
from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.evaluate.metrics import evaluate
from beirx.evaluate.runs import read_trec
from beirx.subsets.cut import make_subset
from beirx.subsets import fidelity
from beirx.subsets.check import check_ranking, compare, kendall_tau, reading, took_part
from beirx.subsets.system_args import parse_pool, parse_systems


def test_tau_equals_scipy_and_hand_counts():
    full, subset = [0.5, 0.4, 0.3, 0.2], [0.45, 0.41, 0.2, 0.3]  # one of 6 pairs discordant
    tau, p = kendall_tau(full, subset)
    assert tau == pytest.approx((5 - 1) / 6) and tau == kendalltau(full, subset).statistic
    assert p == kendalltau(full, subset).pvalue
    tau, _ = kendall_tau([3, 2, 1], [2, 2, 1])  # tau-b with a tie: (2 - 0) / sqrt(3 * 2)
    assert tau == pytest.approx(2 / math.sqrt(6))
    assert kendall_tau([1, 2, 3], [3, 2, 1])[0] == -1.0
    assert kendall_tau([0.5], [0.5]) == (None, None) and kendall_tau([1, 2], [3, 3]) == (None, None)


def test_compare_ranks_swaps_and_warns():
    check = compare(["a", "b", "c", "d"], [0.5, 0.4, 0.3, 0.2], [0.45, 0.41, 0.2, 0.3], metric="NDCG@10",
                    split="test", threshold=0.9, full_checksum="sha256:f", subset_checksum="sha256:s")
    assert [(s.label, s.full_rank, s.subset_rank) for s in check.systems] == [("a", 1, 1), ("b", 2, 2), ("c", 3, 4),
                                                                               ("d", 4, 3)]
    assert check.swapped == ["c vs d: +0.1000 on the full set, -0.1000 on the subset"]
    assert check.warning.startswith("Kendall's tau 0.667 is below 0.9") and "1 of 6 pairs swapped" in check.warning
    agreeing = compare(["a", "b"], [0.5, 0.4], [0.3, 0.2], metric="NDCG@10", split="test", threshold=0.9,
                       full_checksum="f", subset_checksum="s")
    assert agreeing.tau == 1.0 and agreeing.warning is None and agreeing.swapped == []
    tied = compare(["a", "b"], [0.5, 0.4], [0.3, 0.3], metric="NDCG@10", split="test", threshold=0.9,
                   full_checksum="f", subset_checksum="s")
    assert tied.tau is None and tied.warning.startswith("Kendall's tau is undefined (every system scores the same on "
                                                        "one side): the subset does not rank these 2 systems")


@pytest.fixture
def pair(tmp_path):
    full = BeirDataset(write_beir(tmp_path / "toy", DOCS, QUERIES, QRELS), name="toy")
    make_subset(full, tmp_path / "sub", queries=6, pool=parse_pool(["bm25:fields=flat"]), depth=3, max_docs=20,
                seed=1, show_progress=False)
    return full, BeirDataset(tmp_path / "sub")


def test_check_evaluates_both_sides_and_records_the_check(pair, tmp_path):
    full, subset = pair
    run = _run_file(tmp_path / "ext.trec", {f"q{i}": [f"d{i:02d}", "d30", f"d{i + 1:02d}"] for i in range(1, 9)})
    systems = parse_systems(["bm25:fields=flat", "bm25", str(run)])
    check = check_ranking(full, subset, systems, tmp_path / "check", show_progress=False)
    by_label = {s.label: s for s in check.systems}
    # the run file on each side, scored by pytrec_eval: whole on the full set, restricted on the subset
    whole = evaluate(full.qrels("test"), read_trec(run, queries=set(full.qrels("test"))))
    assert by_label["run ext.trec"].full == pytest.approx(whole.metrics["NDCG@10"], abs=1e-12)
    docs = set(subset.corpus)
    restricted = {q: {d: s for d, s in docs_.items() if d in docs} for q, docs_ in read_trec(run).items()
                  if q in subset.subset.query_ids}
    assert by_label["run ext.trec"].subset == pytest.approx(evaluate(subset.qrels("test"), restricted)
                                                            .metrics["NDCG@10"], abs=1e-12)
    for label, agreement in by_label.items():
        for side, path in (("full", agreement.full_results), ("subset", agreement.subset_results)):
            assert json.loads(open(path).read())["metrics"]["NDCG@10"] == getattr(agreement, side)
    assert check.tau == pytest.approx(kendalltau([s.full for s in check.systems],
                                                 [s.subset for s in check.systems]).statistic)
    assert SubsetManifest.load(subset.root / "subset.json").ranking_check == check
    assert check.full_checksum == full.checksum() and check.subset_checksum == subset.checksum()


def test_report_shows_the_check(pair, tmp_path):
    from beirx.report.build import build_report

    full, subset = pair
    check_ranking(full, subset, parse_systems(["bm25:fields=flat", "bm25"]), tmp_path / "check",
                  show_progress=False)
    report = build_report([tmp_path / "check"], tmp_path / "report", plots=False)
    table = report.tables["ranking_check"]
    assert [c.value for c in table.rows[0][:2]] == ["toy-subset (6 q, 20 docs)",
                                                    SubsetManifest.find(subset.root).ranking_check.systems[0].label]
    check = SubsetManifest.find(subset.root).ranking_check
    assert len(table.rows) == 2 and table.rows[0][7].value == check.tau and table.rows[0][9].value == check.rho
    # only bm25:fields=flat pooled; bm25 (multifield) is of its family
    assert {row[1].value: row[2].value for row in table.rows} == {"bm25 fields=flat": "yes", "bm25": "family"}
    power, bias = check.discriminative_power, check.pool_bias
    assert [table.rows[0][i].value for i in (11, 12, 13)] == [power.retained, power.reversals, bias.expected]
    lexical = bias.families[0]
    assert [c.value for c in report.tables["pool_bias"].rows[0][:5]] == [
        "toy-subset (6 q, 20 docs)", "without lexical", 2, 0, lexical.bias]
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Subset ranking check" in text and "Pool bias of a system that did not pool" in text


def test_check_refuses_another_dataset(pair, tmp_path):
    full, subset = pair
    other = BeirDataset(write_beir(tmp_path / "other", DOCS[:20], QUERIES, QRELS), name="toy")
    with pytest.raises(BeirxError, match="is not the dataset .* was cut from"):
        check_ranking(other, subset, parse_systems(["bm25", "bm25:fields=flat"]), tmp_path / "c", show_progress=False)
    with pytest.raises(BeirxError, match="at least two systems"):
        check_ranking(full, subset, parse_systems(["bm25"]), tmp_path / "c", show_progress=False)


def _word(i: int) -> str:
    return "".join(chr(ord("a") + int(c)) for c in str(i))  # 12 -> "bc": no digits to keep verbatim


def test_dry_run_states_the_share_of_the_full_dataset(tmp_path, capsys):
    from beirx.translate.backends import TRANSLATORS

    docs = [{"_id": d["_id"], "title": f"title {_word(i)}", "text": f"document {_word(i)} about it"}
            for i, d in enumerate(DOCS)]
    queries = [{"_id": q["_id"], "text": f"topic {_word(i)}" if q["text"].strip() else ""} for i, q in enumerate(QUERIES)]
    full = BeirDataset(write_beir(tmp_path / "words", docs, queries, QRELS))
    make_subset(full, tmp_path / "sub", queries=6, pool={}, depth=0, max_docs=15, seed=1, show_progress=False)
    subset = BeirDataset(tmp_path / "sub")
    TRANSLATORS.register("word-reverser", "suite_helpers:WordReverser")
    assert main(["translate", "--dataset", str(subset.root), "--lang", "xx", "--translator", "word-reverser",
                 "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)

    def characters(kept_docs, kept_queries):  # one sentence per text, none repeated: a segment is a whole text
        return sum(len(d["title"]) + len(d["text"]) for d in kept_docs) + sum(len(q["text"]) for q in kept_queries)

    kept = set(subset.subset.query_ids)
    mine = characters([d for d in docs if d["_id"] in subset.corpus], [q for q in queries if q["_id"] in kept])
    whole = characters(docs, queries)
    assert plan["characters_total"] == plan["characters_to_translate"] == mine
    assert plan["full_dataset"] == {"path": str(full.root), "characters_total": whole,
                                    "tokens_total": 2 * 40 + 4 * 40 + 2 * 10, "segments_unique": 40 + 40 + 10}
    assert plan["share_of_full"]["characters_total"] == round(mine / whole, 6)
    assert plan["share_of_full"]["segments_unique"] == round((15 + 15 + 6) / 90, 6)
    assert plan["share_of_full"]["tokens_total"] == round((2 * 15 + 4 * 15 + 2 * 6) / 260, 6)
    assert main(["translate", "--dataset", str(full.root), "--lang", "xx", "--translator", "word-reverser",
                 "--dry-run"]) == 0
    assert "share_of_full" not in json.loads(capsys.readouterr().out)


def test_noise_figures_by_hand():
    """Four queries, three systems: rho, tau's bootstrap interval, resolutions and verdicts known exactly."""
    q = ["a", "b", "c", "d"]
    full_pq = {"x": dict(zip(q, [1.0, 1.0, 1.0, 1.0])), "y": dict(zip(q, [0.0, 0.0, 0.0, 0.0])),
               "z": dict(zip(q, [0.5, 0.6, 0.4, 0.5]))}
    sub_pq = {"x": dict(zip(q, [0.0, 0.0, 0.0, 0.0])), "y": dict(zip(q, [1.0, 1.0, 1.0, 1.0])),
              "z": dict(zip(q, [0.5, 0.7, 0.3, 0.5]))}
    labels = ["x", "y", "z"]
    full, sub = [1.0, 0.0, 0.5], [0.0, 1.0, 0.5]
    check = compare(labels, full, sub, metric="NDCG@10", split="test", threshold=0.9, full_checksum="f",
                    subset_checksum="s", per_query=[(full_pq[s], sub_pq[s]) for s in labels],
                    pooled=[True, False, True])
    assert check.tau == -1.0 and check.rho == -1.0
    # every resample keeps each system's mean, so every resampled tau is -1
    assert check.tau_interval == [-1.0, -1.0] and check.rho_interval == [-1.0, -1.0]
    # paired: the full side drawn too, x stays 1, y 0 and z between on both sides: -1 on every draw; the
    # self-ceiling (the full set's draws against its own means) is 1 on every draw
    assert check.paired_tau == -1.0 and check.paired_tau_interval == [-1.0, -1.0]
    assert check.paired_rho == -1.0 and check.paired_rho_interval == [-1.0, -1.0]
    assert check.ceiling_tau_interval == [1.0, 1.0] and check.ceiling_rho_interval == [1.0, 1.0]
    # 4 queries: the exact sign-flip test has 16 flips; x vs y differ by 1 on every query: p = 2/16 = 0.125
    res = check.subset_resolution
    assert res.queries == 4 and res.smallest_separated is None and res.largest_unresolved == 1.0
    assert check.reading == ("this subset separates no pair of the checked systems at 95% (4 queries): read none of "
                             "their differences from it")
    assert [(w.first, w.second, w.verdict) for w in check.swaps] == [("x", "z", "noise on both"),
                                                                     ("x", "y", "noise on both"),
                                                                     ("z", "y", "noise on both")]
    assert check.swaps[1].full_p == pytest.approx(0.125) and check.swaps[1].subset_p == pytest.approx(0.125)
    assert {s.label: s.pooled for s in check.systems} == {"x": True, "y": False, "z": True}


def test_resolution_and_verdicts():
    means = {"a": 0.50, "b": 0.49, "c": 0.40}
    p = {("a", "b"): 0.30, ("a", "c"): 0.01, ("b", "c"): 0.04}
    resolved = fidelity.resolution(means, p)
    assert resolved.smallest_separated == pytest.approx(0.09) and resolved.largest_unresolved == pytest.approx(0.01)
    assert [fidelity.verdict(pf, ps) for pf, ps in [(0.2, 0.3), (0.01, 0.3), (0.3, 0.01), (0.01, 0.02)]] == [
        "noise on both", "noise on the subset", "noise on the full set", "disagreement"]
    from beirx.artifacts.subset import Resolution

    assert reading(Resolution(test="t", queries=300, smallest_separated=0.0123, largest_unresolved=0.03)) == (
        "differences below 0.012 are not resolved at 95% on this subset (300 queries), nor is every difference up "
        "to 0.030")
    assert fidelity.spearman_rho([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)


def test_pooled_systems_are_recognised(tmp_path):
    from beirx.artifacts.subset import PoolSystem
    from beirx.evaluate.specs import FusionSpec, RunFileSpec, SystemSpec

    run = _run_file(tmp_path / "r.trec", {"q1": ["d01"]})
    other = _run_file(tmp_path / "o.trec", {"q1": ["d02"]})
    sha = __import__("hashlib").sha256(run.read_bytes()).hexdigest()
    pool = [PoolSystem(spec="bm25:fields=flat", label="x", description={"retriever": "bm25"}),
            PoolSystem(spec=str(run), label="run", description={"retriever": "run_file", "path": str(run),
                                                                 "sha256": sha})]
    flat = SystemSpec("bm25", {"fields": "flat"}, name="renamed")
    assert took_part(flat, pool) and not took_part(SystemSpec("bm25", {}), pool)
    assert took_part(RunFileSpec(run), pool) and not took_part(RunFileSpec(other), pool)
    assert took_part(FusionSpec([flat, RunFileSpec(run)], "rrf"), pool)
    assert not took_part(FusionSpec([flat, RunFileSpec(other)], "rrf"), pool)


@pytest.mark.parametrize("version", ["beirx.subset/1", "beirx.subset/2"])
def test_older_manifests_still_load(pair, version):
    _, subset = pair
    path = subset.root / "subset.json"
    data = json.loads(path.read_text())
    data["schema_version"] = version
    path.write_text(json.dumps(data))
    assert SubsetManifest.load(path).schema_version == "beirx.subset/3"


def test_identical_scores_give_a_paired_interval_of_exactly_one():
    """Two queries, three systems, the subset's per-query scores equal to the full set's. A draw holds q1 twice
    (p 1/4), q1 and q2 (1/2) or q2 twice (1/4): x's means 1, 0.5, 0; y's 0, 0.5, 1; z's 0.4. Against the fixed
    means (x = y = 0.5 > z) tau-b is 0, 1, 0 (the (1, 1) draw reproduces them; the others concord on one pair
    and discord on one) and rho likewise, so the unpaired interval is [0, 1] -- query noise the full set has too,
    which is why it equals the self-ceiling -- while the paired one, both sides drawn alike, is exactly [1, 1]."""
    q = ["q1", "q2"]
    per_query = [dict(zip(q, [1.0, 0.0])), dict(zip(q, [0.0, 1.0])), dict(zip(q, [0.4, 0.4]))]
    found = fidelity.intervals([0.5, 0.5, 0.4], per_query, per_query)
    assert found.tau_interval == found.ceiling_tau_interval == (0.0, 1.0)
    assert found.rho_interval == found.ceiling_rho_interval == (0.0, 1.0)
    assert found.paired_tau_interval == found.paired_rho_interval == (1.0, 1.0)
    assert found.paired_tau == found.paired_rho == 1.0
    unpaired_only = fidelity.intervals([0.5, 0.5, 0.4], per_query)
    assert unpaired_only.tau_interval == (0.0, 1.0) and unpaired_only.paired_tau_interval is None
    assert unpaired_only.ceiling_tau_interval is None


def test_paired_interval_covers_only_the_subsets_queries():
    """Six full-set queries, the subset keeps a, b, c with the full set's scores. Over all six the full set ranks
    y (0.55) > z (0.5) > x (0.45); over a, b, c (constant per system) x (0.9) > z > y. So tau against the full
    set is -1 and so is every unpaired and self-ceiling draw, while the paired interval, the full side over the
    same drawn subset queries, is exactly [1, 1]: the document cut changed nothing, the query sample did."""
    q = list("abcdef")
    full_pq = [dict(zip(q, [0.9, 0.9, 0.9, 0.0, 0.0, 0.0])), dict(zip(q, [0.1, 0.1, 0.1, 1.0, 1.0, 1.0])),
               dict(zip(q, [0.5] * 6))]
    sub_pq = [{k: v for k, v in scores.items() if k in "abc"} for scores in full_pq]
    full = [sum(s.values()) / 6 for s in full_pq]
    found = fidelity.intervals(full, sub_pq, full_pq)
    assert found.tau_interval == found.ceiling_tau_interval == (-1.0, -1.0)
    assert found.rho_interval == found.ceiling_rho_interval == (-1.0, -1.0)
    assert found.paired_tau_interval == found.paired_rho_interval == (1.0, 1.0) and found.paired_tau == 1.0
    check = compare(["x", "y", "z"], full, [0.9, 0.1, 0.5], metric="NDCG@10", split="test", threshold=0.9,
                    full_checksum="f", subset_checksum="s", per_query=list(zip(full_pq, sub_pq)))
    assert check.tau == -1.0 and check.paired_tau == 1.0 and check.paired_tau_interval == [1.0, 1.0]
    assert check.tau_interval == [-1.0, -1.0] and check.ceiling_tau_interval == [-1.0, -1.0]

