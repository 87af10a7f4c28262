"""Which translated rows cost retrieval: the damage table of beirx report (every quality signal against the per-query
drop, checked by hand and against scipy), the source-vs-translation ranking, damage.json, the review's damage
stratum on a toy sidecar, and the coverage line of review.json and the dataset card.

The toy: six queries with one or two judged documents each (q4 has d4 and d5), two systems whose per-query NDCG@10
drops from 1 on the source to the target's values below, and a quality method whose per-row score is written out
by hand, plus a flag-only method."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import write_beir
from scipy import stats

from beirx.artifacts.damage import Choice, DamageReport, RowSignal
from beirx.artifacts.manifest import TranslationManifest
from beirx.artifacts.quality import QualityReport
from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.report.build import build_report
from beirx.report.quality_drop import damaged, precision_recall_at_k
from beirx.review.sample import damage_record, damaging_rows, draw, quotas
from beirx.translate.quality.base import (JudgedRows, MethodResult, QualityContext, QualityMethod, Score,
                                          rows_to_score)
from beirx.translate.quality.run import run_quality

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

QIDS = ["q1", "q2", "q3", "q4", "q5", "q6"]
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 1), ("q4", "d4", 1), ("q4", "d5", 1), ("q5", "d6", 1),
         ("q6", "d7", 1)]
FIDELITY = {"q1": 0.3, "q2": 0.9, "q3": 0.8, "q4": 0.5, "q5": 0.95, "q6": 0.7,
            "d1": 0.9, "d2": 0.4, "d3": 0.9, "d4": 0.2, "d5": 0.8, "d6": 0.9, "d7": 0.9, "d8": 0.1}
FLAGGED = {"q4", "d2"}
TARGET = {"a": [0.2, 1.0, 1.0, 0.5, 1.0, 1.0], "b": [0.4, 1.0, 0.9, 0.5, 1.0, 1.0]}
DAMAGE = [0.7, 0.0, 0.05, 0.5, 0.0, 0.0]  # the drop (1 - target) averaged over a and b


class Fidelity(QualityMethod):
    """A score written out by hand per row (higher is better)."""

    name = "fidelity"
    scores = (Score("fidelity", "a hand-written score", scale=(0.0, 1.0)),)

    def describe(self, context):
        return {}

    def score(self, pairs, context):
        return MethodResult(values={"fidelity": {i: FIDELITY[i] for i in pairs.ids}}, scored=len(pairs))


class Never(QualityMethod):
    """A flag-only method that flags nothing: the same on every query, so no signal."""

    name = "never"
    flags = {"impossible": "never raised"}

    def describe(self, context):
        return {}

    def score(self, pairs, context):
        return MethodResult(scored=len(pairs))


class Flagger(QualityMethod):
    """Flags the rows in FLAGGED; no score."""

    name = "flagger"
    flags = {"suspicious": "a hand-picked row"}

    def describe(self, context):
        return {}

    def score(self, pairs, context):
        result = MethodResult(scored=len(pairs))
        for item in pairs.ids:
            if item in FLAGGED:
                result.flag(item, "suspicious")
        return result


def _results(folder, name, lang, dataset, per_query, system, qids=QIDS):
    doc = {"schema": "beirx.results/2", "created": "2026-11-23T12:00:00+00:00",
           "dataset": {"name": "toy", "source": str(dataset), "language": lang, "query_language": lang,
                       "split": "test", "checksum": f"sha256:{lang}",
                       "translated_from": "en" if lang == "es" else None},
           "query_dataset": None,
           "system": {"label": system, "tag": system, "kind": "retriever", "description": {"retriever": system}},
           "language_pack": {"code": lang}, "language_source": "flag",
           "evaluation": {"k_values": [10], "num_queries": len(qids), "queries_without_results": []},
           "metrics": {"NDCG@10": float(np.mean(per_query))},
           "per_query": {q: {"NDCG@10": v} for q, v in zip(qids, per_query)},
           "run_file": f"{name}.trec", "versions": {"beirx": "0.1.0"}, "timings_seconds": {}, "efficiency": {},
           "extra": {}}
    (folder / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")


@pytest.fixture
def toy(tmp_path):
    """The source and translated folders, the quality report beside the translation, the results."""
    corpus = [{"_id": f"d{i}", "title": "", "text": f"document {i}"} for i in range(1, 9)]
    queries = [{"_id": q, "text": f"query {q}"} for q in QIDS]
    source = write_beir(tmp_path / "en", corpus, queries, {"test": QRELS})
    translated = write_beir(tmp_path / "es", [{**d, "text": "documento " + d["_id"][1:]} for d in corpus],
                            [{**q, "text": "consulta " + q["_id"]} for q in queries], {"test": QRELS})
    from artifact_fixtures import translation_manifest

    translation_manifest(name="toy", src="en", tgt="es", translator={"backend": "apertium"}).save(
        TranslationManifest.path_in(translated))
    run_quality(BeirDataset(source), BeirDataset(translated), src_lang="en", tgt_lang="es",
                methods=[Fidelity(), Flagger(), Never()], show_progress=False)
    results = tmp_path / "results"
    results.mkdir()
    for system in ("a", "b"):
        _results(results, f"en-{system}", "en", source, [1.0] * 6, system)
        _results(results, f"es-{system}", "es", translated, TARGET[system], system)
    return source, translated, results


def test_damaged_and_precision_recall_at_k_by_hand():
    # 20 queries: k = 2; the second largest drop (0.5) is shared by two queries, so three are damaged
    drop = np.array([0.9, 0.5, 0.5, 0.1] + [0.0] * 16)
    assert damaged(drop).tolist() == [True, True, True] + [False] * 17
    assert damaged(np.array([0.0, 0.0, -0.2])).tolist() == [False, False, False]  # no positive drop: none
    truth = np.array([True, False, True, False, False, False])
    # the 2 worst: 0.9 (damaged) and one place among the three tied at 0.5, one of which is damaged: 1 + 1/3 hits
    badness = np.array([0.9, 0.5, 0.5, 0.5, 0.1, 0.0])
    precision, recall = precision_recall_at_k(badness, truth, 2)
    assert precision == pytest.approx((1 + 1 / 3) / 2) and recall == pytest.approx((1 + 1 / 3) / 2)
    assert precision_recall_at_k(np.array([3.0, 2.0, 1.0]), np.array([False, True, False]), 1) == (0.0, 0.0)
    assert precision_recall_at_k(np.array([3.0, 2.0, 1.0]), np.array([False, False, False]), 1) == (0.0, None)


def test_report_relates_every_signal_to_the_drop(toy, tmp_path, capsys):
    source, translated, results = toy
    assert main(["report", str(results), "--output", str(tmp_path / "out"), "--permutations", "100",
                 "--bootstrap", "500", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "toy en -> es: 1 damaged of 6 queries; best-predicting signal: fidelity (query)" in printed
    document = DamageReport.load(tmp_path / "out" / "damage.json")
    [analysis] = document.analyses
    assert (analysis.queries, analysis.k, analysis.damaged, analysis.systems) == (6, 1, ["q1"], ["a", "b"])
    assert analysis.documents and analysis.translated.checksum == BeirDataset(translated).checksum()
    by = {(e.signal.name, e.view): e for e in analysis.signals}
    assert sorted(by) == sorted((name, view) for name in ("fidelity", "flagger", "combined")
                                for view in ("query", "worst document", "mean document"))  # never: constant, out
    # the query view: the query's own score, negated (higher = worse), against the damage, as scipy has it
    own = [-FIDELITY[q] for q in QIDS]
    query = by[("fidelity", "query")].damage
    expected = stats.spearmanr(own, DAMAGE)
    assert query.spearman == pytest.approx(expected.statistic) and query.p_value == pytest.approx(expected.pvalue)
    assert query.ci_low <= query.spearman <= query.ci_high and query.queries == 6
    assert (query.k, query.damaged, query.precision, query.recall) == (1, 1, 1.0, 1.0)  # q1, the worst, is damaged
    # the documents: q4 meets d4 (0.2) and d5 (0.8): worst -0.2, mean -0.5; the others their one document
    worst = [-0.9, -0.4, -0.9, -0.2, -0.9, -0.9]
    mean = [-0.9, -0.4, -0.9, -0.5, -0.9, -0.9]
    assert by[("fidelity", "worst document")].damage.spearman == pytest.approx(stats.spearmanr(worst, DAMAGE).statistic)
    assert by[("fidelity", "mean document")].damage.spearman == pytest.approx(stats.spearmanr(mean, DAMAGE).statistic)
    assert by[("fidelity", "worst document")].damage.precision == 0.0  # its worst is q4, not damaged
    assert by[("fidelity", "mean document")].damage.precision == 0.0  # q2 (d2 0.4)
    # the flag count: q4 flagged on its own row, q2 through d2; constant elsewhere
    flags = by[("flagger", "query")].damage
    assert flags.spearman == pytest.approx(stats.spearmanr([0, 0, 0, 1, 0, 0], DAMAGE).statistic)
    assert flags.precision == 0.0 and by[("flagger", "worst document")].damage.precision == 0.0
    # per system: a's drop [0.8, 0, 0, 0.5, 0, 0], b's [0.6, 0, 0.1, 0.5, 0, 0]
    for system, target in TARGET.items():
        drop = [1 - t for t in target]
        mine = by[("fidelity", "query")].systems[system]
        assert mine.spearman == pytest.approx(stats.spearmanr(own, drop).statistic) and mine.precision == 1.0
    assert analysis.chosen == Choice(signal="fidelity", view="query", reason=analysis.chosen.reason)
    assert analysis.chosen.reason.startswith("the highest precision at the worst decile among the signals with a value "
                                             "for at least 90% of the 6 queries: 1.00 of its k=1 worst queries are "
                                             "damaged (a random order: 0.17)")
    assert analysis.chosen.reason.endswith("next: combined (query) 0.00; the best of 9 chosen on the queries it is "
                                           "measured on, which flatters it")  # q4, flagged, is the combined worst

    table = (tmp_path / "out" / "tables" / "damage.csv").read_text(encoding="utf-8").splitlines()
    assert table[0].startswith("Dataset,Target,Signal,Signal mark,View,Queries,Spearman ρ,ρ 95% low,ρ 95% high,P@k,"
                               "R@k,k,ρ a,P@k a,ρ b,P@k b")
    assert table[1].startswith("toy,es,(random order),,–,6,,,,0.16666666666666666,0.16666666666666666,1")
    assert table[2].startswith("toy,es,fidelity,*,query,6,")
    rows = (tmp_path / "out" / "damage_queries.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == ("Dataset,Split,Target,Query,drop a,drop b,damage,damaged,fidelity (query),fidelity (worst "
                       "document),fidelity (mean document),flagger (query),flagger (worst document),flagger (mean "
                       "document),never (query),never (worst document),never (mean document),combined (query),combined "
                       "(worst document),combined (mean document)")
    assert rows[4].startswith("toy,test,es,q4,0.5,0.5,0.5,0,-0.5,-0.2,-0.5,1.0,0.0,0.0,")
    assert (tmp_path / "out" / "figures" / "damage_signals.png").is_file()

    ranking = (tmp_path / "out" / "tables" / "ranking.md").read_text(encoding="utf-8")
    # a loses 0.2833, b 0.2: b ranks above a on the translation, the two tie on the source
    assert "| toy | es | a | 1.0000 | 0.7833 | +0.2167 |" in ranking
    assert "| toy | es | 2 systems |" in ranking


def test_ranking_tau_and_its_paired_interval(tmp_path):
    """Three systems whose order on the source (x > y > z) the translation keeps for x and swaps for y and z: tau-b
    = (2 - 1) / 3 = 1/3 (scipy), and the paired interval is seeded and brackets the draws' taus."""
    from beirx.report.build import build_report

    q = [f"q{i}" for i in range(8)]
    source = {"x": [0.9] * 8, "y": [0.7, 0.6] * 4, "z": [0.5] * 8}
    target = {"x": [0.8] * 8, "y": [0.3, 0.2] * 4, "z": [0.45, 0.4] * 4}
    results = tmp_path / "results"
    results.mkdir()
    folder = tmp_path / "es"
    folder.mkdir()
    for system in source:
        for lang, scores, dataset in (("en", source, tmp_path), ("es", target, folder)):
            _results(results, f"{lang}-{system}", lang, dataset, scores[system], system, q)
    report = build_report([results], tmp_path / "out", permutations=100, plots=False, bootstrap=300, seed=1)
    rows = report.tables["ranking"].rows
    assert [r[2].value for r in rows] == ["x", "y", "z", "3 systems"]
    assert [(r[8].value, r[9].value) for r in rows[:3]] == [(1, 1), (2, 3), (3, 2)]
    tau, p = rows[3][10].value, rows[3][11].value
    by_scipy = stats.kendalltau([0.9, 0.65, 0.5], [0.8, 0.25, 0.425])
    assert tau == pytest.approx(by_scipy.statistic) == pytest.approx(1 / 3) and p == pytest.approx(by_scipy.pvalue)
    low, high = rows[3][12].value, rows[3][13].value
    assert -1 <= low <= high <= 1
    again = build_report([results], tmp_path / "again", permutations=100, plots=False, bootstrap=300, seed=1)
    assert (again.tables["ranking"].rows[3][12].value, again.tables["ranking"].rows[3][13].value) == (low, high)
    # y's drop: 0.4 on every query, so its interval is the point
    assert (rows[1][5].value, rows[1][6].value, rows[1][7].value) == pytest.approx((0.4, 0.4, 0.4))
    assert "damage" not in report.tables  # no quality report: no damage table


