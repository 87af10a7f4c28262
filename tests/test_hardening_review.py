"""Hardening battery, class 14: ``beirx review`` under hostile input and faults.

The app (a real server process, spoken to over raw HTTP): secrets that are not ASCII are clean refusals and a
non-ASCII access token works; bodies and corrections are bounded; item numbers of any size are a 404; only the
names the server was started on are answered (DNS rebinding), and a post must come from one of them (``Origin``,
else ``Referer``); a database busy with a write delays that request alone. The command: a port in use, a dataset
that does not exist and a read-only dataset folder are clear errors that print no link and give no advice that
could cost ratings. ``review apply`` swaps the data files and the log of the machine output in together (a
failure or a kill between its steps changes nothing), its JSONL keeps one record per line whatever the text,
and the dataset card calls a translation verified only while its data is the data that was reviewed.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from conftest import REPO
from hardening_helpers import small_fs_runner
from local_processes import free_port
from review_fixtures import ReviewServer, jsonl, scripted_review, write_pair
from test_verification import AGREE

from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.review import security
from beirx.review.store import ReviewStore
from extras import needs

needs("fastapi", "review")
needs("uvicorn", "review")

SAMPLE = 6
HEADERS = ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Cache-Control")


class Client:
    """One browser-like session over raw HTTP (``http.client``: every header, Host included, is as given; values
    may be bytes that are not ASCII); cookies are kept, redirects are not followed."""

    def __init__(self, port: int):
        self.port = port
        self.cookies: dict[str, str] = {}

    def send(self, method: str, path: str, fields: dict[str, str] | None = None, headers: dict | None = None,
             body=None, timeout: float = 20.0) -> tuple[int, http.client.HTTPMessage, str]:
        heads = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}
        if fields is not None:
            body = urlencode(fields).encode()
            heads["Content-Type"] = "application/x-www-form-urlencoded"
        heads.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=heads, encode_chunked=body is not None and
                         not isinstance(body, bytes))
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
        finally:
            conn.close()
        for cookie in response.headers.get_all("Set-Cookie") or []:
            name, _, value = cookie.split(";")[0].partition("=")
            self.cookies[name] = value
        return response.status, response.headers, text

    def csrf(self, path: str = "/") -> str:
        status, _, text = self.send("GET", path)
        return re.search(r'name="csrf" value="([0-9a-f]{64})"', text).group(1)

    def login(self, name: str) -> None:
        status, headers, _ = self.send("POST", "/login", {"name": name, "csrf": self.csrf()})
        assert status == 303 and headers["Location"] == "/", status

    def rate(self, position, csrf: str, extra: dict | None = None, headers: dict | None = None):
        return self.send("POST", f"/items/{position}", {"adequacy": "4", "fluency": "3", "csrf": csrf,
                                                        **(extra or {})}, headers=headers)


def _secure(headers) -> None:
    for name in HEADERS:
        assert headers[name], name


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    english, spanish = write_pair(tmp_path_factory.mktemp("hostile"))
    server = ReviewServer(spanish, "--sample", str(SAMPLE), "--seed", "1").start()
    yield spanish, server
    server.stop()


def _ratings(dataset: Path) -> int:
    store = ReviewStore.in_folder(dataset)
    try:
        return store.rating_count()
    finally:
        store.close()


# -- secrets that are not ASCII -------------------------------------------------------------------------------
def test_non_ascii_cookie_csrf_and_token_are_clean_refusals(served):
    dataset, server = served
    client = Client(server.port)
    client.login("Ana")
    csrf = client.csrf("/items/1")
    before = _ratings(dataset)
    forged = dict(client.cookies, beirx_annotator=quote("Ana\x1f") + "ñ" * 64)
    raw = "; ".join(f"{k}={v}" for k, v in forged.items()).encode()
    status, headers, _ = client.send("GET", "/items/1", headers={"Cookie": raw})  # not Ana: back to the login
    assert status == 303 and headers["Location"] == "/"
    _secure(headers)
    status, headers, text = client.send("POST", "/items/1", headers={"Cookie": raw},
                                        body=urlencode({"adequacy": "1", "fluency": "1", "csrf": csrf}).encode())
    assert status == 403 and "the form expired: reload the page" in text
    _secure(headers)
    status, headers, text = client.rate(1, "é" * 64)  # a CSRF field that is not ASCII
    assert status == 403 and "the form expired: reload the page" in text
    _secure(headers)
    assert _ratings(dataset) == before

    token = "clé-ñ-令牌"
    guarded = ReviewServer(dataset, "--token", env={"BEIRX_REVIEW_TOKEN": token}).start()
    try:
        visitor = Client(guarded.port)
        for path, cookie in ((f"/?token={quote('ñ' * 20)}", None), ("/", "beirx_access=" + "ü" * 64)):
            status, headers, text = visitor.send("GET", path, headers={"Cookie": cookie.encode()} if cookie else {})
            assert status == 401 and "access token" in text
            _secure(headers)
        # the token itself works: the printed link carries it percent-encoded, as a browser sends it
        link = re.search(r"open (http://\S+)", guarded.log.read_text()).group(1)
        assert link.endswith("/?token=" + quote(token, safe=""))
        status, headers, _ = visitor.send("GET", link.split(str(guarded.port), 1)[1])
        assert status == 303 and headers["Location"] == f"{guarded.url}/" and "beirx_access" in visitor.cookies
        status, _, text = visitor.send("GET", "/")
        assert status == 200 and 'name="csrf"' in text
    finally:
        guarded.stop()


# -- sizes ---------------------------------------------------------------------------------------------------
def test_bodies_and_corrections_are_bounded(served):
    dataset, server = served
    items = ReviewStore.in_folder(dataset).items()
    body_limit = security.BODY_LIMIT + security.ENCODED_CHAR * max(map(security.correction_limit, items))
    client = Client(server.port)
    client.login("Ben")
    csrf = client.csrf("/items/1")
    before = _ratings(dataset)
    huge = {"correction_text": "x" * (body_limit + 1)}
    status, headers, text = client.rate(1, csrf, huge)  # declared length: refused before it is read
    assert status == 413 and f"the form is larger than {body_limit} bytes, the most this review accepts: nothing " \
                              "was saved" in text
    _secure(headers)
    chunks = iter([urlencode({"adequacy": "4", "fluency": "3", "csrf": csrf}).encode() + b"&correction_text="]
                  + [b"y" * 65536] * (body_limit // 65536 + 2))
    status, _, text = client.send("POST", "/items/1", body=chunks, headers={
        "Content-Type": "application/x-www-form-urlencoded"})  # chunked: no length to check up front
    assert status == 413 and f"the form is larger than {body_limit} bytes" in text
    assert _ratings(dataset) == before

    item = items[0]
    limit = security.correction_limit(item)
    assert limit == 4 * max(len(item.source), len(item.translation)) + 2000
    title = {"correction_title": item.title} if item.title else {}
    status, _, text = client.rate(1, csrf, {"correction_text": "z" * (limit + 1 - len(item.title)), **title})
    assert status == 400 and f"the correction has {limit + 1} characters; at most {limit} are accepted for this " \
                              "item (4 times its text plus 2000): nothing was saved" in text
    assert _ratings(dataset) == before
    status, _, _ = client.rate(1, csrf, {"correction_text": "z" * (limit - len(item.title)), **title})
    assert status == 303  # at the limit: saved
    saved = ReviewStore.in_folder(dataset).rating(1, "Ben")
    assert len(saved.correction["text"]) == limit - len(item.title)


@pytest.mark.parametrize("number", ["9223372036854775808", "99999999999999999999999", "0", "-1", "7", "1e3", "٣"])
def test_item_numbers_of_any_size_are_a_404(served, number):
    dataset, server = served
    client = Client(server.port)
    client.login("Cy")
    csrf = client.csrf("/items/1")
    before = _ratings(dataset)
    for status, headers, text in (client.send("GET", f"/items/{quote(number)}"), client.rate(quote(number), csrf)):
        assert status == 404 and f"there is no item {number[:20]}" in text
        _secure(headers)
    assert _ratings(dataset) == before


# -- where requests come from --------------------------------------------------------------------------------
def test_only_the_servers_own_names_are_answered(served):
    dataset, server = served
    client = Client(server.port)
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}", f"[::1]:{server.port}", "LOCALHOST"):
        assert client.send("GET", "/", headers={"Host": host})[0] == 200, host
    before = _ratings(dataset)
    # a page on rebind.example whose name now resolves to 127.0.0.1: Host and Origin agree, both foreign
    rebound = f"rebind.example:{server.port}"
    status, headers, text = client.send("GET", "/", headers={"Host": rebound})
    assert status == 400 and "this review answers only as 127.0.0.1, localhost, [::1] (the address it was " \
                              "started on)" in text
    _secure(headers)
    client.login("Dee")
    csrf = client.csrf("/items/2")
    status, _, _ = client.rate(2, csrf, headers={"Host": rebound, "Origin": f"http://{rebound}"})
    assert status == 400
    status, _, text = client.rate(2, csrf, headers={"Origin": f"http://{rebound}"})
    assert status == 403 and "cross-site form post refused" in text
    # no Origin: the Referer decides
    status, _, text = client.rate(2, csrf, headers={"Referer": "http://attacker.example/page"})
    assert status == 403 and "cross-site form post refused" in text
    status, _, _ = client.rate(2, csrf, headers={"Referer": f"http://{rebound}/items/2"})
    assert status == 403
    assert _ratings(dataset) == before
    status, _, _ = client.rate(2, csrf, headers={"Referer": f"http://localhost:{server.port}/items/2"})
    assert status == 303 and _ratings(dataset) == before + 1


def test_a_busy_database_delays_only_the_request_that_writes(served):
    dataset, server = served
    client = Client(server.port)
    client.login("Eve")
    csrf = client.csrf("/items/3")
    writer = sqlite3.connect(ReviewStore.path_in(dataset), isolation_level=None, timeout=30)
    writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    posted: list[int] = []
    thread = threading.Thread(target=lambda: posted.append(client.rate(3, csrf)[0]))
    try:
        thread.start()
        time.sleep(1.0)  # the post is waiting for the lock
        reader = Client(server.port)
        reader.cookies = dict(client.cookies)
        start = time.monotonic()
        status, _, text = reader.send("GET", "/items/4", timeout=10)
        assert status == 200 and "Item 4 of" in text and time.monotonic() - start < 5
        assert posted == []
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        thread.join(60)
    assert posted == [303]
    assert ReviewStore.in_folder(dataset).rating(3, "Eve").adequacy == 4


# -- the command ---------------------------------------------------------------------------------------------
def test_a_port_in_use_stops_before_any_link_is_printed(tmp_path, capsys):
    english, spanish = write_pair(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code = main(["review", str(spanish), "--sample", "3", "--port", str(port)])
    printed = capsys.readouterr()
    assert code == 2
    assert f"port {port} on 127.0.0.1 is already in use (another beirx review, or another program): choose a free " \
           "one with --port" in printed.err
    assert "open http" not in printed.out and "Traceback" not in printed.err
    assert not (spanish / "review").exists()


def test_a_missing_dataset_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for missing in (tmp_path / "nowhere" / "scifact-es", "nowhere/scifact-es"):
        for argv in (["review", str(missing), "--sample", "3"], ["review", "export", str(missing)],
                     ["review", "apply", str(missing)]):
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert f"dataset folder {missing} not found" in err and "--lang" not in err, err
    assert main(["review", "scifcat-es", "--sample", "3"]) == 2
    assert "unknown dataset 'scifcat-es'" in capsys.readouterr().err


def _killed_writer(root: Path, annotator: str) -> None:
    """A process that saves a rating and is killed: the rating is only in the database's -wal file."""
    code = ("import os, sys; from beirx.review.store import ReviewStore; "
            f"s = ReviewStore.in_folder(sys.argv[1]); s.save_rating(1, {annotator!r}, 2, 2, {{}}, None); os._exit(0)")
    subprocess.run([sys.executable, "-c", code, str(root)], check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert Path(str(ReviewStore.path_in(root)) + "-wal").stat().st_size > 0


def test_a_read_only_dataset_folder_is_read_not_called_damaged(tmp_path):
    runner = small_fs_runner()
    if runner is None:
        pytest.skip("cannot mount a read-only folder here (no unprivileged namespaces, not root)")
    data = tmp_path / "data"
    _, clean = write_pair(data / "clean")
    _, killed = write_pair(data / "killed")
    for root in (clean, killed):
        scripted_review(root, AGREE)
        (root / "review" / "review.json").unlink()
    store = ReviewStore.in_folder(clean)
    store.save_rating(1, "Ana", 5, 5, {}, {"text": store.item(1).translation + " (corregido)"})
    store.close()
    _killed_writer(killed, "Cy")
    before = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    ro, out = tmp_path / "ro", tmp_path / "out"
    ro.mkdir()
    out.mkdir()
    steps = {"export-clean": ["review", "export", f"{ro}/clean/es", "--output", f"{out}/clean.json"],
             "export-killed": ["review", "export", f"{ro}/killed/es", "--output", f"{out}/killed.json"],
             "export-default": ["review", "export", f"{ro}/clean/es"],
             "serve": ["review", f"{ro}/clean/es", "--port", str(free_port())],
             "apply": ["review", "apply", f"{ro}/clean/es"]}
    script = f"set -e; mount --bind {data} {ro}; mount -o remount,ro,bind {ro}; set +e; " + \
             "".join(f"{sys.executable} -m beirx {' '.join(argv)} >{out}/{name}.out 2>{out}/{name}.err; "
                     f"echo $? >{out}/{name}.rc; " for name, argv in steps.items())
    subprocess.run([*runner, script], check=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    result = {name: (int((out / f"{name}.rc").read_text()), (out / f"{name}.err").read_text()) for name in steps}
    for name, (code, err) in result.items():
        assert "damaged" not in err and "backup" not in err and "Traceback" not in err, (name, err)
    assert result["export-clean"][0] == 0 and result["export-killed"][0] == 0, result
    assert json.loads((out / "clean.json").read_text())["annotators"] == ["Ana", "Ben"]
    assert json.loads((out / "killed.json").read_text())["annotators"] == ["Ana", "Ben", "Cy"]  # from the -wal
    assert result["export-default"][0] == 2 and "read-only file system; write elsewhere" in result["export-default"][1]
    assert result["serve"][0] == 2 and f"{ro}/clean/es/review is read-only (a read-only file system or folder): the " \
        f"review app saves every rating there, so it cannot run; the review in {ro}/clean/es/review/review.sqlite " \
        "is intact" in result["serve"][1]
    assert "open http" not in (out / "serve.out").read_text()
    assert result["apply"][0] == 2 and "read-only file system" in result["apply"][1]
    assert {p: p.read_bytes() for p in data.rglob("*") if p.is_file()} == before  # nothing written


# -- review apply ------------------------------------------------------------------------------------------------
def _corrected(tmp_path) -> tuple[Path, dict[str, bytes]]:
    """A review whose corrections change two queries and a titled document; the files before applying them."""
    from beirx.review.store import Item

    _, spanish = write_pair(tmp_path)
    dataset = BeirDataset(spanish)
    doc = dataset.corpus["d2"]
    store = ReviewStore.in_folder(spanish, create=True)
    store.create_sample([Item(1, "corpus", "d2", "random", "Pregnancy ...", doc.joined(), doc.title),
                         Item(2, "queries", "q0", "random", "Vitamin D ...", dataset.queries["q0"].text),
                         Item(3, "queries", "q1", "random", "Antibiotics ...", dataset.queries["q1"].text)],
                        {"dataset": {"path": str(spanish), "name": "toy", "lang": "es",
                                     "checksum": dataset.checksum()},
                         "source_lang": "en", "size": 3, "seed": 0, "strata": {}, "quality_report": None})
    store.save_rating(1, "Ana", 4, 4, {}, {"title": "Embarazo\u2028y tabaco", "text": "Fumar\x85daña al bebé."})
    store.save_rating(2, "Ana", 3, 4, {}, {"text": "La carencia de vitamina D\u2029es frecuente."})
    store.save_rating(3, "Ana", 4, 4, {}, {"text": "Los antibióticos no sirven contra los virus."})
    store.close()
    return spanish, _files(spanish)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith("review.sqlite")}


@pytest.mark.parametrize("fails_in", ["write_corpus", "_update_manifest", "carry_over"])
def test_apply_interrupted_between_its_steps_changes_nothing(tmp_path, monkeypatch, fails_in):
    from beirx.review import apply

    spanish, before = _corrected(tmp_path)
    target = apply.beir_io if fails_in == "write_corpus" else apply

    def broken(*args, **kwargs):
        raise OSError(5, "Input/output error (injected)")

    with monkeypatch.context() as patch:
        patch.setattr(target, fails_in, broken)
        with pytest.raises(OSError, match="injected"):
            apply.apply_corrections(BeirDataset(spanish))
    assert _files(spanish) == before  # the queries were staged, yet nothing changed
    assert sorted(p.name for p in spanish.parent.iterdir()) == ["en", "es"]  # no staging folder left
    machine = BeirDataset(spanish)
    machine = [{"text": machine.queries["q0"].text}, {"text": machine.queries["q1"].text},
               {"title": "Embarazo", "text": machine.corpus["d2"].text}]
    assert apply.apply_corrections(BeirDataset(spanish)) == {"queries": 2, "corpus": 1}  # the rerun applies all
    log = jsonl(spanish / "review" / "corrections.jsonl")
    assert [(e["field"], e["id"]) for e in log] == [("queries", "q0"), ("queries", "q1"), ("corpus", "d2")]
    assert [e["machine"] for e in log] == machine  # the record of the machine output is complete


def test_apply_killed_between_its_steps_loses_nothing(tmp_path):
    spanish, before = _corrected(tmp_path)
    code = ("import os, signal, sys; from beirx.review import apply; from beirx.data.dataset import BeirDataset\n"
            "apply._update_manifest = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
            "apply.apply_corrections(BeirDataset(sys.argv[1]))")
    killed = subprocess.run([sys.executable, "-c", code, str(spanish)], env={**os.environ, "PYTHONPATH": str(REPO)})
    assert killed.returncode == -9
    assert _files(spanish) == before
    assert main(["review", "apply", str(spanish)]) == 0
    log = jsonl(spanish / "review" / "corrections.jsonl")
    assert sorted((e["field"], e["id"]) for e in log) == [("corpus", "d2"), ("queries", "q0"), ("queries", "q1")]


def test_apply_while_the_app_runs_keeps_the_ratings_given_after_it(tmp_path, capsys):
    _, spanish = write_pair(tmp_path)
    server = ReviewServer(spanish, "--sample", str(SAMPLE), "--seed", "1").start()
    try:
        client = Client(server.port)
        client.login("Ana")
        item = ReviewStore.in_folder(spanish).item(1)
        assert client.rate(1, client.csrf("/items/1"), {"correction_text": item.translation + " (corregido)"})[0] == 303
        assert main(["review", "apply", str(spanish)]) == 0  # the folder is exchanged under the running app
        assert client.rate(2, client.csrf("/items/2"))[0] == 303
        server.kill()  # nothing gets to checkpoint or close
    finally:
        server.stop()
    store = ReviewStore.in_folder(spanish)
    assert sorted((r.position, r.annotator) for r in store.ratings()) == [(1, "Ana"), (2, "Ana")]
    assert "changed: 1 queries, 0 documents" in capsys.readouterr().out


def test_corrections_with_unicode_line_breaks_stay_one_record_per_line(tmp_path):
    from beirx.review.apply import apply_corrections

    spanish, before = _corrected(tmp_path)
    assert apply_corrections(BeirDataset(spanish)) == {"queries": 2, "corpus": 1}
    for name, records in (("queries.jsonl", 6), ("corpus.jsonl", 6), ("review/corrections.jsonl", 3)):
        text = (spanish / name).read_text(encoding="utf-8")
        assert len(text.splitlines()) == records and not {"\u2028", "\u2029", "\x85"} & set(text), name
    fresh = BeirDataset(spanish)
    assert (fresh.corpus["d2"].title, fresh.corpus["d2"].text) == ("Embarazo\u2028y tabaco", "Fumar\x85daña al bebé.")
    assert fresh.queries["q0"].text == "La carencia de vitamina D\u2029es frecuente."
    assert '"Embarazo\\u2028y tabaco"' in (spanish / "corpus.jsonl").read_text(encoding="utf-8")


# -- verification ------------------------------------------------------------------------------------------------
def test_verified_only_while_the_data_is_what_was_reviewed_or_applied(tmp_path):
    from beirx.artifacts.manifest import TranslationManifest
    from beirx.publish import verification
    from beirx.review.apply import apply_corrections

    _, spanish = write_pair(tmp_path)
    scripted_review(spanish, {"Ana": [(5, 5)] * 6 + [(4, 4)] * 6, "Ben": [(5, 4)] * 6 + [(4, 4)] * 6})
    store = ReviewStore.in_folder(spanish)
    item = store.items()[0]
    store.save_rating(item.position, "Ana", 5, 5, {}, {"text": item.translation + " (corregido)"})
    store.close()

    def label() -> verification.Verification:
        return verification.verification(spanish, BeirDataset(spanish).checksum(), True, min_items=5, min_alpha=0.0)

    assert label().sample_creation == verification.VERIFIED  # the review is of this data
    assert apply_corrections(BeirDataset(spanish)) == {"queries": 1, "corpus": 0}
    applied = TranslationManifest.load(spanish / "translation.json").corrections
    assert applied.checksum == BeirDataset(spanish).checksum()
    assert label().sample_creation == verification.VERIFIED  # ... or what applying its corrections wrote
    rows = (spanish / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    (spanish / "queries.jsonl").write_text("\n".join(rows[:-1]) + "\n", encoding="utf-8")  # changed since
    stale = label()
    assert stale.sample_creation == verification.MACHINE
    assert stale.reason == "the data changed since the human review's corrections were applied"
    needs("pyarrow", "hub")
    from beirx.data.front_matter import read_front_matter
    from beirx.publish.hub import export_dataset

    out = export_dataset(BeirDataset(spanish, lang="es"), tmp_path / "hub", repo_id="org/toy-es", min_review_items=5,
                         min_review_alpha=0.0)
    assert read_front_matter(out / "README.md")["beirx"]["sample_creation"] == "machine-translated"
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "MTEB `sample_creation`: **machine-translated** (the data changed since the human review's corrections " \
           "were applied)" in card


def test_the_names_a_review_answers_to():
    assert security.host_names("127.0.0.1") == ("127.0.0.1", "localhost", "[::1]")
    assert security.host_names("::1") == ("127.0.0.1", "localhost", "[::1]")
    assert security.host_names("192.168.1.5") == ("127.0.0.1", "localhost", "[::1]", "192.168.1.5")
    assert security.host_names("fe80::1") == ("127.0.0.1", "localhost", "[::1]", "[fe80::1]")
    assert security.host_names("Review.Example.org") == ("127.0.0.1", "localhost", "[::1]", "review.example.org")
    for wildcard in ("0.0.0.0", "::"):  # every interface: the names are unknown, the access token is required
        assert security.host_names(wildcard) is None
