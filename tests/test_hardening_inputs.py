"""Hardening battery, classes 1-2: every bad input is a clear error naming file:line with exit code 2,
and inputs that are merely unusual are accepted with the metrics of the clean dataset."""

from __future__ import annotations

import gzip
import json
import os
import shutil

import pytest

from beirx.cli import main
from conftest import write_beir
from hardening_helpers import CLEAN, CORPUS, QRELS, QUERIES, eval_cli, metrics_of


@pytest.fixture
def ds(tmp_path):
    return write_beir(tmp_path / "tiny", CORPUS, QUERIES, QRELS)


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def test_clean_metrics(ds, tmp_path):
    code, results = eval_cli(ds, tmp_path / "out")
    assert code == 0 and metrics_of(results) == CLEAN
    assert results["language_source"] == "default" and results["dataset"]["language"] == "en"


# -- decoding, compression, JSON structure (error boundary at the source) ------------------------------
def test_non_utf8_bytes_name_file_and_line(ds, tmp_path, capsys):
    data = (ds / "corpus.jsonl").read_bytes().replace(b"Dogs are", b"Dogs \xff\xfe are")
    (ds / "corpus.jsonl").write_bytes(data)
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    err = _err(capsys)
    assert f"{ds / 'corpus.jsonl'}:2: not valid UTF-8" in err