def test_the_damage_stratum_and_what_the_review_covered(toy, tmp_path):
    source, translated, results = toy
    build_report([results], tmp_path / "out", permutations=100, plots=False, bootstrap=200)
    document = DamageReport.load(tmp_path / "out" / "damage.json")
    src, tgt = BeirDataset(source), BeirDataset(translated)
    quality = QualityReport.load(QualityReport.path_in(translated))
    analysis = document.analyses[0]
    items = draw(src, tgt, 10, seed=1, quality=quality, damage=analysis)
    assert quotas(10, True, True) == {"damage": 2, "worst": 2, "queries": 2, "documents": 2, "random": 2}
    # fidelity on the queries' own rows, worst first: q1 (0.3), q4 (0.5)
    assert [(i.field, i.id) for i in items if i.stratum == "damage"] == [("queries", "q1"), ("queries", "q4")]
    assert [i.stratum for i in items] == ["damage"] * 2 + ["worst"] * 2 + ["queries"] * 2 + ["documents"] * 2 + \
        ["random"] * 2
    assert draw(src, tgt, 10, seed=1, quality=quality, damage=analysis) == items  # seeded
    damaging = damaging_rows(tgt, analysis)
    assert damaging == {("queries", "q1"), ("corpus", "d1")}  # the damaged query and its judged document
    record = damage_record(tmp_path / "out" / "damage.json", analysis, damaging, items)
    assert (record["stratum"], record["stratum_damaging"], record["signal"], record["view"]) == (2, 1, "fidelity",
                                                                                                  "query")

    # the documents' view: each query's worst judged document, worst query first: q4 (d4 0.2), q2 (d2 0.4), then
    # q1, q3, q5, q6 tied at 0.9, by query ID: q1 (d1); d8 (0.1), judged for no query, is not a candidate
    docs_view = document.analyses[0]
    docs_view.chosen = Choice(signal="fidelity", view="worst document", reason="by hand")
    aimed = draw(src, tgt, 15, seed=1, quality=quality, damage=docs_view)
    assert [(i.field, i.id) for i in aimed if i.stratum == "damage"] == [("corpus", "d1"), ("corpus", "d2"),
                                                                         ("corpus", "d4")]  # (listed by ID)

    # review.json and the card state what share of the damaging rows was rated
    from beirx.publish.cards import _verification_section
    from beirx.publish.verification import verification
    from beirx.review.export import export_review
    from beirx.review.store import ReviewStore

    store = ReviewStore.in_folder(translated, create=True)
    store.create_sample(items, {"dataset": {"path": str(translated), "name": "toy", "lang": "es",
                                            "checksum": tgt.checksum()},
                                "source_lang": "en", "size": len(items), "seed": 1, "strata": {},
                                "quality_report": None, "damage": record})
    store.save_rating(1, "Ana", 2, 3, {}, None)  # q1: a damaging row, in the damage stratum
    store.save_rating(3, "Ana", 5, 5, {}, None)  # the worst stratum
    store.save_rating(5, "Ana", 5, 5, {}, None)  # the queries stratum
    store.close()
    review, _ = export_review(translated)
    aim = review.sample.damage
    assert (aim.damaging_rows, aim.sampled, aim.rated, aim.stratum, aim.stratum_damaging) == (2, 1, 1, 2, 1)
    assert aim.coverage == 0.5 and review.summary()["damaging rows rated (share)"] == 0.5
    assert review.acceptable.estimate.items == 1  # the damage and worst strata are not part of the estimate
    card = _verification_section(verification(translated, tgt.checksum(), True))
    assert ("The review rated 1 of the 2 rows of the 1 most-damaged test queries (50.0%) (their own rows and their "
            "judged relevant documents'); its `damage` stratum of 2 rows, 1 of them damaging, was drawn from the rows "
            "the quality signal `fidelity` (query) ranks worst: the highest precision") in card
    assert "| damaging rows rated (share) | 0.5 |" in card


