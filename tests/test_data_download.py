"""Downloads, safe extraction and dataset resolution, against an HTTP server on 127.0.0.1 only."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import socket
import stat
import sys
import threading
import types
import zipfile
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from beirx.data import catalogue
from beirx.cli import datasets as commands
from beirx.data.download import download_file
from beirx.data.extract import MARKER, safe_extract
from beirx.data.resolve import resolve_dataset
from beirx.errors import BeirxError, MissingExtraError
from beirx.retry import RetryPolicy

CORPUS = [{"_id": "d1", "title": "Cats", "text": "Cats hunt mice."}, {"_id": "d2", "title": "", "text": "Dogs bark."}]
QUERIES = [{"_id": "q1", "text": "what hunts mice"}, {"_id": "q2", "text": "barking"}]


def beir_files(folder: str) -> dict[str, bytes]:
    return {
        f"{folder}/corpus.jsonl": "".join(json.dumps(d) + "\n" for d in CORPUS).encode(),
        f"{folder}/queries.jsonl": "".join(json.dumps(q) + "\n" for q in QUERIES).encode(),
        f"{folder}/qrels/test.tsv": b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\n",
    }


def make_zip(entries: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buf.getvalue()


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


class _State:
    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.honour_range = True
        self.cut_next = 0  # number of coming responses to cut off mid-body
        self.busy_next: list[str | None] = []  # coming responses answered 429 (each with this Retry-After)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):
        state: _State = self.server.state
        rng = self.headers.get("Range")
        state.requests.append((self.path, rng))
        data = state.files.get(self.path)
        if state.busy_next:
            wait = state.busy_next.pop(0)
            self.send_response(429)
            if wait is not None:
                self.send_header("Retry-After", wait)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start = 0
        if rng and state.honour_range:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if state.cut_next:
            state.cut_next -= 1
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True  # drop the connection mid-body
            return
        self.wfile.write(body)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.state = _State()
    httpd.state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield httpd.state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def scifact_zip(server, monkeypatch) -> bytes:
    """A small BEIR-layout scifact.zip served at /scifact.zip, registered with its own MD5."""
    data = make_zip(beir_files("scifact"))
    server.files["/scifact.zip"] = data
    monkeypatch.setitem(catalogue._BY_NAME, "scifact", replace(catalogue.get("scifact"), md5=md5(data)))
    return data


# -- download_file ---------------------------------------------------------------------------------

BLOB = bytes(range(256)) * 4000  # 1,024,000 bytes


def tries(n: int, sleep=lambda seconds: None) -> RetryPolicy:
    """``n`` attempts in all, without waiting (the waits are checked through ``sleep``)."""
    return RetryPolicy(attempts=n, base_delay=0, sleep=sleep)


def test_truncated_download_is_resumed_with_range_on_the_next_run(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    server.cut_next = 1
    dest = tmp_path / "dl" / "blob.bin"
    with pytest.raises(BeirxError, match=r"failed after 1 attempts.*blob\.bin\.part.*resumes"):
        download_file(f"{server.url}/blob.bin", dest, md5=md5(BLOB), retry=tries(1))
    part = dest.with_name("blob.bin.part")
    kept = part.stat().st_size  # what arrived before the cut, less the chunk being read when it broke
    assert 0 < kept <= len(BLOB) // 2 and not dest.exists()

    assert download_file(f"{server.url}/blob.bin", dest, md5=md5(BLOB), retry=tries(1)) == dest
    assert server.requests == [("/blob.bin", None), ("/blob.bin", f"bytes={kept}-")]
    assert dest.read_bytes() == BLOB and not part.exists()


def test_interrupted_download_is_retried_and_resumed_within_one_call(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    server.cut_next = 2
    dest = download_file(f"{server.url}/blob.bin", tmp_path / "blob.bin",
                         sha256=hashlib.sha256(BLOB).hexdigest(), retry=tries(3))
    assert dest.read_bytes() == BLOB
    ranges = [r for _, r in server.requests]
    starts = [int(r[len("bytes="):-1]) for r in ranges[1:]]
    assert ranges[0] is None and len(starts) == 2 and 0 < starts[0] < starts[1] < len(BLOB)


def test_server_ignoring_range_restarts_cleanly(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    server.honour_range = False
    server.cut_next = 1
    dest = download_file(f"{server.url}/blob.bin", tmp_path / "blob.bin", md5=md5(BLOB), retry=tries(2))
    first, second = [r for _, r in server.requests]
    assert first is None and second.startswith("bytes=") and second != "bytes=0-"  # asked to resume, got a 200
    assert dest.read_bytes() == BLOB  # restarted from byte 0, not appended


def test_complete_part_file_is_finished_after_a_416(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    (tmp_path / "blob.bin.part").write_bytes(BLOB)  # killed after the last byte, before the rename
    dest = download_file(f"{server.url}/blob.bin", tmp_path / "blob.bin", md5=md5(BLOB), retry=tries(1))
    assert dest.read_bytes() == BLOB and server.requests == [("/blob.bin", f"bytes={len(BLOB)}-")]


def test_checksum_mismatch_deletes_the_part_file(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    dest = tmp_path / "blob.bin"
    with pytest.raises(BeirxError, match=f"checksum mismatch for {server.url}/blob.bin: expected md5 {'0' * 32}, "
                                         f"got {md5(BLOB)}"):
        download_file(f"{server.url}/blob.bin", dest, md5="0" * 32, retry=tries(1))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(BeirxError, match="expected sha256"):
        download_file(f"{server.url}/blob.bin", dest, md5=md5(BLOB), sha256="f" * 64, retry=tries(1))
    assert list(tmp_path.iterdir()) == []


def test_rate_limited_download_waits_as_the_server_says_then_with_jittered_backoff(server, tmp_path):
    """A 429 is retried through the one retry policy (beirx.retry): the server's Retry-After wins; without one
    the wait is the policy's capped exponential delay with equal jitter (d/2 + U(0, d/2), d = 4 s here)."""
    server.files["/blob.bin"] = BLOB
    server.busy_next = ["7", None]
    waits: list[float] = []
    policy = RetryPolicy(attempts=3, base_delay=4.0, sleep=waits.append)
    dest = download_file(f"{server.url}/blob.bin", tmp_path / "blob.bin", md5=md5(BLOB), retry=policy)
    assert dest.read_bytes() == BLOB and len(server.requests) == 3
    assert waits[0] == 7.0 and 4.0 <= waits[1] <= 8.0  # retry 1: d = 4 * 2**1 = 8, so between 4 and 8


