"""Export to the Hub/MTEB layout: real SciFact round-trips through `datasets` and back into beirx unchanged;
the dataset card carries licence, provenance, quality and citations; existing folders are protected."""

from __future__ import annotations

import pytest

from extras import needs

needs("pyarrow", "hub")

from artifact_fixtures import quality_report, translation_manifest  # noqa: E402
from conftest import write_beir  # noqa: E402

from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.data.front_matter import read_front_matter  # noqa: E402
from beirx.publish.hub import export_dataset, local_files  # noqa: E402
from beirx.data.hub_source import load_hub_dataset  # noqa: E402


@pytest.fixture(scope="module")
def scifact_export(scifact_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "scifact"
    export_dataset(BeirDataset(scifact_dir, name="scifact"), out, repo_id="beirx-test/scifact")
    return out


def test_layout_and_configs(scifact_export):
    assert local_files(scifact_export) == ["README.md", "corpus/corpus-00000.parquet", "qrels/test.parquet",
                                           "qrels/train.parquet", "queries/queries-00000.parquet"]
    meta = read_front_matter(scifact_export / "README.md")
    assert meta["configs"] == [
        {"config_name": "corpus", "data_files": [{"split": "corpus", "path": ["corpus/corpus-00000.parquet"]}]},
        {"config_name": "queries", "data_files": [{"split": "queries", "path": ["queries/queries-00000.parquet"]}]},
        {"config_name": "default", "data_files": [{"split": "test", "path": ["qrels/test.parquet"]},
                                                  {"split": "train", "path": ["qrels/train.parquet"]}]},
    ]


def test_datasets_reload_is_identical(scifact_dir, scifact_export, tmp_path):
    datasets = needs("datasets", "hub")
    original = BeirDataset(scifact_dir)
    cache = str(tmp_path / "hf")
    corpus = datasets.load_dataset(str(scifact_export), "corpus", split="corpus", cache_dir=cache)
    queries = datasets.load_dataset(str(scifact_export), "queries", split="queries", cache_dir=cache)
    qrels = datasets.load_dataset(str(scifact_export), "default", cache_dir=cache)
    assert corpus.column_names == ["_id", "title", "text"] and queries.column_names == ["_id", "text"]
    assert len(corpus) == 5183 and len(queries) == 1109
    assert [(r["_id"], r["title"], r["text"]) for r in corpus] == \
        [(d.id, d.title, d.text) for d in original.iter_corpus()]
    assert {r["_id"]: r["text"] for r in queries} == {q.id: q.text for q in original.queries.values()}
    assert sorted(qrels) == ["test", "train"]
    for split in ("test", "train"):
        rebuilt: dict[str, dict[str, int]] = {}
        for row in qrels[split]:
            rebuilt.setdefault(row["query-id"], {})[row["corpus-id"]] = row["score"]
        assert rebuilt == original.qrels(split)
    assert len(qrels["test"]) == 339 and len({r["query-id"] for r in qrels["test"]}) == 300


def test_beirx_reload_is_identical(scifact_dir, scifact_export):
    original = BeirDataset(scifact_dir)
    back = load_hub_dataset(str(scifact_export))
    assert back.name == "scifact" and back.splits() == ["test", "train"]
    assert [(d.id, d.title, d.text) for d in back.iter_corpus()] == \
        [(d.id, d.title, d.text) for d in original.iter_corpus()]
    assert [(q.id, q.text) for q in back.queries.values()] == [(q.id, q.text) for q in original.queries.values()]
    assert back.qrels("test") == original.qrels("test") and back.qrels("train") == original.qrels("train")


def test_scifact_card(scifact_dir, scifact_export):
    text = (scifact_export / "README.md").read_text(encoding="utf-8")
    meta = read_front_matter(scifact_export / "README.md")
    assert meta["license"] == "cc-by-nc-4.0"  # inherited from the catalogue (SciFact is CC BY-NC)
    assert meta["language"] == ["en"] and meta["task_categories"] == ["text-retrieval"]
    assert meta["task_ids"] == ["fact-checking-retrieval"]
    assert meta["beirx"]["checksum"] == BeirDataset(scifact_dir).checksum()
    assert meta["beirx"]["ignore_identical_ids"] is False and meta["beirx"]["eval_split"] == "test"
    assert "| corpus | corpus | 5,183 |" in text and "| default | test | 339 |" in text
    assert 'load_dataset("beirx-test/scifact", "corpus", split="corpus")' in text
    assert "@inproceedings{thakur2021beir" in text and "@misc{wojtasik2024beirpl" in text
    assert "Not applicable: this dataset is not machine-translated." in text


def test_translated_card_reads_manifest_and_quality(tmp_path):
    root = write_beir(tmp_path / "arguana-pl",
                      [{"_id": "a1", "title": "Tytuł", "text": "Zdanie pierwsze."},
                       {"_id": "a2", "title": "", "text": "Zdanie drugie."}],
                      [{"_id": "a1", "text": "Pytanie?"}],
                      {"test": [("a1", "a2", 1)]})
    translation_manifest(name="arguana", src="en", tgt="pl", checksum="sha256:abc",
                         translator={"backend": "ctranslate2", "model": "facebook/nllb-200-distilled-600M",
                                     "revision": "f8d333a"},
                         created="2025-01-02T03:04:05+00:00").save(root / "translation.json")
    quality_report(queries={"mean": 0.91, "pairs": 1, "flagged_items": 0, "target_share": 1.0}).save(
        root / "quality" / "quality.json")
    out = export_dataset(BeirDataset(root, name="arguana", lang="pl"), tmp_path / "out", repo_id="org/arguana-pl")
    meta = read_front_matter(out / "README.md")
    text = (out / "README.md").read_text(encoding="utf-8")
    assert meta["language"] == ["pl"] and meta["license"] == "cc-by-sa-4.0"
    assert meta["multilinguality"] == ["translation"] and "machine-translated" in meta["tags"]
    assert meta["beirx"]["translator"] == "ctranslate2"
    assert meta["beirx"]["model"] == "facebook/nllb-200-distilled-600M" and meta["beirx"]["model_revision"] == "f8d333a"
    assert meta["beirx"]["ignore_identical_ids"] is True  # ArguAna, as in MTEB
    assert meta["beirx"]["quality"] == {"queries similarity (mean)": 0.91, "queries flagged share": 0.0,
                                        "queries in target language": 1.0}
    assert meta["pretty_name"] == "ArguAna (Polish)"
    assert "Machine translation from `en` by `ctranslate2`, model `facebook/nllb-200-distilled-600M` at revision " \
           "`f8d333a`" in text
    assert "| queries similarity (mean) | 0.91 |" in text
    assert sorted(local_files(out / "provenance")) == ["quality/quality.json", "quality/rows.jsonl", "translation.json"]


def test_unknown_licence_becomes_other_with_its_name(tmp_path, tiny_dataset):
    out = export_dataset(BeirDataset(tiny_dataset, name="tiny"), tmp_path / "out")
    meta = read_front_matter(out / "README.md")
    assert meta["license"] == "other" and meta["license_name"] == "not specified by the source dataset"


def test_corpus_is_sharded_and_replacing_an_export_is_clean(tmp_path, tiny_dataset):
    out = tmp_path / "out"
    export_dataset(BeirDataset(tiny_dataset, name="tiny"), out, shard_rows=2)
    assert [f for f in local_files(out) if f.startswith("corpus/")] == \
        ["corpus/corpus-00000.parquet", "corpus/corpus-00001.parquet", "corpus/corpus-00002.parquet"]
    export_dataset(BeirDataset(tiny_dataset, name="tiny"), out, shard_rows=10)  # an earlier export is replaced
    assert [f for f in local_files(out) if f.startswith("corpus/")] == ["corpus/corpus-00000.parquet"]
    back = load_hub_dataset(str(out))
    assert [d.id for d in back.iter_corpus()] == ["d1", "d2", "d3", "d4", "d5"]


def test_refuses_to_overwrite_a_folder_that_is_not_an_export(tmp_path, tiny_dataset):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(BeirxError, match="not a beirx export"):
        export_dataset(BeirDataset(tiny_dataset, name="tiny"), out)
    assert (out / "notes.txt").read_text() == "keep me"
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