def test_a_signal_reads_a_sidecar_row():
    row = {"field": "queries", "id": "q1", "flags": ["lost_numbers", "low_similarity"], "rank": 0.25,
           "scores": {"similarity": 0.8, "judge_mqm": None}}
    assert RowSignal(name="similarity", method="similarity", kind="score", score="similarity").badness(row) == -0.8
    assert RowSignal(name="x", method="m", kind="score", score="x", higher_is_better=False).badness(
        {**row, "scores": {"x": 3.0}}) == 3.0
    assert RowSignal(name="judge_mqm", method="judge", kind="score", score="judge_mqm").badness(row) is None
    assert RowSignal(name="comet", method="comet", kind="score", score="comet").badness(row) is None  # not scored
    assert RowSignal(name="checks", method="checks", kind="flags", flags=["lost_numbers"]).badness(row) == 1.0
    assert RowSignal(name="combined", method="all", kind="combined").badness(row) == 2 + 0.75
    assert RowSignal(name="combined", method="all", kind="combined").badness({**row, "flags": [], "rank": None}) == 0.0


def test_sampled_methods_can_score_the_rows_a_split_judges(tmp_path):
    """--judge-sample qrels:test (and the round trip's, COMET's): the judged queries and documents of that split,
    recorded as such in quality.json."""
    corpus = [{"_id": f"d{i}", "title": "", "text": f"document {i}"} for i in range(6)]
    queries = [{"_id": f"q{i}", "text": f"query {i}"} for i in range(5)]
    qrels = {"test": [("q1", "d2", 1), ("q3", "d4", 0)], "train": [("q0", "d0", 1)]}
    source = write_beir(tmp_path / "en", corpus, queries, qrels)
    translated = write_beir(tmp_path / "es", corpus, queries, qrels)
    assert rows_to_score("qrels:test") == JudgedRows("test") and str(JudgedRows("test")) == "qrels:test"
    assert rows_to_score("all") is None and rows_to_score("7") == 7
    from beirx.argtypes import OptionValueError

    with pytest.raises(OptionValueError, match="invalid split '../x'"):
        rows_to_score("qrels:../x")

    class Sampled(Fidelity):
        name = "sampled"
        scores = (Score("sampled", "1 for every scored row"),)
        whole_field = True

        def __init__(self, sample):
            self.sample = sample

        def score(self, pairs, context):
            picked = context.sample(pairs, self.sample, "sampled")
            return MethodResult(values={"sampled": {pairs.ids[i]: 1.0 for i in picked}}, scored=len(picked))

    report = run_quality(BeirDataset(source), BeirDataset(translated), tmp_path / "q", src_lang="en", tgt_lang="es",
                         methods=[Sampled(JudgedRows("test"))], show_progress=False)
    scored = {(row["field"], row["id"]) for row in report.rows() if "sampled" in row["scores"]}
    assert scored == {("queries", "q1"), ("queries", "q3"), ("corpus", "d2"), ("corpus", "d4")}
    info = QualityReport.load(tmp_path / "q" / "quality.json").methods["sampled"]
    assert info.sample is None and info.description["rows"] == "qrels:test"
    assert "the rows qrels:test judges" in (tmp_path / "q" / "quality.md").read_text(encoding="utf-8")
    context = QualityContext("en", "es", 0, False, lambda: None, BeirDataset(translated).root)
    from beirx.errors import BeirxError

    with pytest.raises(BeirxError, match=r"no qrels for split 'dev' \(available: test, train\)"):
        context.judged("dev")
    assert math.isclose(len(context.judged("train")["corpus"]), 1)