def test_http_404_fails_at_once(server, tmp_path):
    with pytest.raises(BeirxError, match="HTTP 404"):
        download_file(f"{server.url}/missing.zip", tmp_path / "missing.zip", retry=tries(3))
    assert len(server.requests) == 1


def test_unreachable_server_fails_at_once_with_offline_hints(tmp_path):
    """Connection refused (like a DNS failure) cannot be fixed by retrying (issue 14): one attempt, then the
    message says what to use instead."""
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(BeirxError, match=r"cannot reach .*\(connection refused\).*BEIRX_BEIR_URL.*hf:"):
        download_file(f"http://127.0.0.1:{port}/x.zip", tmp_path / "x.zip", retry=RetryPolicy(attempts=5, base_delay=60), timeout=5)


# -- safe extraction -------------------------------------------------------------------------------

def _write_zip(path: Path, entries: dict[str, bytes], symlinks=None) -> Path:
    path.write_bytes(make_zip(entries, symlinks))
    return path


def _assert_nothing_written(tmp_path: Path, target: Path) -> None:
    assert not target.exists()
    assert [p.name for p in target.parent.iterdir()] == []  # no leftover temporary folder
    assert not list(tmp_path.rglob("evil*"))


def test_zip_with_dotdot_entry_is_rejected(tmp_path):
    entries = {**beir_files("scifact"), "scifact/../../evil.txt": b"x"}
    archive = _write_zip(tmp_path / "bad.zip", entries)
    target = tmp_path / "home" / "datasets" / "scifact"
    with pytest.raises(BeirxError, match=r"refusing to extract entry 'scifact/\.\./\.\./evil\.txt'"):
        safe_extract(archive, target)
    _assert_nothing_written(tmp_path, target)


def test_zip_with_absolute_entry_is_rejected(tmp_path):
    evil = tmp_path / "evil_abs.txt"
    entries = {**beir_files("scifact"), str(evil): b"x"}
    archive = _write_zip(tmp_path / "bad.zip", entries)
    assert zipfile.ZipFile(archive).namelist()[-1].startswith("/")
    target = tmp_path / "home" / "datasets" / "scifact"
    with pytest.raises(BeirxError, match="absolute path"):
        safe_extract(archive, target)
    _assert_nothing_written(tmp_path, target)


