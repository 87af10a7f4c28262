"""Hardening battery, class 12: a full disk, a read-only output, and SIGKILL during ``translate --assemble``.

A full disk (ENOSPC) during translate or encode stops with exit code 2 and a message naming the disk as full and
the file being written -- never advice to delete a cache or the translation memory -- and never a SIGBUS through
the memory-mapped embedding matrix; everything already written stays intact and the same command resumes once
space is freed. A read-only output or cache folder is a clear error before any work. A kill during
``--assemble`` leaves the old output or the complete new one.

The real conditions run on a small tmpfs in a private mount namespace (``unshare -Urm``, or as root) where that
is allowed; the same failures are also injected at the write layer, so they are covered everywhere.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from beirx.cli import main
from conftest import write_beir
from hardening_helpers import CORPUS, QRELS, QUERIES, eval_cli, small_fs_runner, tiny_st  # noqa: F401 (a fixture)

HERE = Path(__file__).resolve().parent
APERTIUM = pytest.mark.skipif(shutil.which("apertium") is None, reason="the apertium engine is not installed")
FULL = "the disk is full while writing"


def _no_delete_advice(err: str) -> None:
    assert "Traceback" not in err and "delete" not in err and "damaged" not in err, err


def _slice(scifact_dir: Path, root: Path, n: int) -> Path:
    """The first ``n`` SciFact documents with the queries judged on them (real, varied sentences)."""
    docs = [json.loads(line) for line in (scifact_dir / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:n]]
    ids = {d["_id"] for d in docs}
    rows = [line.split("\t") for line in (scifact_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    qrels = [(q, d, int(s)) for q, d, s in rows if d in ids]
    judged = {q for q, _, _ in qrels}
    queries = [json.loads(line) for line in (scifact_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    return write_beir(root, docs, [q for q in queries if q["_id"] in judged], {"test": qrels})


def _wide(root: Path) -> Path:
    words = ["cats", "dogs", "mice", "whales", "birds", "animals", "ocean", "hunt", "loyal", "small", "sing", "fly"]
    corpus = [{"_id": f"d{i}", "title": words[i % 12], "text": " ".join(words[(i * j) % 12] for j in range(1, 9))}
              for i in range(200)]
    queries = [{"_id": f"q{k}", "text": f"{words[k]} {words[(k + 5) % 12]}"} for k in range(12)]
    return write_beir(root, corpus, queries, {"test": [(f"q{k}", f"d{k}", 1) for k in range(12)]})


# -- a real small disk --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def on_small_disk(tmp_path_factory, scifact_dir, tiny_st):
    """Runs tests/hardening_disk_driver.py on a tmpfs of its own; its recorded steps."""
    runner = small_fs_runner()
    if runner is None:
        pytest.skip("this system allows no private tmpfs mount (unshare -Urm, or root): see the injected cases")
    if shutil.which("apertium") is None:
        pytest.skip("the apertium engine is not installed")
    root = tmp_path_factory.mktemp("disk")
    source, tiny = _slice(scifact_dir, root / "scifact30", 30), write_beir(root / "tiny", CORPUS, QUERIES, QRELS)
    wide, mnt, out = _wide(root / "wide"), root / "mnt", root / "result.json"
    mnt.mkdir()
    script = (f"mount -t tmpfs -o size=16m tmpfs {mnt} && {sys.executable} {HERE / 'hardening_disk_driver.py'} "
              f"{mnt} {source} {tiny} {wide} {tiny_st} {out}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)])}
    done = subprocess.run([*runner, script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]  # never a signal (SIGBUS: -7) or a traceback
    steps = json.loads(out.read_text())
    steps["root"] = root
    return steps


def test_full_disk_during_translate_keeps_the_memory_and_resumes(on_small_disk):
    full, again = on_small_disk["translate_full"], on_small_disk["translate_resumed"]
    assert full["code"] == 2 and FULL in full["err"] and "rerun the same command" in full["err"]
    _no_delete_advice(full["err"])
    kept, integrity = on_small_disk["memory_after_full"]
    assert kept > 0 and integrity == "ok"  # batches committed before the disk filled are intact
    assert again["code"] == 0 and f"{kept} from memory" in again["out"]
    root = on_small_disk["root"]
    assert main(["translate", "--dataset", str(root / "scifact30"), "--lang", "es", "--translator", "apertium",
                 "--no-quality", "--batch-size", "10", "--memory", str(root / "clean.sqlite"),
                 "--output", str(root / "es-clean")]) == 0
    assert _state(root / "es") == _state(root / "es-clean")  # byte-identical to an uninterrupted run


def test_full_disk_under_the_embedding_matrix_is_an_error_not_a_sigbus(on_small_disk):
    clean, full, again = (on_small_disk[k] for k in ("dense_clean", "dense_full", "dense_resumed"))
    assert clean["code"] == 0
    assert full["code"] == 2 and f"{FULL} " in full["err"] and "embeddings.npy" in full["err"], full["err"]
    _no_delete_advice(full["err"])
    assert again["code"] == 0
    root = on_small_disk["root"]
    [a], [b] = (list((root / name).glob("*.json")) for name in ("dense-clean", "dense-resumed"))
    assert json.loads(a.read_text())["metrics"] == json.loads(b.read_text())["metrics"]


def test_read_only_output_and_cache_folders(on_small_disk):
    output, home = on_small_disk["readonly_output"], on_small_disk["readonly_home"]
    assert output["code"] == 2 and "cannot write there" in output["err"] and "read-only file system" in output["err"]
    assert home["code"] == 2 and "read-only file system; write elsewhere" in home["err"], home["err"]
    assert "Traceback" not in output["err"] + home["err"]
    assert on_small_disk["files_after_readonly"] == ["home", "ro-out"]  # nothing written, nothing lost


# -- the same failures, injected at the write layer (every system) ----------------------------------------------
@pytest.fixture
def ds(tmp_path):
    return write_beir(tmp_path / "tiny", CORPUS, QUERIES, QRELS)


def test_no_space_to_reserve_the_matrix_is_named_and_the_rerun_completes(ds, tmp_path, monkeypatch, capsys, tiny_st):
    args = ("--retriever", "dense", "--model", str(tiny_st), "--device", "cpu")
    real = os.posix_fallocate

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    assert eval_cli(ds, tmp_path / "a", *args)[0] == 2
    err = capsys.readouterr().err
    assert FULL in err and "embeddings.npy" in err and "free on that file system" in err
    _no_delete_advice(err)
    monkeypatch.setattr(os, "posix_fallocate", real)
    code, results = eval_cli(ds, tmp_path / "b", *args)
    code_clean, clean = eval_cli(ds, tmp_path / "c", *args, "--no-index-cache")
    assert code == code_clean == 0 and results["metrics"] == clean["metrics"]


def test_a_full_disk_while_indexing_the_corpus_names_the_index_file(ds, tmp_path, monkeypatch, capsys, tiny_st,
                                                                    beirx_home):
    """The corpus's ID index (beirx.data.doc_store), built before encoding: SQLite's "database or disk is full"
    (a one-page limit stands in for the disk) is a full disk naming the file, and the rerun completes."""
    real = sqlite3.connect

    def one_page(path, *a, **kw):
        conn = real(path, *a, **kw)
        if str(path).endswith(".tmp"):  # the index being built
            conn.execute("PRAGMA max_page_count = 1")
        return conn

    args = ("--retriever", "dense", "--model", str(tiny_st), "--device", "cpu")
    monkeypatch.setattr(sqlite3, "connect", one_page)
    assert eval_cli(ds, tmp_path / "a", *args)[0] == 2
    err = capsys.readouterr().err
    assert f"{FULL} {beirx_home / 'indexes' / 'docstore'}/." in err and "rerun the same command" in err, err
    _no_delete_advice(err)
    monkeypatch.setattr(sqlite3, "connect", real)
    code, results = eval_cli(ds, tmp_path / "b", *args)
    assert code == 0 and results["metrics"]


def test_a_full_database_rolls_back_one_batch_and_names_the_file(tmp_path):
    """SQLite's "database or disk is full" (its page limit stands in for the disk) in a translation memory."""
    from beirx.translate.translation_memory import TranslationMemory

    path = tmp_path / "memory.sqlite"
    with TranslationMemory(path) as memory:
        system = memory.register({"backend": "x"}, "en", "es")
        memory.add(system, [("a", "b")])
        pages = memory._conn.execute("PRAGMA page_count").fetchone()[0]
        memory._conn.execute(f"PRAGMA max_page_count = {pages + 1}")
        with pytest.raises(OSError) as caught:
            memory.add(system, [(f"segment {i} " * 40, "x" * 400) for i in range(200)])
        assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
        assert memory.count(system) == 1  # the earlier batch is there, the failed one entirely absent
    from beirx.cli.errors import describe

    message = describe(caught.value)
    assert message.startswith(f"{FULL} {path} (no space left on device;") and "resumes" in message
    _no_delete_advice(message)
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# -- SIGKILL during translate --assemble -----------------------------------------------------------------------
KILLER = """
import os, signal, sys
sys.path[:0] = sys.argv[2:4]
import beirx.atomic as atomic
from beirx.cli import main
where, real_publish, real_exchange = sys.argv[1], atomic.publish_dir, atomic._exchange
def publish(tmp, target):
    if where == "staging":  # every new file written beside the old output, none swapped in yet
        os.kill(os.getpid(), signal.SIGKILL)
    real_publish(tmp, target)
def exchange(a, b):
    swapped = real_exchange(a, b)
    os.kill(os.getpid(), signal.SIGKILL)  # swapped in; the old version not yet deleted
atomic.publish_dir, atomic._exchange = publish, exchange
sys.exit(main(sys.argv[4:]))
"""