def test_beirx_review_draws_the_damage_stratum_and_export_states_the_coverage(toy, tmp_path, capsys):
    """The command: --damage with --quality draws the stratum, says what it holds, keeps the damaging rows; the
    export reports the coverage; without the quality report, or for another translation, it refuses first."""
    from review_fixtures import ReviewServer

    source, translated, results = toy
    build_report([results], tmp_path / "out", permutations=100, plots=False, bootstrap=200)
    damage, quality = tmp_path / "out" / "damage.json", QualityReport.path_in(translated)
    server = ReviewServer(translated, "--sample", "10", "--source", str(source), "--damage", str(damage),
                          "--quality", str(quality)).start()
    try:
        log = server.log.read_text(encoding="utf-8")
    finally:
        server.stop()
    assert "sample: 10 items (damage 2, worst 2, queries 2, documents 2, random 2), seed 0" in log
    assert ("damage stratum: 2 rows by fidelity (query), 1 of them damaging; the sample holds 2 of the 2 damaging rows "
            "(the 1 most-damaged test queries' rows)") in log  # d1 was drawn at random too
    assert main(["review", "export", str(translated)]) == 0
    review = json.loads((translated / "review" / "review.json").read_text(encoding="utf-8"))
    assert review["sample"]["damage"]["damaging_rows"] == 2 and review["sample"]["damage"]["rated"] == 0
    other = tmp_path / "other"
    import shutil

    shutil.copytree(translated, other, ignore=shutil.ignore_patterns("review"))
    (other / "queries.jsonl").write_text((other / "queries.jsonl").read_text().replace("consulta", "pregunta"))
    import socket

    with socket.socket() as taken:  # the refusal comes before the port: a port in use would be the wrong message
        taken.bind(("127.0.0.1", 0))
        port = str(taken.getsockname()[1])
        capsys.readouterr()
        assert main(["review", str(other), "--sample", "5", "--source", str(source), "--damage", str(damage),
                     "--quality", str(quality), "--port", port]) == 2
        assert f"{damage} has no analysis with a chosen signal for {other}" in capsys.readouterr().err
        assert main(["review", str(other), "--sample", "5", "--source", str(source), "--damage", str(damage),
                     "--quality", str(tmp_path / "none.json"), "--port", port]) == 2
        assert "needs the quality report its signals come from" in capsys.readouterr().err
    assert not (other / "review").exists()