def test_zip_with_symlink_entry_is_rejected(tmp_path):
    archive = _write_zip(tmp_path / "bad.zip", beir_files("scifact"), symlinks={"scifact/evil_link": "/etc/passwd"})
    target = tmp_path / "home" / "datasets" / "scifact"
    with pytest.raises(BeirxError, match="symbolic link"):
        safe_extract(archive, target)
    _assert_nothing_written(tmp_path, target)


def test_archive_without_beir_layout_is_rejected(tmp_path):
    entries = {k: v for k, v in beir_files("scifact").items() if "qrels" not in k}
    archive = _write_zip(tmp_path / "noqrels.zip", entries)
    target = tmp_path / "home" / "datasets" / "scifact"
    with pytest.raises(BeirxError, match=r"not a BEIR dataset archive, missing qrels/<split>\.tsv"):
        safe_extract(archive, target)
    _assert_nothing_written(tmp_path, target)


def test_flat_archive_and_corrupt_archive(tmp_path):
    flat = {name.split("/", 1)[1]: data for name, data in beir_files("x").items()}
    target = safe_extract(_write_zip(tmp_path / "flat.zip", flat), tmp_path / "out" / "flat")
    assert (target / "corpus.jsonl").is_file() and (target / MARKER).is_file()
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(BeirxError, match="not a readable zip archive"):
        safe_extract(tmp_path / "broken.zip", tmp_path / "out" / "broken")


# -- resolve_dataset -------------------------------------------------------------------------------

def test_download_extract_and_resolve(server, scifact_zip, beirx_home):
    leftover = beirx_home / "datasets" / ".scifact.extract-crashed"  # from an extraction killed earlier
    leftover.mkdir(parents=True)
    ds = resolve_dataset("scifact", base_url=server.url)
    root = beirx_home / "datasets" / "scifact"
    assert (ds.root, ds.name, ds.lang) == (root, "scifact", "en")
    assert ds.source == f"{server.url}/scifact.zip"
    assert list(ds.corpus) == ["d1", "d2"] and ds.qrels("test") == {"q1": {"d1": 1}, "q2": {"d2": 2}}
    marker = json.loads((root / MARKER).read_text())
    assert marker["md5"] == md5(scifact_zip) and marker["url"] == f"{server.url}/scifact.zip"
    assert [p.name for p in (beirx_home / "downloads").iterdir()] == ["scifact.lock"]  # zip removed, no .part

    again = resolve_dataset("scifact", base_url=server.url)
    assert again.root == root and len(server.requests) == 1  # cached: no second download


def test_concurrent_resolutions_download_once(server, scifact_zip, beirx_home):
    results, errors = [], []

    def worker():
        try:
            results.append(resolve_dataset("scifact", base_url=server.url).root)
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == [beirx_home / "datasets" / "scifact"] * 4
    assert len(server.requests) == 1


def test_cqadupstack_subsets_come_from_one_archive(server, monkeypatch, beirx_home):
    subsets = catalogue.GROUPS["cqadupstack"]
    entries = {}
    for name in subsets:
        entries.update(beir_files(name))
    data = make_zip(entries)
    server.files["/cqadupstack.zip"] = data
    for name in subsets:
        monkeypatch.setitem(catalogue._BY_NAME, name, replace(catalogue.get(name), md5=md5(data)))
    monkeypatch.setenv("BEIRX_BEIR_URL", server.url)
    android = resolve_dataset("cqadupstack/android")
    assert android.name == "cqadupstack/android"
    assert android.root == beirx_home / "datasets" / "cqadupstack" / "android"
    tex = resolve_dataset("cqadupstack/tex")
    assert tex.root == beirx_home / "datasets" / "cqadupstack" / "tex" and len(server.requests) == 1


def test_checksum_mismatch_of_a_catalogue_archive(server, beirx_home):
    server.files["/scifact.zip"] = make_zip(beir_files("scifact"))  # not the real archive: BEIR's MD5 differs
    with pytest.raises(BeirxError, match="checksum mismatch.*expected md5 5f7d1de60b170fc8027bb7898e2efca1"):
        resolve_dataset("scifact", base_url=server.url)
    assert not (beirx_home / "datasets" / "scifact").exists()
    assert [p.name for p in (beirx_home / "downloads").iterdir()] == ["scifact.lock"]


def test_unknown_dataset_name_lists_close_matches():
    with pytest.raises(BeirxError, match=r"unknown dataset 'scifcat'; did you mean: scifact"):
        resolve_dataset("scifcat")
    with pytest.raises(BeirxError, match="did you mean: webis-touche2020"):
        resolve_dataset("touche2020")


