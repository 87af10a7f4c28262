"""Hardening battery, classes 7-9: offline and paid paths, declared options, and the smaller defects."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from beirx.cli import main
from conftest import write_beir
from hardening_helpers import CORPUS, QRELS, QUERIES, closed_port, eval_cli
from extras import needs


@pytest.fixture
def ds(tmp_path):
    return write_beir(tmp_path / "tiny", CORPUS, QUERIES, QRELS)


# -- offline: one attempt, a hint, fast ----------------------------------------------------------------
@pytest.mark.parametrize("base,reason", [("http://127.0.0.1:{port}/beir", "connection refused"),
                                         ("http://no-such-host.invalid/beir", "name not resolved")])
def test_offline_download_fails_fast_with_hints(tmp_path, monkeypatch, capsys, caplog, base, reason):
    monkeypatch.setenv("BEIRX_BEIR_URL", base.format(port=closed_port()))
    start = time.monotonic()
    with caplog.at_level(logging.WARNING):
        assert main(["eval", "--dataset", "scifact", "--output", str(tmp_path / "out")]) == 2
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert f"({reason})" in err and "$BEIRX_BEIR_URL" in err and "--dataset DIR" in err and "hf:" in err
    assert err.count("cannot reach") == 1 and not [r for r in caplog.records if "attempt" in r.getMessage()]


# -- translator options and paid backends --------------------------------------------------------------
def test_unknown_translator_option_lists_the_valid_ones(ds, tmp_path, capsys):
    code = main(["translate", "--dataset", str(ds), "--lang", "es", "--translator", "apertium",
                 "--translator-option", "beam_size=2", "--output", str(tmp_path / "es")])
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown option beam_size for the apertium translator; valid options: binary, datadir, mark_unknown" in err
    assert not (tmp_path / "es").exists()


@pytest.fixture
def stub(monkeypatch):
    from test_translate_api import StubApi

    for name in ("DEEPL_AUTH_KEY", "DEEPL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with StubApi() as api:
        yield api


def _deepl(ds, tmp_path, stub, *extra):
    return main(["translate", "--dataset", str(ds), "--lang", "pl", "--translator", "deepl", "--translator-option",
                 f"base_url={stub.url}", "--no-quality", "--output", str(tmp_path / "pl"), "--memory",
                 str(tmp_path / "tm.sqlite"), *extra])


def test_paid_backend_checks_the_key_before_any_work(ds, tmp_path, stub, capsys):
    assert _deepl(ds, tmp_path, stub, "--max-cost", "5") == 2
    assert "no credential found; set the environment variable DEEPL_AUTH_KEY or DEEPL_API_KEY" in capsys.readouterr().err
    assert stub.requests == [] and not (tmp_path / "tm.sqlite").exists() and not (tmp_path / "pl").exists()


def test_paid_backend_needs_max_cost(ds, tmp_path, stub, monkeypatch, capsys):
    monkeypatch.setenv("DEEPL_AUTH_KEY", "k:fx")
    assert _deepl(ds, tmp_path, stub) == 2
    captured = capsys.readouterr()
    assert "estimate: " in captured.out and "characters to send to deepl = USD 0.01 at list price" in captured.out
    assert "pass --max-cost USD" in captured.err and stub.requests == [] and not (tmp_path / "pl").exists()


def test_paid_backend_refuses_an_estimate_over_the_cap(ds, tmp_path, stub, monkeypatch, capsys):
    monkeypatch.setenv("DEEPL_AUTH_KEY", "k:fx")
    from beirx.translate.backends.deepl import DeepLTranslator

    monkeypatch.setattr(DeepLTranslator, "cost_per_million_chars", 1e6)  # USD 1 per character
    assert _deepl(ds, tmp_path, stub, "--max-cost", "10") == 2
    assert "exceeds --max-cost 10.00; nothing was sent" in capsys.readouterr().err and stub.requests == []


def test_paid_run_records_the_cost_in_the_manifest(ds, tmp_path, stub, monkeypatch, capsys):
    monkeypatch.setenv("DEEPL_AUTH_KEY", "k:fx")
    assert _deepl(ds, tmp_path, stub, "--max-cost", "1") == 0
    manifest = json.loads((tmp_path / "pl" / "translation.json").read_text())
    cost = manifest["cost"]
    sent = sum(len(t) for r in stub.requests for t in r["body"]["text"])
    assert cost["characters_sent"] == cost["characters_estimated"] == sent > 0
    assert cost["max_cost_usd"] == 1.0 and cost["spent_usd"] == round(sent / 1e6 * 25.0, 2)


def test_dry_run_of_a_paid_backend_needs_no_cap(ds, tmp_path, stub, monkeypatch, capsys):
    monkeypatch.setenv("DEEPL_AUTH_KEY", "k:fx")
    assert _deepl(ds, tmp_path, stub, "--dry-run") == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["cost"]["characters"] > 0 and stub.requests == []


# -- reranker models resolved up front ---------------------------------------------------------------
def test_missing_reranker_model_fails_before_the_first_stage(ds, tmp_path, beirx_home, capsys):
    code, _ = eval_cli(ds, tmp_path / "out", "--reranker", "cross-encoder", "--reranker-model",
                       str(tmp_path / "no-such-model"))
    assert code == 2 and "model folder not found" in capsys.readouterr().err
    assert not (beirx_home / "indexes").exists() and not (tmp_path / "out").exists()


# -- mteb results -----------------------------------------------------------------------------------
@pytest.fixture
def results_file(tmp_path):
    sci = write_beir(tmp_path / "scifact", CORPUS, QUERIES, QRELS)  # named like the catalogue's SciFact
    assert eval_cli(sci, tmp_path / "res")[0] == 0
    return next((tmp_path / "res").glob("*.json"))


def test_mteb_results_model_without_revision(results_file, tmp_path):
    assert main(["mteb", "results", str(results_file), "--task", "SciFact", "--output", str(tmp_path / "m"),
                 "--model", "org/my-model"]) == 0
    [path] = (tmp_path / "m").rglob("SciFact.json")
    assert path.relative_to(tmp_path / "m").parts[:2] == ("org__my-model", "no_revision_available")


@pytest.mark.parametrize("task,message", [("SciFact-PL", "in 'en' cannot be results of MTEB task SciFact-PL"),
                                          ("NFCorpus", "cannot be results of MTEB task NFCorpus (expected SciFact)")])
def test_mteb_results_of_another_task_or_language_are_refused(results_file, tmp_path, capsys, task, message):
    assert main(["mteb", "results", str(results_file), "--task", task, "--output", str(tmp_path / "m")]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "m").exists()


# -- quality report -----------------------------------------------------------------------------------
@pytest.mark.parametrize("flags", [{}, {"empty": 1}, {"empty": 1, "repetition": 1}])
def test_quality_md_flags_table_is_well_formed(flags):
    import dataclasses

    from beirx.artifacts.quality import QualityReport
    from beirx.translate.quality.report_files import render_markdown

    raw = json.loads((Path(__file__).parent / "data" / "before_v2" / "quality.json").read_text())
    report = QualityReport.from_dict(raw)
    fields = {f: dataclasses.replace(v, flags=dict(flags), flagged_items=sum(flags.values()))
              for f, v in report.fields.items()}
    report = dataclasses.replace(report, fields=fields)
    lines = render_markdown(report).splitlines()
    start = lines.index("## Flags") + 2
    header, separator, row = lines[start:start + 3]
    assert header.count("|") == separator.count("|") == row.count("|") == 5 + len(flags)
    tail = "\n".join(lines[start + 3:start + 3 + len(fields) + 3])
    assert ("No pair was flagged." in tail) == (not flags) and ("with its reasons:" in tail) == bool(flags)


@pytest.mark.parametrize("source,translation,flagged", [
    ("specific results", "specificspecificspecificspecific wyniki", "specificspecificspecificspecific"),
    ("the cell", "komórka komórka komórka komórka komórka", "komórka komórka komórka komórka komórka"),
    ("ha ha ha ha", "ha ha ha ha", None),
    ("call 1111 1111", "zadzwoń 1111 1111 1111 1111", None),
    ("A normal sentence.", "Zwykłe, bardzo bardzo zwykłe zdanie.", None),
])
def test_repetition_flag(source, translation, flagged):
    from beirx.translate.quality.rule_checks import repetition

    assert repetition(source, translation) == flagged


# -- validate hf: ----------------------------------------------------------------------------------
def test_validate_accepts_hf_specs(ds, tmp_path, capsys):
    needs("pyarrow", "hub")
    from beirx.data.dataset import BeirDataset
    from beirx.publish.hub import export_dataset

    export_dataset(BeirDataset(ds), tmp_path / "hub-copy")
    assert main(["validate", f"hf:{tmp_path / 'hub-copy'}"]) == 0
    assert ": OK" in capsys.readouterr().out


# -- progress in logs ---------------------------------------------------------------------------------
def test_progress_in_a_log_is_periodic_lines(caplog, monkeypatch):
    from beirx import progress as progress_mod

    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    with caplog.at_level(logging.INFO, logger="beirx.progress"):
        with progress_mod.progress(total=4, desc="encode m", unit="doc") as bar:  # stderr is not a terminal here
            bar.update(2)
            bar.update(2)
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith("encode m: 2/4 (50.0%) doc, ") and "doc/s" in messages[0] and "ETA" in messages[0]
    assert messages[-1].startswith("encode m: 4/4 (100.0%) doc")


def test_translate_writes_no_carriage_returns_into_logs(ds, tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO)
    assert main(["translate", "--dataset", str(ds), "--lang", "es", "--translator", "apertium", "--no-quality",
                 "--output", str(tmp_path / "es"), "--memory", str(tmp_path / "tm.sqlite")]) == 0
    captured = capsys.readouterr()
    assert "\r" not in captured.err and "queries translated en->es with apertium" in captured.out


# -- results card labels ----------------------------------------------------------------------------
def test_results_labels_distinguish_grid_systems(ds, tmp_path):
    """bm25 flat and multifield, a fusion and a reranker each get their own label in results (and so cards)."""
    from beirx.evaluate.specs import FusionSpec, RerankSpec, SystemSpec

    flat, multi = SystemSpec("bm25", {"fields": "flat"}), SystemSpec("bm25", {"fields": "multifield"})
    fused = FusionSpec([flat, multi], "rrf")
    rerank = RerankSpec(fused, "cross-encoder", {"model": "org/ce"}, 50)
    labels = [s.label() for s in (flat, multi, fused, rerank)]
    assert len(set(labels)) == 4 and "flat" in labels[0] and "multifield" in labels[1]
    code = main(["eval", "--dataset", str(ds), "--output", str(tmp_path / "out"), "--fields", "flat"])
    [path] = (tmp_path / "out").glob("*.json")
    assert code == 0 and json.loads(path.read_text())["system"]["label"] == "bm25 fields=flat"