def test_similarity_can_embed_only_the_judged_rows(tmp_path):
    """--similarity-sample qrels:test embeds the judged rows only (chunk by chunk: membership needs no whole field);
    a count is a seeded sample over the whole field."""
    from beirx.translate.quality.base import FieldPairs
    from beirx.translate.quality.embedding import EmbeddingSimilarity

    root = write_beir(tmp_path / "es", [{"_id": "d1", "title": "", "text": "x"}],
                      [{"_id": q, "text": q} for q in ("q1", "q2", "q3")], {"test": [("q2", "d1", 1)]})

    class Encoder:
        calls: list = []

        def similarities(self, sources, translations, role, label):
            self.calls.append(list(sources))
            return [0.5] * len(sources)

    encoder = Encoder()
    context = QualityContext("en", "es", 0, False, lambda: encoder, root)
    pairs = FieldPairs("queries", "query", ["q1", "q2", "q3"], ["a", "b", "c"], ["A", "B", "C"])
    method = EmbeddingSimilarity(JudgedRows("test"))
    assert method.score(pairs, context).values == {"similarity": {"q2": 0.5}} and encoder.calls == [["b"]]
    assert not method.whole_field and not EmbeddingSimilarity().whole_field and EmbeddingSimilarity(2).whole_field
    assert len(EmbeddingSimilarity(2).score(pairs, context).values["similarity"]) == 2


