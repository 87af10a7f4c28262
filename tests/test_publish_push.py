"""Pushing to a Hub: a fake Hub on 127.0.0.1 implements the endpoints huggingface_hub 2.x calls for
``create_repo`` / ``list_repo_files`` / ``create_commit`` (validate-yaml, preupload, NDJSON commit with base64
files), and the test asserts the files and card that arrive, the token handling and the dry run."""

from __future__ import annotations

import pytest

from extras import needs

needs("huggingface_hub", "hub")
needs("pyarrow", "hub")

from artifact_fixtures import results_document  # noqa: E402
from fake_hub import TOKEN, FakeHub  # noqa: E402

from beirx.cli import main  # noqa: E402
from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.publish.hub import export_dataset, local_files, push_folder  # noqa: E402


@pytest.fixture
def hub(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # conftest sets HF_HUB_OFFLINE=1
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with FakeHub() as fake:
        yield fake


def test_push_dataset_sends_every_file_and_the_card(hub, tiny_dataset, tmp_path):
    out = export_dataset(BeirDataset(tiny_dataset, name="tiny"), tmp_path / "export", repo_id="org/tiny-en")
    url = push_folder(out, "org/tiny-en", private=True, endpoint=hub.url, commit_message="beirx: tiny")
    repo = hub.repos[("dataset", "org/tiny-en")]
    assert repo["private"] is True
    assert sorted(repo["files"]) == local_files(out)
    for rel in local_files(out):
        assert repo["files"][rel] == (out / rel).read_bytes()
    card = repo["files"]["README.md"].decode()
    assert card.startswith("---\n") and "config_name: corpus" in card and "# tiny" in card
    assert repo["commits"] == [{"summary": "beirx: tiny", "oid": url.rsplit("/", 1)[1], "revision": "main"}]
    # the token travels only in the Authorization header, and only to the given endpoint
    assert {auth for _, _, auth in hub.requests} == {f"Bearer {TOKEN}"}
    assert [(m, p.split("?")[0]) for m, p, _ in hub.requests] == [
        ("POST", "/api/repos/create"), ("GET", "/api/datasets/org/tiny-en/tree/main"),
        ("POST", "/api/validate-yaml"), ("POST", "/api/datasets/org/tiny-en/preupload/main"),
        ("POST", "/api/datasets/org/tiny-en/commit/main")]
    assert all(TOKEN.encode() not in (out / rel).read_bytes() for rel in local_files(out))


def test_second_push_deletes_stale_shards_only(hub, tiny_dataset, tmp_path):
    dataset = BeirDataset(tiny_dataset, name="tiny")
    out = export_dataset(dataset, tmp_path / "export", shard_rows=2)
    push_folder(out, "org/tiny", endpoint=hub.url)
    repo = hub.repos[("dataset", "org/tiny")]
    repo["files"]["notes/keep.txt"] = b"not ours"
    export_dataset(dataset, out, shard_rows=10)
    push_folder(out, "org/tiny", endpoint=hub.url)
    assert sorted(repo["files"]) == ["README.md", "corpus/corpus-00000.parquet", "notes/keep.txt",
                                     "qrels/test.parquet", "queries/queries-00000.parquet"]
    assert len(repo["commits"]) == 2


def test_pushed_dataset_downloads_back_pinned_to_its_commit(hub, tiny_dataset, tmp_path, monkeypatch):
    from beirx.data.resolve import resolve_dataset

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    original = BeirDataset(tiny_dataset, name="tiny")
    url = push_folder(export_dataset(original, tmp_path / "export"), "org/tiny-pl", endpoint=hub.url)
    commit = url.rsplit("/", 1)[1]
    loaded = resolve_dataset(f"hf:org/tiny-pl@{commit}", lang="en")
    assert loaded.source == f"hf:org/tiny-pl@{commit}"
    assert loaded.root.name == commit and loaded.root.parent.name == "tiny-pl"
    assert [(d.id, d.title, d.text) for d in loaded.iter_corpus()] == \
        [(d.id, d.title, d.text) for d in original.iter_corpus()]
    assert loaded.qrels("test") == original.qrels("test")
    # offline afterwards: the Hugging Face cache and beirx's converted folder serve it again
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    assert resolve_dataset(f"hf:org/tiny-pl@{commit}").root == loaded.root


def test_push_errors_are_beirx_errors(hub, tmp_path):
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(BeirxError, match="pushing to bad/name failed"):
        push_folder(tmp_path, "bad/name", endpoint=hub.url + "/nothing-here")


def test_cli_publish_dataset_and_dry_run(hub, tiny_dataset, tmp_path, capsys):
    out = tmp_path / "export"
    code = main(["publish", "dataset", str(tiny_dataset), "--repo", "org/dry", "--output", str(out), "--dry-run",
                 "--endpoint", hub.url])
    assert code == 0 and "dry run: nothing pushed" in capsys.readouterr().out
    assert hub.requests == [] and (out / "README.md").is_file()
    code = main(["publish", "dataset", str(tiny_dataset), "--repo", "org/live", "--output", str(out),
                 "--endpoint", hub.url])
    assert code == 0 and "pushed to org/live" in capsys.readouterr().out
    assert sorted(hub.repos[("dataset", "org/live")]["files"]) == local_files(out)


def test_cli_publish_results_renders_tables(hub, tmp_path, capsys):
    folder = tmp_path / "results"
    folder.mkdir()
    dense = {"retriever": "dense", "model": "intfloat/multilingual-e5-small"}
    for name, label, system, ndcg in (("scifact-pl-bm25.json", "bm25", {"retriever": "bm25"}, 0.61),
                                      ("scifact-pl-dense.json", "dense", dense, 0.67)):
        results_document(name="scifact", lang="pl", split="test", label=label, description=system,
                         metrics={"NDCG@10": ndcg, "MAP@100": 0.5, "Recall@100": 0.9, "MRR@10": 0.6}).save(
            folder / name)
    (folder / "other.json").write_text("{}")
    assert main(["publish", "results", str(folder), "--repo", "org/results", "--endpoint", hub.url]) == 0
    card = hub.repos[("dataset", "org/results")]["files"]["README.md"].decode()
    assert "## scifact — pl (test)" in card
    lines = card.splitlines()
    dense = lines.index("| dense (intfloat/multilingual-e5-small) | 0.6700 | 0.5000 | 0.9000 | 0.6000 | "
                        "`scifact-pl-dense.json` |")
    bm25 = lines.index("| bm25 | 0.6100 | 0.5000 | 0.9000 | 0.6000 | `scifact-pl-bm25.json` |")
    assert dense < bm25  # best nDCG@10 first
    assert sorted(hub.repos[("dataset", "org/results")]["files"]) == \
        ["README.md", "other.json", "scifact-pl-bm25.json", "scifact-pl-dense.json"]
