"""``hf:`` datasets from local folders shaped like the real Hub repositories: BEIR (BeIR/scifact +
BeIR/scifact-qrels), BEIR-PL (clarin-knext/scifact-pl + -qrels), MTEB's parquet repos (mteb/SciFact-PL) and
older MTEB repos (mteb/scifact), each converted once into a BEIR folder keyed by revision."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from extras import needs

needs("pyarrow", "hub")
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from beirx.data.hub_source import load_hub_dataset, parse_spec  # noqa: E402
from beirx.data.resolve import resolve_dataset  # noqa: E402
from beirx.errors import BeirxError, DataError  # noqa: E402

DOCS = [{"_id": "4983", "title": "Microstructural development", "text": "Alterations of the architecture."},
        {"_id": "5836", "title": "Induction of myelodysplasia", "text": "Myelodysplastic syndromes (MDS)."},
        {"_id": "7912", "title": "", "text": "BC1 RNA, the transcript from a master gene."}]
QUERIES = [{"_id": "1", "text": "0-dimensional biomaterials show inductive properties."},
           {"_id": "3", "text": "1,000 genomes project enables mapping."},
           {"_id": "5", "text": "1/2000 in UK have abnormal PrP positivity."}]
TEST = {"1": {"4983": 1}, "3": {"5836": 1, "7912": 1}}
TRAIN = {"5": {"7912": 1}}
BEIR_CARD = "---\nlanguage:\n- en\nlicense:\n- cc-by-sa-4.0\ntask_categories:\n- text-retrieval\n---\n# BEIR\n"


def _jsonl_gz(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def _tsv(path: Path, qrels: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, docs in qrels.items() for d, s in docs.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def beir_repo(root: Path, name: str, card: str = BEIR_CARD) -> Path:
    """BeIR/<name>: corpus.jsonl.gz, queries.jsonl.gz, a loading script; qrels in <name>-qrels/{test,train}.tsv."""
    repo = root / name
    _jsonl_gz(repo / "corpus.jsonl.gz", DOCS)
    _jsonl_gz(repo / "queries.jsonl.gz", QUERIES)
    (repo / "README.md").write_text(card, encoding="utf-8")
    (repo / f"{name}.py").write_text("# datasets loading script (ignored)\n", encoding="utf-8")
    qrels = root / f"{name}-qrels"
    _tsv(qrels / "test.tsv", TEST)
    _tsv(qrels / "train.tsv", TRAIN)
    (qrels / "README.md").write_text(card, encoding="utf-8")
    return repo


def mteb_parquet_repo(root: Path) -> Path:
    """mteb/<Task> as ``AbsTaskRetrieval._push_dataset_to_hub`` writes it: configs corpus/queries/qrels, split test,
    ``id`` columns, ``<config>/test-00000-of-00001.parquet`` files."""
    repo = root / "SciFact-PL"
    for config, table in (
            ("corpus", pa.table({"id": [d["_id"] for d in DOCS], "title": [d["title"] for d in DOCS],
                                 "text": [d["text"] for d in DOCS]})),
            ("queries", pa.table({"id": [q["_id"] for q in QUERIES[:2]], "text": [q["text"] for q in QUERIES[:2]]})),
            ("qrels", pa.table({"query-id": ["1", "3", "3"], "corpus-id": ["4983", "5836", "7912"],
                                "score": pa.array([1, 1, 1], pa.int64())}))):
        (repo / config).mkdir(parents=True)
        pq.write_table(table, repo / config / "test-00000-of-00001.parquet")
    configs = "".join(f"- config_name: {c}\n  data_files:\n  - split: test\n    path: {c}/test-*\n"
                      for c in ("corpus", "qrels", "queries"))
    (repo / "README.md").write_text(f"---\nlanguage:\n- pol\nconfigs:\n{configs}---\n# SciFact-PL\n", encoding="utf-8")
    return repo


def test_beir_layout_with_companion_qrels_repo(tmp_path):
    repo = beir_repo(tmp_path / "BeIR", "scifact")
    ds = load_hub_dataset(str(repo))
    assert ds.name == "scifact" and ds.lang == "en"
    assert [(d.id, d.title, d.text) for d in ds.iter_corpus()] == [(d["_id"], d["title"], d["text"]) for d in DOCS]
    assert {q.id: q.text for q in ds.queries.values()} == {q["_id"]: q["text"] for q in QUERIES}
    assert ds.splits() == ["test", "train"] and ds.qrels("test") == TEST and ds.qrels("train") == TRAIN
    assert ds.source.startswith(f"{repo}@local-")
    assert f" qrels={tmp_path / 'BeIR' / 'scifact-qrels'}@local-" in ds.source
    assert json.loads((ds.root / "hub_source.json").read_text())["documents"] == 3


def test_beir_pl_layout_and_language_warning(tmp_path, caplog):
    card = "---\nlanguage:\n- pl\npretty_name: BEIR-PL benchmark Scifact-PL\n---\n"
    repo = beir_repo(tmp_path / "clarin-knext", "scifact-pl", card)
    ds = load_hub_dataset(str(repo))
    assert "declares language 'pl' but is being loaded as 'en'" in caplog.text
    ds = load_hub_dataset(str(repo), lang="pl")
    assert ds.name == "scifact" and ds.lang == "pl"  # catalogue name, so catalogue settings apply
    assert ds.qrels("test") == TEST


def test_mteb_parquet_layout(tmp_path, caplog):
    ds = load_hub_dataset(str(mteb_parquet_repo(tmp_path / "mteb")), lang="pl")
    assert "declares language" not in caplog.text  # the card's ISO 639-3 "pol" is Polish
    assert [d.id for d in ds.iter_corpus()] == ["4983", "5836", "7912"]
    assert list(ds.queries) == ["1", "3"] and ds.splits() == ["test"] and ds.qrels("test") == TEST
    assert ds.name == "scifact"


def test_old_mteb_layout_with_float_scores(tmp_path):
    repo = tmp_path / "mteb" / "scifact"
    (repo / "qrels").mkdir(parents=True)
    (repo / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    (repo / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    (repo / "qrels" / "test.jsonl").write_text("".join(
        json.dumps({"query-id": q, "corpus-id": d, "score": float(s)}) + "\n" for q, docs in TEST.items()
        for d, s in docs.items()))
    configs = [("corpus", "corpus", "corpus.jsonl"), ("queries", "queries", "queries.jsonl"),
               ("default", "test", "qrels/test.jsonl")]
    (repo / "README.md").write_text("---\nconfigs:\n" + "".join(
        f"- config_name: {c}\n  data_files:\n  - split: {s}\n    path: {p}\n" for c, s, p in configs) + "---\n")
    ds = load_hub_dataset(str(repo))
    assert ds.qrels("test") == TEST and len(ds.corpus) == 3


def test_conversion_is_cached_by_revision_and_resolve_dispatches(tmp_path):
    repo = beir_repo(tmp_path / "BeIR", "scifact")
    first = resolve_dataset(f"hf:{repo}")
    marker = first.root / "corpus.jsonl"
    mtime = marker.stat().st_mtime_ns
    again = resolve_dataset(f"hf:{repo}")
    assert again.root == first.root and marker.stat().st_mtime_ns == mtime  # reused, not rewritten
    _jsonl_gz(repo / "queries.jsonl.gz", QUERIES[:2])  # new content = new revision key = new folder
    changed = resolve_dataset(f"hf:{repo}")
    assert changed.root != first.root and list(changed.queries) == ["1", "3"]
    assert not [p for p in first.root.parent.iterdir() if p.name.endswith(".tmp")]


def test_spec_parsing():
    assert parse_spec("hf:BeIR/scifact@0123abc") == ("BeIR/scifact", "0123abc")
    assert parse_spec("BeIR/scifact") == ("BeIR/scifact", None)


def test_missing_qrels_repository_is_named(tmp_path):
    repo = beir_repo(tmp_path / "BeIR", "nfcorpus")
    for path in (tmp_path / "BeIR" / "nfcorpus-qrels").iterdir():
        path.unlink()
    (tmp_path / "BeIR" / "nfcorpus-qrels").rmdir()
    with pytest.raises(BeirxError, match="has no qrels, and its qrels repository .*nfcorpus-qrels could not be loaded"):
        load_hub_dataset(str(repo))


def test_offline_without_cache_says_so(monkeypatch):
    needs("huggingface_hub", "hub")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(BeirxError, match=r"not in the local Hugging Face cache .*HF_HUB_OFFLINE=1"):
        load_hub_dataset("BeIR/no-such-dataset-xyz@main")


def test_bad_qrels_score_names_file_and_line(tmp_path):
    repo = mteb_parquet_repo(tmp_path / "mteb")
    pq.write_table(pa.table({"query-id": ["1"], "corpus-id": ["4983"], "score": [0.5]}),
                   repo / "qrels" / "test-00000-of-00001.parquet")
    with pytest.raises(DataError, match=r"test-00000-of-00001.parquet:1: relevance score must be an integer"):
        load_hub_dataset(str(repo))


def test_eval_takes_the_language_of_a_hub_card_when_lang_is_absent(tmp_path, monkeypatch):
    """``hf:ORG/NAME`` without --lang: the card's language picks the analyzer and is recorded as its source."""
    from beirx.artifacts.results import ResultsDocument
    from beirx.cli import main
    from beirx.data import hub_source

    card = "---\nlanguage:\n- pl\npretty_name: SciFact-PL\n---\n"
    repo = beir_repo(tmp_path / "hub", "scifact-pl", card=card)
    real = hub_source._snapshot
    hub = {"org/scifact-pl": repo, "org/scifact-pl-qrels": repo.parent / "scifact-pl-qrels"}
    monkeypatch.setattr(hub_source, "_snapshot",  # the Hub download, answered from local copies
                        lambda repo_id, revision: real(str(hub.get(repo_id, repo_id)), revision))
    out = tmp_path / "out"
    assert main(["eval", "--dataset", "hf:org/scifact-pl", "--retriever", "bm25", "--output", str(out)]) == 0
    (results,) = [ResultsDocument.load(p) for p in out.glob("*.json")]
    assert (results.dataset.language, results.language_source, results.language_pack["code"]) == \
        ("pl", "dataset card", "pl")
