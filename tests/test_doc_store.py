"""The disk-backed document store: the same documents as streaming the corpus, by ID, for plain and gzip
corpora; a changed corpus gets a new index; duplicate IDs and bad lines are errors naming file and line."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from beirx.data import beir_io
from beirx.data.doc_store import DocStore
from beirx.errors import DataError

DOCS = [{"_id": "d1", "title": "Cats", "text": "Cats hunt mice.", "metadata": {"url": "x"}},
        {"_id": 7, "text": "An integer ID and no title: ünïcode ✓"},
        {"_id": "d3", "title": None, "text": "Third\\nline"}]


def write(path, docs, bom=False):
    data = ("\ufeff" if bom else "") + "".join(json.dumps(d, ensure_ascii=False) + "\n" + ("\n" if i == 0 else "")
                                               for i, d in enumerate(docs))
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


@pytest.mark.parametrize("name,bom", [("corpus.jsonl", False), ("corpus.jsonl", True), ("corpus.jsonl.gz", False)])
def test_documents_by_id_equal_the_streamed_corpus(tmp_path, name, bom):
    path = write(tmp_path / name, DOCS, bom)
    expected = {d.id: d for d in beir_io.iter_corpus(path)}
    with DocStore(path, tmp_path / "idx") as store:
        assert len(store) == 3 and list(store) == ["d1", "7", "d3"]
        for doc_id, doc in expected.items():
            got = store[doc_id]
            assert (got.id, got.title, got.text, got.metadata) == (doc.id, doc.title, doc.text, doc.metadata)
        assert "7" in store and "missing" not in store and 7 not in store
        with pytest.raises(KeyError):
            store["missing"]
    assert len(list((tmp_path / "idx").glob("*.sqlite"))) == 1


def test_a_changed_corpus_gets_a_new_index(tmp_path):
    path = write(tmp_path / "corpus.jsonl", DOCS)
    with DocStore(path, tmp_path / "idx") as store:
        assert store["d1"].text == "Cats hunt mice."
    write(path, [{**DOCS[0], "text": "Dogs now."}, *DOCS[1:]])
    os.utime(path, ns=(1, 1))
    with DocStore(path, tmp_path / "idx") as store:
        assert store["d1"].text == "Dogs now."


def test_duplicate_ids_and_bad_lines_name_file_and_line(tmp_path):
    path = write(tmp_path / "corpus.jsonl", [DOCS[0], DOCS[1], {"_id": "d1", "text": "again"}])
    with pytest.raises(DataError, match=r"corpus\.jsonl:4: duplicate _id 'd1'"):
        DocStore(path, tmp_path / "idx")
    path.write_text('{"_id": "a", "text": "ok"}\n{"text": "no id"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"corpus\.jsonl:2: malformed corpus line"):
        DocStore(path, tmp_path / "idx")
    assert not list((tmp_path / "idx").glob("*"))  # nothing half-built is left behind


@pytest.mark.parametrize("folder", ["idx #1", "idx?v=2", "idx%20"])
def test_an_index_folder_with_uri_characters_opens(tmp_path, folder):
    """The read-only index is opened by URI: a folder name holding '#', '?' or '%' is still that folder."""
    path = write(tmp_path / "corpus.jsonl", DOCS)
    with DocStore(path, tmp_path / folder) as store:
        assert store["d1"].title == "Cats" and len(store) == 3
