"""beirx report: tables from hand-made results documents (every cell asserted), the statistics against
scipy and brute force, Holm against a hand computation, and the Markdown/LaTeX/CSV renderings."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from beirx.cli import main
from beirx.errors import DataError
from beirx.report.build import build_report
from beirx.report.load import load_results
from beirx.report.render.latex import table_latex
from beirx.report.render.markdown import table_markdown
from beirx.significance import bootstrap_ci, compare, holm, randomization_test, t_test
from report_docs import SCORES, SIMILARITY, document, translated_folder, write_all

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture
def report(tmp_path):
    translated = translated_folder(tmp_path)
    efficiency = {"bm25": {"device": "cpu", "index_seconds": 1.5, "queries_per_second": 500.0,
                           "latency_ms_p50": 2.0, "latency_ms_p95": 5.0, "index_bytes": 1048576,
                           "peak_rss_bytes": 2 * 1024 ** 3}}
    write_all(tmp_path / "results", translated, efficiency)
    return build_report([tmp_path / "results"], tmp_path / "out", permutations=1000, plots=False)


def texts(row):
    return [c.text() + c.mark for c in row]


def test_languages_table_every_cell(report):
    table = report.tables["languages"]
    assert table.columns == ["Dataset", "System", "Source", "Target",
                             "NDCG@10 source", "NDCG@10 target", "NDCG@10 Δ", "NDCG@10 retained",
                             "Recall@100 source", "Recall@100 target", "Recall@100 Δ", "Recall@100 retained"]
    assert [texts(r) for r in table.rows] == [
        ["toy", "bm25", "en", "pl", "0.5000", "0.3125", "-0.1875", "62.5%", "0.7500", "0.6250", "-0.1250", "83.3%"],
        ["toy", "bm25", "en", "pl2en", "0.5000", "0.3750", "-0.1250", "75.0%", "0.7500", "0.7500", "+0.0000",
         "100.0%"],
        ["toy", "dense", "en", "pl", "0.7500", "0.6250", "-0.1250", "83.3%", "1.0000", "0.8750", "-0.1250", "87.5%"],
        ["toy", "dense", "en", "pl2en", "0.7500", "0.6250", "-0.1250", "83.3%", "1.0000", "0.8750", "-0.1250",
         "87.5%"],
        ["Average (1)", "bm25", "en", "pl", "0.5000", "0.3125", "-0.1875", "62.5%", "0.7500", "0.6250", "-0.1250",
         "83.3%"],
        ["Average (1)", "bm25", "en", "pl2en", "0.5000", "0.3750", "-0.1250", "75.0%", "0.7500", "0.7500",
         "+0.0000", "100.0%"],
        ["Average (1)", "dense", "en", "pl", "0.7500", "0.6250", "-0.1250", "83.3%", "1.0000", "0.8750", "-0.1250",
         "87.5%"],
        ["Average (1)", "dense", "en", "pl2en", "0.7500", "0.6250", "-0.1250", "83.3%", "1.0000", "0.8750",
         "-0.1250", "87.5%"],
    ]
    first = table.rows[0]
    assert first[6].value == pytest.approx(-0.1875, abs=1e-15)
    assert first[7].value == pytest.approx(0.625, abs=1e-15)
    assert first[11].value == pytest.approx(0.625 / 0.75, abs=1e-15)
    assert "Holm-Bonferroni" in table.caption and "dropped and counted" in table.caption


def test_systems_table_every_cell(report):
    table = report.tables["systems"]
    assert table.columns == ["System", "toy [en]", "toy [en] Δ", "toy [pl]", "toy [pl] Δ", "toy [pl2en]",
                             "toy [pl2en] Δ", "Average", "Wins vs bm25"]
    assert [texts(r) for r in table.rows] == [
        ["bm25 (baseline)", "0.5000", "–", "0.3125", "–", "0.3750", "–", "0.3958", "–"],
        ["dense", "0.7500", "+0.2500", "0.6250", "+0.3125", "0.6250", "+0.2500", "0.6667", "3/3"],
    ]
    assert [c.bold for c in table.rows[1][1:7:2]] == [True, True, True]
    assert not any(c.bold for c in table.rows[0])
    assert table.rows[1][7].value == pytest.approx((0.75 + 0.625 + 0.625) / 3, abs=1e-15)
    # n = 4: the exact randomization test cannot reach 0.05, so nothing is marked.
    comps = {c.label: c for c in _comparisons(report, "Systems")}
    assert comps["toy [en]: dense vs bm25"].perm_p == pytest.approx(0.5, abs=1e-12)  # 8 of 16 sign flips


def _comparisons(report, family):
    table = report.tables["significance"]
    out = []
    for row in table.rows:
        if row[0].value == family:
            out.append(type("C", (), {"label": row[1].value, "perm_p": row[10].value, "t_p": row[8].value}))
    return out


def test_significance_table_matches_scipy(report):
    rows = {r[1].value + " " + r[2].value: r for r in report.tables["significance"].rows}
    row = rows["toy/bm25: pl vs en NDCG@10"]
    a, b = SCORES[("bm25", "en")][0], SCORES[("bm25", "pl")][0]
    assert row[3].value == 4 and row[4].value == 0
    assert row[7].value == pytest.approx(np.mean(b) - np.mean(a), abs=1e-15)
    assert row[8].value == pytest.approx(stats.ttest_rel(b, a).pvalue, abs=1e-9)


def test_efficiency_table_present_and_absent(report):
    table = report.tables["efficiency"]
    assert table.columns[:3] == ["Dataset", "System", "Device"]
    by = {(r[0].value, r[1].value): texts(r) for r in table.rows}
    assert by[("toy [en]", "bm25")] == ["toy [en]", "bm25", "cpu", "1.5", "–", "–", "500.0", "2.00", "5.00",
                                         "1.0 MiB", "2.0 GiB"]
    assert by[("toy [en]", "dense")][2:] == ["–"] * 9


def test_translation_and_quality_tables(report, tmp_path):
    translation = report.tables["translation"]
    assert texts(translation.rows[0])[:3] == ["toy", "en → pl", "apertium eng-pol"]
    assert translation.rows[0][3].value == 1234 and translation.rows[0][7].value == 0.25  # spent, not estimated
    assert texts(translation.rows[0])[4:7] == ["40", "35", "2.5"]
    quality = report.tables["quality"]
    row = next(r for r in quality.rows if r[1].value == "bm25" and r[2].value == "pl")
    src, tgt = SCORES[("bm25", "en")][0], SCORES[("bm25", "pl")][0]
    sims = [SIMILARITY[q] for q in ["q1", "q2", "q3", "q4"]]
    drop = [s - t for s, t in zip(src, tgt)]
    assert row[3].value == 4
    assert row[4].value == pytest.approx(np.mean(sims), abs=1e-12)
    expected = stats.spearmanr(sims, drop)
    assert row[5].value == pytest.approx(expected.statistic, abs=1e-12)
    assert row[6].value == pytest.approx(expected.pvalue, abs=1e-12)
    assert row[7].value == pytest.approx(stats.pearsonr(sims, drop).statistic, abs=1e-12)
    # worst-translated quarter: q2 (0.6): 0.5 -> 0.5; best: q1 (0.95): 1.0 -> 0.5
    assert [c.value for c in row[9:15]] == [0.5, 0.5, 1.0, 1.0, 0.5, 0.5]


def test_no_per_query_similarity_means_no_quality_table(tmp_path):
    translated = translated_folder(tmp_path, per_query_similarity=False)
    write_all(tmp_path / "results", translated)
    report = build_report([tmp_path / "results"], tmp_path / "out", permutations=100, plots=False)
    assert "quality" not in report.tables and "translation" in report.tables


def test_manifests_and_quality_reports_from_before_the_versioned_format_are_read(tmp_path):
    import shutil

    before = Path(__file__).parent / "data" / "before_v2"
    folder = tmp_path / "toy-es"
    (folder / "quality").mkdir(parents=True)
    shutil.copy(before / "translation.json", folder / "translation.json")
    shutil.copy(before / "quality.json", folder / "quality" / "quality.json")
    write_all(tmp_path / "results", folder)
    report = build_report([tmp_path / "results"], tmp_path / "out", permutations=100, plots=False)
    assert texts(report.tables["translation"].rows[0]) == ["tiny", "en → es", "apertium eng-spa", "–", "10", "10",
                                                          "0.4", "–"]
    assert "quality" not in report.tables  # no per-query similarity in files of that age


def test_t_test_equals_scipy():
    rng = np.random.default_rng(7)
    a, b = rng.random(50), rng.random(50)
    assert t_test(a, b) == pytest.approx(stats.ttest_rel(b, a).pvalue, abs=1e-9)
    assert t_test(a, a.copy()) == 1.0


def _brute_force(a: np.ndarray, b: np.ndarray) -> float:
    """Exact two-sided sign-flip test: the share of all 2^n flips with |mean difference| >= observed."""
    d = b - a
    observed = abs(d.mean())
    hits = sum(abs((d * np.array(signs)).mean()) >= observed - 1e-12
               for signs in itertools.product([1, -1], repeat=len(d)))
    return hits / 2 ** len(d)


def test_randomization_test_exact_and_seeded():
    a = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.05, 0.9, 0.6, 0.3, 0.45, 0.7])
    b = np.array([0.3, 0.5, 0.3, 0.95, 0.45, 0.1, 0.85, 0.9, 0.4, 0.65, 0.75])
    assert randomization_test(a, b, permutations=10_000) == pytest.approx(_brute_force(a, b), abs=1e-12)
    rng = np.random.default_rng(3)
    x, y = rng.random(200), rng.random(200) + 0.05
    first = randomization_test(x, y, permutations=2000, seed=11)
    assert randomization_test(x, y, permutations=2000, seed=11) == first
    assert randomization_test(x, y, permutations=2000, seed=12) != first


def test_holm_against_hand_computation():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    adjusted = holm([0.02, float("nan"), 0.01])
    assert adjusted[0] == pytest.approx(0.02) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.02)


def test_bootstrap_interval_is_seeded_and_covers_the_difference():
    rng = np.random.default_rng(5)
    a, b = rng.random(100), rng.random(100) + 0.1
    low, high = bootstrap_ci(a, b, 2000, seed=1)
    assert (low, high) == bootstrap_ci(a, b, 2000, seed=1)
    assert low < (b - a).mean() < high


def test_pairing_drops_and_counts_one_sided_queries():
    comparison = compare("x", "NDCG@10", {"q1": 1.0, "q2": 0.0, "q3": 0.5}, {"q2": 0.5, "q3": 0.5, "q9": 1.0},
                         permutations=100)
    assert (comparison.n, comparison.dropped) == (2, 2)
    assert comparison.difference == pytest.approx(0.25)


def test_significant_differences_are_marked(tmp_path):
    """Twelve queries where the second system wins on every one: exact p = 2/4096, marked after Holm."""
    folder = tmp_path / "results"
    folder.mkdir()
    base = [0.1, 0.2, 0.15, 0.3, 0.05, 0.4, 0.25, 0.1, 0.2, 0.35, 0.3, 0.15]
    for label, scores in (("bm25", base), ("better", [s + 0.3 + 0.01 * i for i, s in enumerate(base)])):
        doc = document("bm25", "en")
        doc["system"].update(label=label, tag=label)
        doc["metrics"] = {"NDCG@10": float(np.mean(scores))}
        doc["per_query"] = {f"q{i}": {"NDCG@10": s} for i, s in enumerate(scores)}
        (folder / f"{label}.json").write_text(json.dumps(doc))
    report = build_report([folder], tmp_path / "out", permutations=10_000, plots=False)
    row = report.tables["systems"].rows[1]
    assert row[2].mark == "†"
    sig = report.tables["significance"].rows[0]
    assert sig[10].value == pytest.approx(2 / 4096, abs=1e-12)


def test_results_v1_files_load_upgraded(tmp_path):
    """A file written before beirx.results/2 (tests/data/before_v2): label, pair and efficiency from the upgrade."""
    before = Path(__file__).parent / "data" / "before_v2" / "results_bm25.json"
    (row,) = load_results([before])
    assert (row.family, row.pair, row.split, row.label, row.kind) == ("tiny", "en", "test", "bm25", "retriever")
    assert row.tag == "bm25-b_0.75-fields_multifield-k1_1.2"
    assert row.efficiency == {"index_seconds": 0.2715, "search_seconds": 0.0021, "num_queries": 3,
                              "queries_per_second": round(3 / 0.0021, 3)}
    assert row.metric("NDCG@10") == json.loads(before.read_text())["metrics"]["NDCG@10"]


def test_bad_inputs_name_the_file(tmp_path):
    doc = document("bm25", "en")
    del doc["dataset"]["split"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=r"bad\.json: field 'dataset.split': missing"):
        load_results([bad])
    with pytest.raises(DataError, match=r"bad\.json: field 'dataset.split': missing"):
        load_results([tmp_path])  # a folder skips other JSON files, but not a broken results document
    other = tmp_path / "other" / "summary.json"
    other.parent.mkdir()
    other.write_text("[]")
    with pytest.raises(DataError, match=r"summary\.json: expected a JSON object"):
        load_results([other])
    with pytest.raises(DataError, match="no beirx results documents in this folder"):
        load_results([other.parent])
    assert main(["report", str(bad), "--output", str(tmp_path / "out")]) == 2


def test_clashing_labels_fall_back_to_tags(tmp_path):
    for tag in ("bm25flat", "bm25mf"):
        doc = document("bm25", "en")
        doc["system"]["tag"] = tag
        (tmp_path / f"{tag}.json").write_text(json.dumps(doc))
    assert sorted(r.label for r in load_results([tmp_path])) == ["bm25flat", "bm25mf"]


def test_duplicate_cells_are_refused(tmp_path):
    paths = write_all(tmp_path / "a")
    with pytest.raises(DataError, match="give each system a distinct name"):
        load_results([paths[0], tmp_path / "a"])


def _markdown_tables(text: str) -> list[list[str]]:
    blocks, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


def test_markdown_tables_are_well_formed(report, tmp_path):
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    blocks = _markdown_tables(text)
    assert len(blocks) == len(report.tables)
    for block in blocks:
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in block}
        assert len(widths) == 1, block  # every row has the header's number of cells
        assert re.fullmatch(r"\|(-{3}:?\|)+", block[1])
        assert all(line.endswith("|") for line in block)
    assert table_markdown(report.tables["systems"]).splitlines()[0] == (
        "| System | toy [en] | toy [en] Δ | toy [pl] | toy [pl] Δ | toy [pl2en] | toy [pl2en] Δ | Average | "
        "Wins vs bm25 |")


def test_latex_is_balanced_booktabs(report, tmp_path):
    document = (tmp_path / "out" / "report.tex").read_text(encoding="utf-8")
    stack = []
    for kind, name in re.findall(r"\\(begin|end)\{(\w+)\}", document):
        if kind == "begin":
            stack.append(name)
        else:
            assert stack and stack.pop() == name
    assert stack == []
    assert document.count("{") == document.count("}") + document.count(r"\{") - document.count(r"\}")
    for table in report.tables.values():
        tex = table_latex(table)
        assert tex.count(r"\toprule") == tex.count(r"\midrule") == tex.count(r"\bottomrule") == 1
        body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0].strip().splitlines()
        assert len(body) == len(table.rows)
        for line in body:
            assert len(re.findall(r"(?<!\\)&", line)) == len(table.columns) - 1
            assert line.endswith(r"\\")
    assert r"$-$0.1875" not in document and "-0.1875" in document  # ASCII minus stays as typed
    assert "toy [pl2en] $\\Delta$" in document


def test_csv_has_raw_values_and_marks(report, tmp_path):
    rows = list(csv.reader(io.StringIO((tmp_path / "out" / "tables" / "languages.csv").read_text())))
    assert rows[0][:6] == ["Dataset", "System", "Source", "Target", "NDCG@10 source", "NDCG@10 target"]
    assert float(rows[1][5]) == 0.3125 and float(rows[1][7]) == 0.625
    assert len(rows) == 1 + len(report.tables["languages"].rows)


def test_cli_writes_every_format(tmp_path, capsys):
    write_all(tmp_path / "results")
    out = tmp_path / "rep"
    assert main(["report", str(tmp_path / "results"), "--output", str(out), "--permutations", "200",
                 "--metric", "Recall@100"]) == 0
    printed = capsys.readouterr().out
    assert "| dense | **1.0000** | +0.2500 |" in printed
    for name in ("report.md", "report.tex", "report.html", "tables/systems.csv", "tables/languages.tex",
                 "figures/systems_heatmap.png", "figures/systems_heatmap.svg", "figures/languages_bars.svg",
                 "figures/per_query_scatter.png"):
        assert (out / name).is_file(), name


def test_report_never_imports_evaluate_or_translate():
    """report/ reads artifacts; it never reaches into the evaluate or translate stages (not even lazily)."""
    import ast
    from pathlib import Path

    import beirx.report

    package = Path(beirx.report.__file__).parent
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            assert not [n for n in names if n.startswith(("beirx.evaluate", "beirx.translate"))], path


def test_bootstrap_intervals_in_the_significance_table(tmp_path):
    write_all(tmp_path / "results")
    report = build_report([tmp_path / "results"], tmp_path / "out", permutations=100, bootstrap=500, plots=False)
    table = report.tables["significance"]
    assert table.columns[-2:] == ["95% CI low", "95% CI high"]
    for row in table.rows:
        low, diff, high = row[12].value, row[7].value, row[13].value
        assert low <= diff <= high
    assert "paired BCa bootstrap, 500 resamples" in table.caption
