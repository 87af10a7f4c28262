"""A fake Hugging Face Hub on 127.0.0.1: the endpoints huggingface_hub 2.x calls for ``create_repo``,
``list_repo_files``, ``create_commit`` (validate-yaml, preupload, NDJSON commit with base64 files), a
repository's revision and file downloads. Used by the push tests and by the docs tests' publishing page."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

import yaml

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
                # /api/datasets/{org}/{name}/tree/{revision}, /api/datasets/{org}/{name}/revision/{revision} and
                # /api/datasets/{org}/{name} (the repository's info at its last commit)
                info = len(parts) == 5 and parts[1] == "api"
                if info or len(parts) >= 7 and parts[1] == "api" and parts[5] in ("tree", "revision"):
                    repo = hub.repos.get((parts[2][:-1], f"{parts[3]}/{parts[4]}"))
                    if repo is None:
                        return self._reply(404, {"error": "Repository not found"})
                    files = [{"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                             for p, b in sorted(repo["files"].items())]
                    if not info and parts[5] == "tree":
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
