"""Pushing to a Hub: a fake Hub on 127.0.0.1 implements the endpoints huggingface_hub 2.x calls for
``create_repo`` / ``list_repo_files`` / ``create_commit`` (validate-yaml, preupload, NDJSON commit with base64
files), and the test asserts the files and card that arrive, the token handling and the dry run."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

import pytest
import yaml

from extras import needs

needs("huggingface_hub", "hub")
needs("pyarrow", "hub")

from artifact_fixtures import results_document  # noqa: E402

from beirx.cli import main  # noqa: E402
from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.publish.hub import export_dataset, local_files, push_folder  # noqa: E402

TOKEN = "hf_fake_token_for_tests_0123456789"


class FakeHub:
    """Repositories in memory: ``repos[(type, id)] = {"private": bool, "files": {path: bytes}, "commits": [...]}``."""

    def __init__(self):
        self.repos: dict[tuple[str, str], dict] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Authorization header)
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, status: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_HEAD(self):
                self.do_GET(head=True)

            def do_GET(self, head: bool = False):
                hub.requests.append(("HEAD" if head else "GET", self.path, self.headers.get("Authorization")))
                parts = urlparse(self.path).path.split("/")
                # /api/datasets/{org}/{name}/tree/{revision} and /api/datasets/{org}/{name}/revision/{revision}
                if len(parts) >= 7 and parts[1] == "api" and parts[5] in ("tree", "revision"):
                    repo = hub.repos.get((parts[2][:-1], f"{parts[3]}/{parts[4]}"))
                    if repo is None:
                        return self._reply(404, {"error": "Repository not found"})
                    files = [{"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                             for p, b in sorted(repo["files"].items())]
                    if parts[5] == "tree":
                        return self._reply(200, files)
                    return self._reply(200, {"id": f"{parts[3]}/{parts[4]}", "sha": repo["commits"][-1]["oid"],
                                             "private": repo["private"],
                                             "siblings": [{"rfilename": f["path"]} for f in files]})
                # /datasets/{org}/{name}/resolve/{revision}/{path}
                if len(parts) >= 7 and parts[1] == "datasets" and parts[4] == "resolve":
                    repo = hub.repos.get(("dataset", f"{parts[2]}/{parts[3]}"))
                    rel = unquote("/".join(parts[6:]))
                    if repo is None or rel not in repo["files"]:
                        return self._reply(404, {"error": "Entry not found"})
                    data = repo["files"][rel]
                    self.send_response(200)
                    self.send_header("X-Repo-Commit", repo["commits"][-1]["oid"])
                    self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if not head:
                        self.wfile.write(data)
                    return None
                return self._reply(404, {"error": f"not implemented: {self.path}"})

            def do_POST(self):
                hub.requests.append(("POST", self.path, self.headers.get("Authorization")))
                path = urlparse(self.path).path
                body = self._body()
                if path == "/api/repos/create":
                    payload = json.loads(body)
                    key = (payload.get("type") or "model", f"{payload['organization']}/{payload['name']}")
                    if key in hub.repos:
                        return self._reply(409, {"error": "You already created this repo",
                                                 "url": f"{hub.url}/datasets/{key[1]}"})
                    hub.repos[key] = {"private": payload.get("visibility") == "private" or bool(payload.get("private")),
                                      "files": {}, "commits": []}
                    return self._reply(200, {"url": f"{hub.url}/datasets/{key[1]}"})
                if path == "/api/validate-yaml":
                    content = json.loads(body)["content"]
                    try:
                        yaml.safe_load(content.split("---")[1])
                    except yaml.YAMLError as exc:
                        return self._reply(400, {"errors": [{"message": str(exc)}]})
                    return self._reply(200, {"errors": [], "warnings": []})
                parts = path.split("/")
                if len(parts) >= 7 and parts[1] == "api":
                    key = (parts[2][:-1], f"{parts[3]}/{parts[4]}")
                    repo = hub.repos.get(key)
                    if repo is None:
                        return self._reply(404, {"error": "Repository not found"})
                    if parts[5] == "preupload":
                        files = json.loads(body)["files"]
                        return self._reply(200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                                            "shouldIgnore": False, "oid": None} for f in files]})
                    if parts[5] == "commit":
                        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
                        header = lines[0]["value"]
                        for line in lines[1:]:
                            if line["key"] == "file":
                                repo["files"][line["value"]["path"]] = base64.b64decode(line["value"]["content"])
                            elif line["key"] == "deletedFile":
                                repo["files"].pop(line["value"]["path"])
                            else:
                                return self._reply(400, {"error": f"unsupported operation {line['key']}"})
                        oid = hashlib.sha1(json.dumps(header).encode() + str(len(repo["commits"])).encode()).hexdigest()
                        repo["commits"].append({"summary": header["summary"], "oid": oid,
                                                "revision": unquote(parts[6])})
                        return self._reply(200, {"commitUrl": f"{hub.url}/datasets/{key[1]}/commit/{oid}",
                                                 "commitOid": oid, "pullRequestUrl": None})
                return self._reply(404, {"error": f"not implemented: {self.path}"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


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