def test_the_choice_of_signal():
    """The highest precision among the signals covering 90% of the queries; ties by the interval's lower bound; a
    weak interval said so; none without damaged queries."""
    from beirx.artifacts.damage import DamageAnalysis, Relation, SignalEvidence
    from beirx.artifacts.manifest import DatasetSide
    from beirx.report.quality_drop import choose

    def evidence(name, queries, precision, low, rho=0.2):
        relation = Relation(queries=queries, spearman=rho, p_value=0.1, ci_low=low, ci_high=0.5, k=10, damaged=10,
                            precision=precision, recall=precision)
        return SignalEvidence(signal=RowSignal(name=name, method=name, kind="combined"), view="query",
                              damage=relation, systems={})

    def analysis(signals):
        return DamageAnalysis(family="f", split="test", metric="NDCG@10", source_pair="en", target_pair="es",
                              translated=DatasetSide(path="x", name="f", lang="es", checksum="c"), quality_report=None,
                              documents=True, systems=["a"], queries=100, k=10, damaged=["q"] * 10, rule="r",
                              resamples=10, seed=0, signals=signals, chosen=None)

    found = choose(analysis([evidence("sampled", 50, 0.9, 0.3), evidence("a", 100, 0.4, -0.1),
                             evidence("b", 100, 0.4, 0.05), evidence("c", 95, 0.3, 0.2)]))
    assert found.signal == "b" and "next: a (query) 0.40; the best of 3 chosen" in found.reason  # sampled: 50 < 90
    assert "weak evidence" not in found.reason
    assert "weak evidence: its Spearman interval does not exclude 0" in choose(
        analysis([evidence("a", 100, 0.4, -0.1)])).reason
    nothing = evidence("a", 100, 0.0, 0.1)
    nothing.damage.damaged = 0
    assert choose(analysis([nothing])) is None