def test_truncated_gzip_corpus(ds, tmp_path, capsys):
    raw = "".join(json.dumps({"_id": f"d{i}", "text": f"document number {i}"}) + "\n" for i in range(2000))
    packed = gzip.compress(raw.encode())
    (ds / "corpus.jsonl").unlink()
    (ds / "corpus.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    err = _err(capsys)
    assert str(ds / "corpus.jsonl.gz") in err and "truncated or not gzip" in err


def test_fake_gzip_corpus(ds, tmp_path, capsys):
    (ds / "corpus.jsonl").rename(ds / "corpus.jsonl.gz")  # plain text under a .gz name
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    err = _err(capsys)
    assert f"{ds / 'corpus.jsonl.gz'}:1: compressed data is truncated or not gzip" in err


def test_deeply_nested_json_line(ds, tmp_path, capsys):
    lines = _lines(ds / "queries.jsonl")
    lines[1] = '{"_id": "q2", "text": "x", "metadata": ' + "[" * 100000 + "]" * 100000 + "}\n"
    (ds / "queries.jsonl").write_text("".join(lines), encoding="utf-8")
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    assert f"{ds / 'queries.jsonl'}:2: JSON nested too deeply" in _err(capsys)


def test_malformed_json_line(ds, tmp_path, capsys):
    lines = _lines(ds / "corpus.jsonl")
    lines[3] = '{"_id": "d4", "text": \n'
    (ds / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    assert f"{ds / 'corpus.jsonl'}:4: malformed JSON" in _err(capsys)


@pytest.mark.parametrize("field,line", [("_id", 3), ("text", 3)])
def test_lone_surrogate(ds, tmp_path, capsys, field, line):
    lines = _lines(ds / "corpus.jsonl")
    obj = json.loads(lines[2])
    obj[field] = obj[field] + "\ud800"
    lines[2] = json.dumps(obj) + "\n"  # json.dumps escapes it as \ud800
    (ds / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    err = _err(capsys)
    assert f"{ds / 'corpus.jsonl'}:{line}:" in err and ("surrogate" in err or "U+D800" in err)


def test_verbose_shows_the_traceback(ds, tmp_path, capsys):
    (ds / "corpus.jsonl").write_bytes(b"\xff\xfe\n")
    assert main(["-v", "eval", "--dataset", str(ds), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and f"{ds / 'corpus.jsonl'}:1: not valid UTF-8" in err


def test_symlink_loop_as_corpus(ds, tmp_path, capsys):
    (ds / "corpus.jsonl").unlink()
    os.symlink(ds / "corpus.jsonl", ds / "corpus.jsonl")
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    assert str(ds) in _err(capsys)


def test_corpus_path_is_a_folder(ds, tmp_path, capsys):
    (ds / "corpus.jsonl").unlink()
    (ds / "corpus.jsonl").mkdir()
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    assert str(ds) in _err(capsys)


# -- qrels contract ---------------------------------------------------------------------------------
@pytest.mark.parametrize("score", [str(2 ** 31), str(-(2 ** 31) - 1), "99999999999999999999"])
def test_qrels_score_must_fit_int32(ds, tmp_path, capsys, score):
    path = ds / "qrels" / "test.tsv"
    path.write_text(path.read_text().replace("q2\td4\t2", f"q2\td4\t{score}"), encoding="utf-8")
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    assert f"{path}:4: score {int(score)} does not fit a 32-bit integer" in _err(capsys)


def test_qrels_large_grade_and_negative_grade_are_accepted(ds, tmp_path):
    # (2**31 - 1 is accepted too, but trec_eval's NDCG then walks every grade level: minutes, so not here)
    path = ds / "qrels" / "test.tsv"
    text = path.read_text().replace("q2\td4\t2", "q2\td4\t65535") + "q3\td5\t-1\n"
    path.write_text(text, encoding="utf-8")
    code, results = eval_cli(ds, tmp_path / "out")
    assert code == 0 and metrics_of(results) == CLEAN


# -- one ID rule: whitespace/control characters rejected everywhere ---------------------------------
@pytest.mark.parametrize("where,bad", [
    ("qrels", " d1"), ("qrels", "d1 "), ("corpus", "d 1"), ("corpus", "d1\u200b"), ("queries", "q\t1"),
    ("queries", "q1\x00"), ("corpus", "d1\u2028"),
])
def test_ids_with_whitespace_or_controls_are_rejected(ds, tmp_path, capsys, where, bad):
    if where == "qrels":
        path = ds / "qrels" / "test.tsv"
        path.write_text(path.read_text().replace("q1\td1\t1", f"q1\t{bad}\t1"), encoding="utf-8")
        line = 2
    else:
        path = ds / f"{where}.jsonl"
        lines = _lines(path)
        obj = json.loads(lines[0])
        obj["_id"] = bad
        lines[0] = json.dumps(obj) + "\n"
        path.write_text("".join(lines), encoding="utf-8")
        line = 1
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    assert f"{path}:{line}: ID {bad!r} contains whitespace or a control character" in _err(capsys)


def test_validate_reports_the_id_rule_with_file_line(ds, capsys):
    path = ds / "corpus.jsonl"
    lines = _lines(path)
    lines[1] = lines[1].replace('"d2"', '" d2"')
    path.write_text("".join(lines), encoding="utf-8")
    assert main(["validate", str(ds)]) == 1
    assert f"{path}:2: ID ' d2' contains whitespace" in capsys.readouterr().out


# -- run files as a first stage -------------------------------------------------------------------
def _bm25_run(ds, tmp_path):
    code, _ = eval_cli(ds, tmp_path / "bm25")
    assert code == 0
    [run] = (tmp_path / "bm25").glob("*.trec")
    return run


def test_run_file_as_first_stage_gives_the_clean_metrics(ds, tmp_path):
    run = _bm25_run(ds, tmp_path)
    code, results = eval_cli(ds, tmp_path / "out", "--first-stage", str(run))
    assert code == 0 and metrics_of(results) == CLEAN and results["system"]["kind"] == "run_file"


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN"])
def test_run_file_rejects_non_finite_scores(ds, tmp_path, capsys, bad):
    run = _bm25_run(ds, tmp_path)
    lines = _lines(run)
    cols = lines[1].split()
    cols[4] = bad
    lines[1] = " ".join(cols) + "\n"
    run.write_text("".join(lines), encoding="utf-8")
    assert eval_cli(ds, tmp_path / "out", "--first-stage", str(run))[0] == 2
    assert f"{run}:2: score must be a finite number, got {bad!r}" in _err(capsys)


def test_run_file_with_non_utf8_bytes(ds, tmp_path, capsys):
    run = tmp_path / "bad.trec"
    run.write_bytes(b"q1 Q0 d1 1 2.0 x\nq1 Q0 d\xff 2 1.0 x\n")
    assert eval_cli(ds, tmp_path / "out", "--first-stage", str(run))[0] == 2
    assert f"{run}:2: not valid UTF-8" in _err(capsys)


def test_first_stage_missing_file_is_an_error_not_bm25(ds, tmp_path, capsys):
    assert eval_cli(ds, tmp_path / "out", "--first-stage", str(tmp_path / "nope.trec"))[0] == 2
    assert "is neither an existing run file nor a system name" in _err(capsys)
    assert not (tmp_path / "out").exists()


def test_first_stage_folder_is_an_error(ds, tmp_path, capsys):
    assert eval_cli(ds, tmp_path / "out", "--first-stage", str(tmp_path))[0] == 2
    assert "is a folder, not a run file" in _err(capsys)


# -- ambiguous inputs -----------------------------------------------------------------------------
def test_corpus_jsonl_and_different_gz_is_ambiguous(ds, tmp_path, capsys):
    other = [dict(d, text="something else") for d in CORPUS]
    (ds / "corpus.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(d) + "\n" for d in other).encode()))
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    assert "both corpus.jsonl and corpus.jsonl.gz exist and differ" in _err(capsys)


def test_corpus_jsonl_and_identical_gz_is_accepted(ds, tmp_path):
    (ds / "corpus.jsonl.gz").write_bytes(gzip.compress((ds / "corpus.jsonl").read_bytes()))
    code, results = eval_cli(ds, tmp_path / "out")
    assert code == 0 and metrics_of(results) == CLEAN


# -- numeric options and path options -----------------------------------------------------------------
@pytest.mark.parametrize("option,value,message", [
    ("--top-k", "0", "must be at least 1"), ("--top-k", "-3", "must be at least 1"),
    ("--rerank-depth", "0", "must be at least 1"), ("--batch-size", "0", "must be at least 1"),
    ("--k1", "-1", "must be 0 or more"), ("--b", "1.5", "must be between 0 and 1"),
    ("--b", "nan", "expected a finite number"), ("--rrf-k", "-1", "must be 0 or more"),
    ("--max-length", "0", "must be at least 1"), ("--es-bulk-size", "0", "must be at least 1"),
])
def test_numeric_options_are_range_checked(ds, tmp_path, capsys, option, value, message):
    assert eval_cli(ds, tmp_path / "out", option, value)[0] == 2
    assert f"argument {option}: {message}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_output_that_is_a_file_is_rejected(ds, tmp_path, capsys):
    (tmp_path / "out").write_text("x")
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    err = capsys.readouterr().err
    assert "exists and is not a folder" in err
    # the reason and where the options are listed, not sixty lines of usage above it
    assert err.splitlines()[-2:] == [f"beirx eval: error: argument --output: {tmp_path / 'out'}: exists and is not a "
                                     "folder", "(`beirx eval --help` lists the options)"] and "usage:" not in err


def test_translate_batch_size_zero(ds, tmp_path, capsys):
    assert main(["translate", "--dataset", str(ds), "--lang", "es", "--batch-size", "0"]) == 2
    assert "argument --batch-size: must be at least 1" in capsys.readouterr().err


def test_unwritable_output_is_a_clear_error(ds, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert eval_cli(ds, blocker / "sub")[0] == 2  # a file where a parent folder should be
    err = _err(capsys)
    assert str(blocker / "sub") in err or str(blocker) in err


# -- archives -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("entries", [[("d/a", b"x"), ("d/a/b", b"y")], [("d/a/b", b"y"), ("d/a", b"x")]])
def test_archive_file_directory_clash_is_a_clear_error(tmp_path, entries):
    import zipfile

    from beirx.data.extract import safe_extract
    from beirx.errors import BeirxError

    archive = tmp_path / "x.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in entries:
            zf.writestr(name, data)
    with pytest.raises(BeirxError, match=r"x\.zip: entry 'd/a(/b)?' clashes with another entry"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists() and [p.name for p in tmp_path.iterdir()] == ["x.zip"]


def test_damaged_archive_member_is_a_clear_error(tmp_path):
    import zipfile

    from beirx.data.extract import safe_extract
    from beirx.errors import BeirxError

    archive = tmp_path / "x.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("d/corpus.jsonl", b'{"_id": "1", "text": "abc"}\n' * 5000)
    data = bytearray(archive.read_bytes())
    data[200:260] = b"\0" * 60  # damage the compressed stream, keep the directory intact
    archive.write_bytes(bytes(data))
    with pytest.raises(BeirxError, match=r"x\.zip: entry 'd/corpus\.jsonl' is damaged"):
        safe_extract(archive, tmp_path / "out")


# -- malformed URLs and SQLite paths --------------------------------------------------------------------
def test_malformed_es_url(ds, tmp_path, capsys):
    assert eval_cli(ds, tmp_path / "out", "--retriever", "elasticsearch", "--es-url", "http://[::1")[0] == 2
    assert "beirx eval: error:" in _err(capsys)


def test_malformed_download_url(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BEIRX_BEIR_URL", "http://exa mple.org:99999/x")
    assert main(["eval", "--dataset", "scifact", "--output", str(tmp_path / "out")]) == 2
    assert "scifact.zip" in _err(capsys)


def test_translation_memory_path_that_is_a_folder(ds, tmp_path, capsys):
    (tmp_path / "tm").mkdir()
    code = main(["translate", "--dataset", str(ds), "--lang", "es", "--translator", "apertium", "--no-quality",
                 "--memory", str(tmp_path / "tm"), "--output", str(tmp_path / "es")])
    assert code == 2
    assert f"{tmp_path / 'tm'}: the translation memory must be a file" in _err(capsys)
    assert (tmp_path / "tm").is_dir() and not list(tmp_path.glob("tm.damaged*"))