def test_local_folder_is_used_as_is(tiny_dataset, tmp_path):
    ds = resolve_dataset(str(tiny_dataset), lang="pl")
    assert (ds.root, ds.name, ds.lang) == (tiny_dataset.resolve(), "tiny", "pl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BeirxError, match="not a BEIR dataset folder: missing corpus.jsonl, queries.jsonl"):
        resolve_dataset(str(tmp_path / "empty"))
    with pytest.raises(BeirxError, match=r"holds several datasets; pass one of: .*tiny"):
        resolve_dataset(str(tmp_path))
    with pytest.raises(BeirxError, match="dataset folder ./no/such/dir not found"):
        resolve_dataset("./no/such/dir")


def test_other_language_uses_the_translated_copy_or_says_how_to_make_it(beirx_home, tiny_dataset):
    with pytest.raises(BeirxError) as err:
        resolve_dataset("scifact", lang="pl")
    assert "beirx translate --dataset scifact --lang pl" in str(err.value)
    assert "--dataset hf:clarin-knext/scifact-pl" in str(err.value)
    with pytest.raises(BeirxError) as err:
        resolve_dataset("scifact", lang="de")
    assert "beirx translate --dataset scifact --lang de" in str(err.value) and "hf:" not in str(err.value)
    with pytest.raises(BeirxError) as err:
        resolve_dataset("webis-touche2020", lang="pl")  # no confirmed BEIR-PL copy
    assert "hf:" not in str(err.value)

    import shutil
    shutil.copytree(tiny_dataset, beirx_home / "datasets" / "scifact-pl")
    ds = resolve_dataset("scifact", lang="pl")
    assert (ds.root, ds.name, ds.lang) == (beirx_home / "datasets" / "scifact-pl", "scifact", "pl")


def test_no_download_and_non_public_and_incomplete_folders(server, beirx_home):
    with pytest.raises(BeirxError, match="not in the cache .*beirx datasets --download nfcorpus"):
        resolve_dataset("nfcorpus", download=False, base_url=server.url)
    with pytest.raises(BeirxError, match="signal1m .* is not publicly downloadable.*signal-ai"):
        resolve_dataset("signal1m", base_url=server.url)
    partial = beirx_home / "datasets" / "arguana"
    partial.mkdir(parents=True)
    (partial / "corpus.jsonl").write_text("{}\n")
    with pytest.raises(BeirxError, match="arguana exists but is incomplete .*delete it"):
        resolve_dataset("arguana", base_url=server.url)
    assert server.requests == []


def test_hf_spec_loads_lazily_or_names_the_hub_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "beirx.data.hub_source", None)  # import fails as if not installed
    with pytest.raises(MissingExtraError, match=r"beirx\[hub\]"):
        resolve_dataset("hf:clarin-knext/scifact-pl", lang="pl")
    calls = []
    fake = types.ModuleType("beirx.data.hub_source")
    fake.load_hub_dataset = lambda repo, lang, revision: calls.append((repo, lang, revision)) or "loaded"
    monkeypatch.setitem(sys.modules, "beirx.data.hub_source", fake)
    assert resolve_dataset("hf:clarin-knext/scifact-pl", lang="pl") == "loaded"
    assert calls == [("clarin-knext/scifact-pl", "pl", None)]


def test_file_url_mirror(tmp_path, monkeypatch, beirx_home):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    data = make_zip(beir_files("scifact"))
    (mirror / "scifact.zip").write_bytes(data)
    monkeypatch.setitem(catalogue._BY_NAME, "scifact", replace(catalogue.get("scifact"), md5=md5(data)))
    monkeypatch.setenv("BEIRX_BEIR_URL", mirror.as_uri())
    assert resolve_dataset("scifact").root == beirx_home / "datasets" / "scifact"


def test_datasets_command_downloads(server, scifact_zip, beirx_home, capsys):
    parser = argparse.ArgumentParser()
    commands.add_arguments(parser)
    assert commands.run(parser.parse_args(["--download", "scifact", "--base-url", server.url])) == 0
    assert capsys.readouterr().out.strip() == f"scifact: {beirx_home / 'datasets' / 'scifact'}"
    assert commands.run(parser.parse_args(["--cached"])) == 0
    assert str(beirx_home / "datasets" / "scifact") in capsys.readouterr().out