def test_a_further_quality_report_adds_its_signals(toy, tmp_path):
    """A second quality report of the same translation whose method ran differently (another model): its scores are
    signals too, both named by their model, read from their own sidecars; a review aimed by one reads its report."""
    source, translated, results = toy

    class Other(Fidelity):
        def describe(self, context):
            return {"model": "/models/other-model"}

        def score(self, pairs, context):
            return MethodResult(values={"fidelity": {i: 1 - FIDELITY[i] for i in pairs.ids}}, scored=len(pairs))

    run_quality(BeirDataset(source), BeirDataset(translated), tmp_path / "other", src_lang="en", tgt_lang="es",
                methods=[Other()], show_progress=False)
    own = QualityReport.path_in(translated)
    report = build_report([results], tmp_path / "out", permutations=100, plots=False, bootstrap=200,
                          quality=[str(own), str(tmp_path / "other" / "quality.json")])
    [analysis] = report.damage
    names = {e.signal.name for e in analysis.signals}
    assert {"fidelity [quality]", "fidelity [other-model]"} <= names and "fidelity" not in names
    other = analysis.evidence("fidelity [other-model]", "query")
    assert other.signal.report == str(tmp_path / "other" / "quality.json")
    expected = stats.spearmanr([-(1 - FIDELITY[q]) for q in QIDS], DAMAGE).statistic
    assert other.damage.spearman == pytest.approx(expected)  # its own rows: 1 - fidelity
    assert sum(1 for e in analysis.signals if e.signal.name == "combined" and e.view == "query") == 1
    analysis.chosen = Choice(signal="fidelity [other-model]", view="query", reason="by hand")
    items = draw(BeirDataset(source), BeirDataset(translated), 10, seed=1, quality=QualityReport.load(own),
                 damage=analysis)
    # its worst rows: the lowest 1 - fidelity, q5 (0.05) and q2 (0.1)
    assert [(i.field, i.id) for i in items if i.stratum == "damage"] == [("queries", "q2"), ("queries", "q5")]
