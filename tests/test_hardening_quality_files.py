"""Quality files that verify themselves: a real ``beirx translate`` + ``beirx quality`` folder, damaged the ways a
copy, a disk or a hand edit damages it, then read by ``beirx report``, ``beirx review`` and ``beirx publish``: each
refuses it (exit 2) naming the file and the line, and nothing is exported or sampled from it."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import pytest

from beirx.cli import main
from beirx.translate.backends import TRANSLATORS
from conftest import write_beir
from hardening_helpers import tiny_st  # noqa: F401 (a fixture)

DOCS = [{"_id": f"d{i}", "title": f"animals {i}", "text": f"cats and dogs number {i} hunt mice at night"}
        for i in range(12)]
QUERIES = [{"_id": f"q{i}", "text": f"which animals hunt mice number {i}"} for i in range(8)]
QRELS = {"test": [(f"q{i}", f"d{i}", 1) for i in range(8)]}
ROWS = 8 + 12  # one sidecar line per scored query and document


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_st):  # noqa: F811 (the fixture)
    """``beirx translate`` (the toy backend), ``beirx quality`` (rule checks, similarity with a tiny encoder) and
    BM25 on both sides: the folders a user has before ``report``, ``review`` and ``publish``."""
    root = tmp_path_factory.mktemp("quality-files")
    source = write_beir(root / "toy", DOCS, QUERIES, QRELS)
    saved = dict(TRANSLATORS._entries)
    TRANSLATORS.register("toy", "toy_translator:ToyTranslator")
    try:
        assert main(["translate", "--dataset", str(source), "--lang", "es", "--translator", "toy", "--output",
                     str(root / "toy-es"), "--memory", str(root / "tm.sqlite"), "--no-quality", "--no-progress"]) == 0
    finally:
        TRANSLATORS._entries = saved
    assert main(["quality", str(root / "toy-es"), "--source", str(source), "--encoder", str(tiny_st), "--sample", "4",
                 "--no-progress"]) == 0
    for folder, lang in ((source, "en"), (root / "toy-es", "es")):
        assert main(["eval", "--dataset", str(folder), "--lang", lang, "--output", str(root / "results"),
                     "--no-progress"]) == 0
    return root


@pytest.fixture
def copy(built, tmp_path):
    """A fresh copy of the built folders (each test damages its own)."""
    root = tmp_path / "work"
    shutil.copytree(built, root, symlinks=True)
    for results in (root / "results").glob("*.json"):  # the results name the dataset folders they were run on
        results.write_text(results.read_text(encoding="utf-8").replace(str(built), str(root)), encoding="utf-8")
    return root


def _sidecar(root: Path) -> Path:
    return root / "toy-es" / "quality" / "rows.jsonl"


def _lines(root: Path) -> list[str]:
    return _sidecar(root).read_text(encoding="utf-8").splitlines(keepends=True)


def _report(root: Path) -> int:
    return main(["report", str(root / "results"), "--output", str(root / "report"), "--no-plots",
                 "--permutations", "100", "--no-progress"])


def _review(root: Path, monkeypatch) -> int:
    from beirx.review import app

    monkeypatch.setattr(app, "serve", lambda *a, **k: None)  # never serve: the refusal must come first
    from hardening_helpers import closed_port

    return main(["review", str(root / "toy-es"), "--source", str(root / "toy"), "--sample", "6", "--port",
                 str(closed_port()), "--no-progress"])


def _publish(root: Path) -> int:
    return main(["publish", "dataset", str(root / "toy-es"), "--lang", "es", "--repo", "org/toy-es", "--dry-run",
                 "--output", str(root / "export")])


def _refusals(root: Path, monkeypatch, capsys) -> list[tuple[int, str]]:
    """Each reader's exit code and stderr on the (damaged) folder."""
    found = []
    for read in (lambda: _report(root), lambda: _review(root, monkeypatch), lambda: _publish(root)):
        capsys.readouterr()
        code = read()
        found.append((code, capsys.readouterr().err))
    return found


