"""BEIR reading/writing and validation: every bad-input case names the file and the line."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from beirx.cli import main
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.data.validate import validate_dataset
from beirx.errors import DataError


def test_roundtrip_preserves_ids_text_and_qrels(tiny_dataset, tmp_path):
    ds = BeirDataset(tiny_dataset)
    out = tmp_path / "copy"
    beir_io.write_corpus(out / "corpus.jsonl.gz", ds.iter_corpus())
    beir_io.write_queries(out / "queries.jsonl", ds.queries.values())
    beir_io.write_qrels(out / "qrels" / "test.tsv", ds.qrels("test"))
    copy = BeirDataset(out)
    assert list(copy.corpus) == ["d1", "d2", "d3", "d4", "d5"]
    assert copy.corpus["d3"] == Doc("d3", "Mice are small rodents; cats hunt them at night.", "Mice")
    assert copy.corpus["d4"].title == ""
    assert copy.queries["q2"] == Query("q2", "largest ocean animal")
    assert copy.qrels("test") == {"q1": {"d1": 1, "d3": 1}, "q2": {"d4": 2}, "q3": {"d2": 1}}
    assert (out / "qrels" / "test.tsv").read_bytes() == (tiny_dataset / "qrels" / "test.tsv").read_bytes()


def test_gzip_output_is_deterministic(tmp_path):
    docs = [Doc("a", "x"), Doc("b", "ż", "t")]
    beir_io.write_corpus(tmp_path / "1.jsonl.gz", docs)
    beir_io.write_corpus(tmp_path / "2.jsonl.gz", docs)
    assert (tmp_path / "1.jsonl.gz").read_bytes() == (tmp_path / "2.jsonl.gz").read_bytes()
    assert json.loads(gzip.decompress((tmp_path / "1.jsonl.gz").read_bytes()).splitlines()[1])["text"] == "ż"


def test_splits_for_queries_keep_only_judged(tiny_dataset):
    queries, qrels = BeirDataset(tiny_dataset).queries_for_split("test")
    assert sorted(queries) == ["q1", "q2", "q3"]


def test_checksum_changes_with_content(tiny_dataset):
    before = BeirDataset(tiny_dataset).checksum()
    assert before.startswith("sha256:") and before == BeirDataset(tiny_dataset).checksum()
    with open(tiny_dataset / "queries.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "q9", "text": "new"}) + "\n")
    assert BeirDataset(tiny_dataset).checksum() != before


def _corpus_error(tmp_path, lines: list[str]) -> DataError:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as exc:
        list(beir_io.iter_corpus(path))
    return exc.value


GOOD = json.dumps({"_id": "d1", "title": "", "text": "ok"})


@pytest.mark.parametrize("bad, line, message", [
    ('{"_id": "d2", "text": "unterminated', 2, "malformed JSON"),
    (json.dumps({"title": "t", "text": "no id"}), 2, "missing '_id'"),
    (json.dumps({"_id": "d2", "title": "no text"}), 2, "missing 'text'"),
    (json.dumps({"_id": "d2", "text": 5}), 2, "'text' must be a string"),
    (json.dumps({"_id": "d1", "text": "again"}), 2, "duplicate _id 'd1'"),
    (json.dumps(["not", "an", "object"]), 2, "expected a JSON object"),
])
def test_bad_corpus_line_names_file_and_line(tmp_path, bad, line, message):
    err = _corpus_error(tmp_path, [GOOD, bad])
    assert err.line == line and message in err.message
    assert str(err).startswith(f"{tmp_path / 'corpus.jsonl'}:{line}: ")


def test_reading_without_the_duplicate_check_keeps_the_other_checks(tmp_path, monkeypatch):
    """``unique=False`` (a reader whose memory must not grow with the file: the review sampler) keeps no hash per
    record and yields a repeated ID twice; malformed lines are still errors naming their line."""
    path = tmp_path / "corpus.jsonl"
    path.write_text(GOOD + "\n" + json.dumps({"_id": "d1", "text": "again"}) + "\n", encoding="utf-8")
    monkeypatch.setattr(beir_io, "_SeenIds", lambda: pytest.fail("unique=False kept every ID"))
    assert [(d.id, d.text) for d in beir_io.iter_corpus(path, unique=False)] == [("d1", "ok"), ("d1", "again")]
    assert [q.id for q in beir_io.iter_queries(path, unique=False)] == ["d1", "d1"]
    path.write_text(GOOD + '\n{"_id": "d2", "text": "unterminated\n', encoding="utf-8")
    with pytest.raises(DataError, match="malformed JSON") as exc:
        list(beir_io.iter_corpus(path, unique=False))
    assert exc.value.line == 2


def test_empty_file_is_an_error(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(DataError, match="queries.jsonl: file is empty"):
        list(beir_io.iter_queries(path))


@pytest.mark.parametrize("row, message", [
    ("q1\td1", "expected 3 tab-separated columns"),
    ("q1\td1\t1\textra", "expected 3 tab-separated columns"),
    ("q1\td1\thigh", "score must be an integer, got 'high'"),
    ("q1\td1\t0.5", "score must be an integer, got '0.5'"),
    ("\td1\t1", "empty query-id or corpus-id"),
    ("q1\td1\t2", "conflicting duplicate judgement"),
])
def test_bad_qrels_row_names_file_and_line(tmp_path, row, message):
    path = tmp_path / "test.tsv"
    path.write_text(f"query-id\tcorpus-id\tscore\nq1\td1\t1\n{row}\n", encoding="utf-8")
    with pytest.raises(DataError) as exc:
        beir_io.read_qrels(path)
    assert exc.value.line == 3 and message in exc.value.message and str(path) in str(exc.value)


def test_empty_qrels_is_an_error(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\n", encoding="utf-8")
    with pytest.raises(DataError, match="no judgements"):
        beir_io.read_qrels(path)


def test_validate_reports_every_error_and_dangling_qrels(tiny_dataset):
    with open(tiny_dataset / "corpus.jsonl", "a", encoding="utf-8") as fh:
        fh.write("{broken\n")
        fh.write(json.dumps({"_id": "d1", "text": "dup"}) + "\n")
    with open(tiny_dataset / "qrels" / "test.tsv", "a", encoding="utf-8") as fh:
        fh.write("q1\tghost\t1\nq404\td2\t1\n")
    report = validate_dataset(tiny_dataset)
    assert not report.ok
    assert [(e.line, e.message.split(" (")[0]) for e in report.errors] == [(6, "malformed JSON"), (7, "duplicate _id 'd1'")]
    assert any("1 judgements point at 1 documents missing from the corpus (e.g. 'ghost')" in w for w in report.warnings)
    assert any("1 judged queries are missing from the queries file (e.g. 'q404')" in w for w in report.warnings)
    assert report.counts["qrels/test"] == 6  # dangling judgements are counted, never dropped


def test_validate_against_source_detects_changed_ids_and_qrels(tiny_dataset, tmp_path):
    copy = tmp_path / "translated"
    shutil.copytree(tiny_dataset, copy)
    assert validate_dataset(copy, against=tiny_dataset).ok
    lines = (copy / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"q1"', '"q1x"')
    (copy / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (copy / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    messages = [e.message for e in validate_dataset(copy, against=tiny_dataset).errors]
    assert any("queries IDs differ from the source" in m and "1 missing, 1 extra" in m for m in messages)
    assert any("qrels differ from the source" in m for m in messages)


def test_validate_cli_exit_codes(tiny_dataset, capsys):
    assert main(["validate", str(tiny_dataset)]) == 0
    assert "OK" in capsys.readouterr().out
    (tiny_dataset / "queries.jsonl").write_text('{"_id": "q1"}\n', encoding="utf-8")
    assert main(["validate", str(tiny_dataset)]) == 1
    out = capsys.readouterr().out
    assert f"{tiny_dataset / 'queries.jsonl'}:1: missing 'text'" in out


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "queries.jsonl"
    beir_io.write_queries(path, [Query("q1", "kept")])

    def boom():
        yield Query("q2", "partial")
        raise RuntimeError("crash mid-write")

    with pytest.raises(RuntimeError):
        beir_io.write_queries(path, boom())
    assert [q.id for q in beir_io.iter_queries(path)] == ["q1"]
    assert [p.name for p in tmp_path.iterdir()] == ["queries.jsonl"]