def _state(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
            and p.name != "translation.json"} if folder.is_dir() else {}


@APERTIUM
def test_sigkill_during_assemble_leaves_the_old_output_or_the_complete_new_one(ds, tmp_path):
    memory, out = tmp_path / "tm" / "memory.sqlite", tmp_path / "es"
    base = ["translate", "--dataset", str(ds), "--lang", "es", "--translator", "apertium", "--no-quality",
            "--memory", str(memory)]
    for fields in ("queries", "corpus,queries"):
        for shard in ("1/2", "2/2"):
            assert main([*base, "--fields", fields, "--shard", shard]) == 0
        if fields == "queries":
            assert main([*base, "--fields", fields, "--assemble", "--output", str(out)]) == 0
            old = _state(out)
            old_manifest = json.loads((out / "translation.json").read_text())
    assert main([*base, "--output", str(tmp_path / "single")]) == 0  # the same translation in one process
    new = _state(tmp_path / "single")
    assert old != new and old["queries.jsonl"] == new["queries.jsonl"]
    killer = [sys.executable, "-c", KILLER]
    paths = [str(HERE.parent), str(HERE)]
    assemble = [*base, "--assemble", "--output", str(out)]
    for where, expected in (("staging", old), ("swapped", new)):
        done = subprocess.run([*killer, where, *paths, *assemble], capture_output=True, text=True, timeout=300)
        assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
        assert _state(out) == expected, where
        manifest = json.loads((out / "translation.json").read_text())
        assert (manifest == old_manifest) == (where == "staging")  # the manifest always matches the files
    assert main(assemble) == 0 and _state(out) == new