def test_the_written_report_records_its_sidecar(built):
    """quality.json holds the sidecar's line count and SHA-256 (whole and per field), written with it."""
    report = json.loads((built / "toy-es" / "quality" / "quality.json").read_text(encoding="utf-8"))
    data = _sidecar(built).read_bytes()
    recorded = report["sidecar"]
    assert recorded["file"] == "rows.jsonl" and recorded["rows"] == ROWS == data.count(b"\n")
    assert recorded["sha256"] == hashlib.sha256(data).hexdigest()
    lines = data.splitlines(keepends=True)
    assert recorded["fields"] == {"queries": {"rows": 8, "sha256": hashlib.sha256(b"".join(lines[:8])).hexdigest()},
                                  "corpus": {"rows": 12, "sha256": hashlib.sha256(b"".join(lines[8:])).hexdigest()}}


def test_an_intact_folder_is_read_by_every_reader(copy, monkeypatch, capsys):
    assert [code for code, _ in _refusals(copy, monkeypatch, capsys)] == [0, 0, 0]
    assert sorted(p.name for p in (copy / "export" / "provenance" / "quality").iterdir()) == [
        "flagged.jsonl", "quality.json", "quality.md", "review_sample.jsonl", "review_sample.md", "rows.jsonl"]


@pytest.mark.parametrize("keep,says", [
    (4, "rows.jsonl:4: the queries rows end after 4 of the 8 quality.json records"),
    (8, "rows.jsonl:8: the file ends after line 8, but quality.json records 20 rows (no corpus rows here)"),
    (12, "rows.jsonl:12: the corpus rows end after 4 of the 12 quality.json records")])
def test_a_sidecar_cut_at_a_line_boundary_is_refused_by_every_reader(copy, monkeypatch, capsys, keep, says):
    """Half the queries' rows, exactly the queries, the queries and a third of the corpus: a file that parses line
    by line, but is not what quality.json describes (the report reads only the queries' rows, and still refuses)."""
    _sidecar(copy).write_text("".join(_lines(copy)[:keep]), encoding="utf-8")
    for code, err in _refusals(copy, monkeypatch, capsys):
        assert code == 2 and says in err, err
    assert not (copy / "export").exists() and not (copy / "report").exists()
    assert not (copy / "toy-es" / "review" / "review.sqlite").exists()


def test_a_missing_sidecar_is_refused_and_never_exported(copy, monkeypatch, capsys):
    _sidecar(copy).unlink()
    for code, err in _refusals(copy, monkeypatch, capsys):
        assert code == 2 and "rows.jsonl: cannot read the per-row quality scores" in err, err
    assert not (copy / "export").exists()


def test_a_sidecar_cut_mid_line_names_the_line(copy, monkeypatch, capsys):
    data = _sidecar(copy).read_bytes()
    _sidecar(copy).write_bytes(data[:len(data) - 10])
    code, err = _refusals(copy, monkeypatch, capsys)[2]
    assert code == 2 and f"rows.jsonl:{ROWS}: the last line stops in the middle" in err


@pytest.mark.parametrize("value,says", [('"0.5"', "is \"0.5\", not a number"), ("NaN", "is nan: a score must be"),
                                        ("Infinity", "is inf: a score must be"), ("true", "is true, not a number")])
def test_a_score_that_is_no_finite_number_is_refused_by_name(copy, monkeypatch, capsys, value, says):
    lines = _lines(copy)
    row = json.loads(lines[2])
    score = next(iter(row["scores"]))
    lines[2] = lines[2].replace(f'"{score}": {json.dumps(row["scores"][score])}', f'"{score}": {value}')
    assert lines[2] != _lines(copy)[2]
    _sidecar(copy).write_text("".join(lines), encoding="utf-8")
    for code, err in _refusals(copy, monkeypatch, capsys):
        assert code == 2 and f"rows.jsonl:3: field 'scores.{score}' of 'q2' {says}" in err, err


def test_a_changed_value_is_caught_by_the_checksum(copy, monkeypatch, capsys):
    """The same number of lines, each valid: only the checksum sees the edit."""
    lines = _lines(copy)
    row = json.loads(lines[1])
    score = next(s for s, v in row["scores"].items() if v is not None)
    row["scores"][score] = 0.123456
    lines[1] = json.dumps(row, ensure_ascii=False) + "\n"
    _sidecar(copy).write_text("".join(lines), encoding="utf-8")
    for code, err in _refusals(copy, monkeypatch, capsys):
        assert code == 2 and "rows.jsonl:8: the queries rows (lines 1-8) differ from what quality.json records" in err


