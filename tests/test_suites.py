"""``beirx suite build``: subset -> check -> translate -> quality -> publish -> MTEB benchmark from one TOML file;
a rerun skips what is done; a build killed mid-translation resumes to the same bytes; the written MTEB
Benchmark loads and runs with mteb (offline, local tasks), and its results table is written."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, write_beir
from test_subsets import DOCS, QRELS, QUERIES

from beirx.artifacts import SubsetManifest, SuiteState
from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.errors import DataError
from beirx.suites.orchestrate import build_suite
from beirx.suites.config import load_suite
from beirx.translate.backends import TRANSLATORS
from extras import needs

TRANSLATORS.register("word-reverser", "suite_helpers:WordReverser")
TRANSLATORS.register("paid-word-reverser", "suite_helpers:PaidWordReverser")


def _word(i: int) -> str:
    return "".join(chr(ord("a") + int(c)) for c in str(i))  # 12 -> "bc": every text its own segment to translate


WORD_DOCS = [{"_id": d["_id"], "title": f"title {_word(i)}", "text": f"document {_word(i)} about it"}
             for i, d in enumerate(DOCS)]
WORD_QUERIES = [{"_id": q["_id"], "text": f"topic {_word(i)}" if q["text"].strip() else ""} for i, q in enumerate(QUERIES)]


def _suite(tmp_path: Path, output: str, extra: str = "") -> Path:
    if not (tmp_path / "toy").is_dir():
        write_beir(tmp_path / "toy", WORD_DOCS, WORD_QUERIES, QRELS)
    path = tmp_path / f"{output}.toml"
    path.write_text(f'''name = "Toy-ES (beirx)"
languages = ["es"]
output = "{output}"

[[datasets]]
name = "toy"

[subset]
queries = 6
pool = ["bm25:fields=flat"]
depth = 3
max_docs = 20
seed = 1
check = ["bm25:fields=flat", "bm25"]

[translate]
translator = "word-reverser"
memory = "memory.sqlite"
batch_size = 4
cost = true
{extra}''', encoding="utf-8")
    return path


def _reversed(text: str) -> str:
    return " ".join(reversed(text.split()))


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    """A seeded random-weight sentence-transformers model: the quality encoder and the model MTEB evaluates."""
    needs("sentence_transformers", "neural")
    from hardening_helpers import build_tiny_st

    return build_tiny_st(tmp_path_factory.mktemp("models") / "tiny-st")


def test_suite_builds_end_to_end_then_skips_everything(tmp_path, tiny_st, caplog):
    needs("mteb", "mteb")
    from beirx.publish.mteb_benchmark import load_benchmark

    path = _suite(tmp_path, "out", f'''
[quality]
steps = ["validate", "report"]
encoder = "{tiny_st}"

[mteb]
evaluate = ["{tiny_st}"]
batch_size = 8
''')
    builder = build_suite(load_suite(path), show_progress=False)
    out = tmp_path / "out"
    assert [s.step for s in builder.ran] == ["subset", "check", "translate", "quality", "publish", "benchmark"]
    subset = BeirDataset(out / "subsets" / "toy")
    check = SubsetManifest.find(subset.root).ranking_check
    assert subset.name == "toy-subset" and [s.label for s in check.systems] == ["bm25", "bm25 fields=flat"]
    translated = BeirDataset(out / "translated" / "toy-es")
    assert translated.name == "toy-subset" and translated.translation.target_language == "es"
    assert {d.id: d.text for d in translated.iter_corpus()} == {d.id: _reversed(d.text) for d in subset.iter_corpus()}
    assert translated.qrels("test") == subset.qrels("test")
    translate = builder.ran[2]
    assert translate.details["translated"] == translate.details["segments_unique"] > 0
    assert translate.details["share_of_full"]["segments_unique"] == round((20 + 20 + 6) / (40 + 40 + 10), 6)
    manifest = SubsetManifest.find(subset.root)
    # the cost beside the fidelity: the subset's share of the characters, and the check's figures
    assert builder.ran[0].details["characters_share"] == round(manifest.counts.characters
                                                               / manifest.counts.source_characters, 6)
    assert builder.ran[1].details["rho"] == check.rho and builder.ran[1].details["reading"] == check.reading
    assert builder.ran[1].details["not_pooled"] == ["bm25"] and builder.ran[1].details["tau_interval"] == check.tau_interval
    assert builder.ran[1].details["expected_pool_bias"] == check.pool_bias.expected is not None
    assert builder.ran[1].details["discriminative_power_retained"] == check.discriminative_power.retained
    assert (out / "translated" / "toy-es" / "quality" / "quality.json").is_file()
    assert builder.ran[3].details["validate"] == "IDs and qrels identical"
    card = (out / "publish" / "toy-es" / "README.md").read_text(encoding="utf-8")
    assert "A beirx subset of toy (test): 6 of 8 judged queries (seed 1)" in card
    benchmark = load_benchmark(out / "mteb")
    assert benchmark.name == "Toy-ES (beirx)" and [t.metadata.name for t in benchmark.tasks] == ["toy-subset-ES"]
    assert benchmark.tasks[0].metadata.eval_langs == ["spa-Latn"] and "BEIR" in benchmark.citation
    assert "A beirx subset of toy" in benchmark.tasks[0].metadata.description
    table = (out / "mteb" / "results.md").read_text(encoding="utf-8")
    [row] = [line for line in table.splitlines() if line.startswith("| tiny-st")]
    [result] = list((out / "mteb" / "results" / "results").glob("tiny-st/*/toy-subset-ES.json"))
    score = json.loads(result.read_text())["scores"]["test"][0]["main_score"]
    assert row == f"| tiny-st | {score:.4f} | {score:.4f} |"
    # beirx's own systems join the results table: results on the translated dataset, converted to MTEB's format
    assert main(["eval", "--dataset", str(translated.root), "--retriever", "bm25", "--name", "BM25",
                 "--output", str(tmp_path / "eval")]) == 0
    assert main(["mteb", "benchmark", "--suite", str(path), "--beirx-results", str(tmp_path / "eval")]) == 0
    bm25 = json.loads(next((tmp_path / "eval").glob("*.json")).read_text())["metrics"]["NDCG@10"]
    table = (out / "mteb" / "results.md").read_text(encoding="utf-8")
    assert f"| beirx/BM25 | {bm25:.4f} | {bm25:.4f} |" in table and row in table
    again = build_suite(load_suite(path), show_progress=False)
    assert again.ran == [] and [s.step for s in again.skipped] == [s.step for s in builder.ran]
    assert main(["suite", "status", str(path)]) == 0
    # a quality sidecar damaged after its step is no result: the step runs again, saying which file and line
    sidecar = out / "translated" / "toy-es" / "quality" / "rows.jsonl"
    whole = sidecar.read_text(encoding="utf-8")
    sidecar.write_text("".join(whole.splitlines(keepends=True)[:3]), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        healed = build_suite(load_suite(path), show_progress=False)
    assert [s.step for s in healed.ran] == ["quality"] and sidecar.read_text(encoding="utf-8") == whole
    assert f"{sidecar}:3: the queries rows end after 3 of the 6 quality.json records" in caplog.text
    assert "the quality step runs again" in caplog.text


def _hang_build(path: Path, mark: Path, home: Path) -> subprocess.Popen:
    code = ("from beirx.translate.backends import TRANSLATORS\n"
            "TRANSLATORS.register('word-reverser', 'suite_helpers:WordReverser')\n"
            "from beirx.cli import main\n"
            f"raise SystemExit(main(['suite', 'build', {str(path)!r}, '--no-progress']))\n")
    env = {**os.environ, "BEIRX_TEST_HANG_AFTER": "2", "BEIRX_TEST_HANG_MARK": str(mark), "BEIRX_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    return subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def test_a_killed_build_resumes_to_the_same_bytes(tmp_path, beirx_home):
    needs("mteb", "mteb")  # the build publishes (parquet) and makes an MTEB benchmark
    needs("pyarrow", "hub")
    killed, clean = _suite(tmp_path, "killed"), _suite(tmp_path, "clean")
    mark = tmp_path / "hanging"
    process = _hang_build(killed, mark, beirx_home)
    deadline = time.time() + 180
    while not mark.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert mark.exists(), process.stderr.read().decode()[-2000:] if process.poll() is not None else "timeout"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(30)
    state = SuiteState.load(tmp_path / "killed" / "suite.json")
    assert [s.step for s in state.steps] == ["subset", "check"]  # killed while translating
    assert not (tmp_path / "killed" / "translated" / "toy-es" / "corpus.jsonl").exists()
    subset_done = state.steps[0].finished

    resumed = build_suite(load_suite(killed), show_progress=False)
    assert [s.step for s in resumed.skipped] == ["subset", "check"] and resumed.skipped[0].finished == subset_done
    assert [s.step for s in resumed.ran] == ["translate", "quality", "publish", "benchmark"]
    assert resumed.ran[0].details["from_memory"] == 2 * 4  # the two batches committed before the kill
    fresh = build_suite(load_suite(clean), show_progress=False)
    assert fresh.ran[2].details["from_memory"] == 0
    for folder in ("subsets/toy", "translated/toy-es"):
        for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
            assert (tmp_path / "killed" / folder / name).read_bytes() == (tmp_path / "clean" / folder / name).read_bytes()
    assert {s.step: s.output_checksum for s in resumed.skipped + resumed.ran} == \
        {s.step: s.output_checksum for s in fresh.ran}


def test_a_paid_translator_needs_a_cap_and_stays_under_it(tmp_path):
    needs("mteb", "mteb")  # the build publishes (parquet) and makes an MTEB benchmark
    needs("pyarrow", "hub")
    from beirx.errors import BeirxError

    path = _suite(tmp_path, "paid")
    path.write_text(path.read_text().replace('"word-reverser"', '"paid-word-reverser"'), encoding="utf-8")
    with pytest.raises(BeirxError, match=r"paid.toml: paid-word-reverser is a paid service: set max_cost"):
        build_suite(load_suite(path), show_progress=False)
    path.write_text(path.read_text() + "max_cost = 0.01\n", encoding="utf-8")
    with pytest.raises(BeirxError, match=r"exceeds --max-cost 0.01; nothing was sent"):
        build_suite(load_suite(path), show_progress=False)
    assert not (tmp_path / "paid" / "translated").exists()
    path.write_text(path.read_text().replace("max_cost = 0.01", "max_cost = 100.0"), encoding="utf-8")
    build_suite(load_suite(path), show_progress=False)
    cost = BeirDataset(tmp_path / "paid" / "translated" / "toy-es").translation.cost
    assert cost["max_cost_usd"] == 100.0 and cost["characters_sent"] == cost["characters_estimated"] > 0
    assert cost["spent_usd"] == round(cost["characters_sent"] / 1000, 2)


def test_suite_file_errors_name_the_file(tmp_path, capsys):
    path = _suite(tmp_path, "bad", "\n[quality]\nsteps = ['report']\n")
    with pytest.raises(DataError, match=r"bad.toml: \[quality\] the 'report' step needs 'encoder'"):
        load_suite(path)
    path.write_text(path.read_text().replace('[subset]', '[subset]\nqueries = 0'), encoding="utf-8")
    assert main(["suite", "build", str(path)]) == 2
    assert "bad.toml" in capsys.readouterr().err
    (tmp_path / "typo.toml").write_text('name = "x"\nlanguages = ["es"]\ndatasets = ["toy"]\n[translate]\n'
                                        'translator = "apertium"\nbatchsize = 3\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"typo.toml: \[translate\]: unknown keys \['batchsize'\]"):
        load_suite(tmp_path / "typo.toml")