def test_added_lines_are_refused(copy, monkeypatch, capsys):
    lines = _lines(copy)
    _sidecar(copy).write_text("".join(lines + lines[-1:]), encoding="utf-8")
    code, err = _refusals(copy, monkeypatch, capsys)[2]
    assert code == 2 and f"rows.jsonl:{ROWS + 1}: more corpus rows than the 12 quality.json records" in err


def test_binary_files_are_named(copy, monkeypatch, capsys):
    _sidecar(copy).write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 10 + b"\n")
    for code, err in _refusals(copy, monkeypatch, capsys):
        assert code == 2 and "rows.jsonl:1: not valid UTF-8" in err, err
    (copy / "toy-es" / "quality" / "quality.json").write_bytes(b"\xff\xfe\x00binary")
    for code, err in _refusals(copy, monkeypatch, capsys):
        assert code == 2 and "quality.json: not valid UTF-8 (byte 1): not a quality report" in err, err


def test_a_damaged_quality_json_is_never_exported_and_the_card_never_contradicts_the_export(copy, capsys):
    (copy / "toy-es" / "quality" / "quality.json").write_text("{not json", encoding="utf-8")
    assert _publish(copy) == 2 and "quality.json: not valid JSON" in capsys.readouterr().err
    assert not (copy / "export").exists()
    (copy / "toy-es" / "quality" / "quality.json").unlink()  # an interrupted beirx quality: the folder without it
    assert _publish(copy) == 2
    assert "quality.json: missing, though" in capsys.readouterr().err and not (copy / "export").exists()


def test_a_format_5_report_is_checked_by_its_row_counts_with_a_warning(copy, monkeypatch, capsys, caplog):
    """Older reports recorded no digest: the sidecar is checked against each field's pairs and line syntax."""
    path = copy / "toy-es" / "quality" / "quality.json"
    old = json.loads(path.read_text(encoding="utf-8"))
    old["schema_version"] = "beirx.quality/5"
    del old["sidecar"]
    path.write_text(json.dumps(old), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert _publish(copy) == 0
    assert "records no checksum of it, so its rows are checked by count and syntax only" in caplog.text
    shutil.rmtree(copy / "export")
    _sidecar(copy).write_text("".join(_lines(copy)[:5]), encoding="utf-8")
    for code, err in _refusals(copy, monkeypatch, capsys):
        assert code == 2 and "rows.jsonl:5: the queries rows end after 5 of the 8 quality.json records" in err, err


def test_a_report_without_headline_figures_is_not_called_missing_on_the_card():
    from beirx.publish.cards import _quality_section

    text = _quality_section({"quality": {}, "provenance": {"translator": {"backend": "toy"}}})
    assert "No quality report was found" not in text and "provenance/quality/" in text


def test_the_writer_records_a_methods_nan_as_no_answer_and_digests_what_it_wrote(tmp_path, caplog):
    """A NaN is "no value" everywhere else in a quality run (distributions, ranks): the sidecar says so as JSON can,
    and its digest is of the bytes on disk, so the file reads back verified."""
    from beirx.artifacts import quality_rows, quality_sidecar

    rows = [quality_rows.record("queries", "q1", [], 0.0, {"similarity": float("nan"), "chrf": 40.0}),
            quality_rows.record("queries", "q2", ["empty"], None, {"similarity": 0.5})]
    path = tmp_path / "rows.jsonl"
    with caplog.at_level(logging.WARNING):
        digest = quality_sidecar.write(path, rows)
    assert "1 rows had a score that is not a finite number" in caplog.text
    assert digest.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and digest.rows == 2
    assert [r["scores"] for r in quality_sidecar.read(path, digest)] == [{"similarity": None, "chrf": 40.0},
                                                                          {"similarity": 0.5}]
    quality_sidecar.verify(path, digest)
