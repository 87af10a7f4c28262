"""End to end with the real Apertium engine on real SciFact slices, through ``python -m beirx translate``:
validation against the source, SIGKILL mid-run then resume with identical bytes, two runs on one memory,
shards then assembly with identical bytes, and assembly refusing a missing or half-done shard.

A slice is the first N SciFact documents, the queries judged on them and those judgements (written to a
temp folder: SciFact is CC BY-NC and never copied into the repository). The end-to-end run takes 50
documents in one batch; the kill and concurrency runs take 20 documents in batches of 30 segments (about
8 batches), so there is a mid-run to kill without making the tests slow.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beirx.artifacts import TranslationManifest
from beirx.data.validate import validate_dataset
from conftest import REPO, write_beir

pytestmark = pytest.mark.skipif(shutil.which("apertium") is None, reason="the apertium engine is not installed "
                                "(apt install apertium apertium-eng-spa)")
BATCH = "30"
FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/train.tsv")


def make_slice(scifact_dir: Path, root: Path, n_docs: int) -> Path:
    from beirx.translate.backends.apertium import installed_modes

    if "eng-spa" not in installed_modes():
        pytest.skip("Apertium pair eng-spa is not installed (apt install apertium-eng-spa)")
    docs = []
    with open(scifact_dir / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            docs.append(json.loads(line))
            if len(docs) == n_docs:
                break
    ids = {d["_id"] for d in docs}
    qrels = {}
    for split in ("test", "train"):
        rows = [line.split("\t") for line in (scifact_dir / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]]
        qrels[split] = [(q, d, int(s)) for q, d, s in rows if d in ids]
    judged = {q for rows in qrels.values() for q, _, _ in rows}
    queries = [json.loads(line) for line in (scifact_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    return write_beir(root, docs, [q for q in queries if q["_id"] in judged], qrels)


@pytest.fixture(scope="module")
def scifact50(scifact_dir, tmp_path_factory) -> Path:
    return make_slice(scifact_dir, tmp_path_factory.mktemp("scifact") / "scifact50", 50)


@pytest.fixture(scope="module")
def scifact_slice(scifact_dir, tmp_path_factory) -> Path:
    return make_slice(scifact_dir, tmp_path_factory.mktemp("scifact") / "scifact20", 20)


def command(src: Path, out: Path, memory: Path, batch: str | None = BATCH, *extra: str) -> list[str]:
    return [sys.executable, "-m", "beirx", "translate", "--dataset", str(src), "--lang", "es", "--translator",
            "apertium", "--output", str(out), "--memory", str(memory), "--no-quality", "--no-progress", "-q",
            *(["--batch-size", batch] if batch else []), *extra]


def env(home: Path) -> dict[str, str]:
    return {**os.environ, "BEIRX_HOME": str(home), "PYTHONPATH": str(REPO)}


def manifest(out: Path) -> TranslationManifest:
    return TranslationManifest.load(out / "translation.json")


@pytest.fixture(scope="module")
def reference(scifact_slice, tmp_path_factory) -> Path:
    """An uninterrupted run of the command that the kill and concurrency tests run."""
    base = tmp_path_factory.mktemp("reference")
    out = base / "out"
    subprocess.run(command(scifact_slice, out, base / "tm.sqlite"), env=env(base), check=True, timeout=120)
    return out


def test_translates_real_scifact_and_validates(scifact50, tmp_path):
    reference = tmp_path / "out"
    subprocess.run(command(scifact50, reference, tmp_path / "tm.sqlite", batch=None), env=env(tmp_path),
                   check=True, timeout=120)
    report = validate_dataset(reference, against=scifact50)
    assert report.ok, report.errors
    src = [json.loads(x) for x in (scifact50 / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    out = [json.loads(x) for x in (reference / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [d["_id"] for d in out] == [d["_id"] for d in src]
    assert all(o["text"] != s["text"] for o, s in zip(out, src))
    words = " ".join(o["text"] for o in out).split()
    assert words.count("de") > 200 and words.count("the") < 20  # Spanish now
    assert sum("*" in w for w in words) < 10  # unknown-word marks dropped (-u)
    m = manifest(reference)
    assert m.model == "eng-spa" and m.revision.startswith("sha256:")
    assert m.counts["translated"] == m.counts["segments_unique"] > 400 and m.counts["batches"] <= 2
    assert m.source.checksum.startswith("sha256:") and m.backend == "apertium" and m.format == 2


def test_sigkill_mid_run_then_resume_gives_identical_bytes(scifact_slice, reference, tmp_path):
    out, memory = tmp_path / "out", tmp_path / "tm.sqlite"
    proc = subprocess.Popen(command(scifact_slice, out, memory), env=env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    rows = 0
    deadline = time.time() + 60
    while rows == 0 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if memory.exists():
            try:
                with sqlite3.connect(memory, timeout=5) as conn:
                    rows = conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
            except sqlite3.OperationalError:  # tables not created yet
                rows = 0
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert not (out / "corpus.jsonl").exists()
    with sqlite3.connect(memory) as conn:
        done = conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
    assert done > 0 and done % int(BATCH) == 0  # whole batches only

    assert len(list(tmp_path.glob(".beirx-segments-*"))) == 1  # the killed run's scratch segment store

    subprocess.run(command(scifact_slice, out, memory), env=env(tmp_path), check=True, timeout=120)
    assert not list(tmp_path.glob(".beirx-segments-*"))  # removed by the next run (its PID is gone)
    counts = manifest(out).counts
    assert counts["from_memory"] == done
    assert counts["translated"] == counts["segments_unique"] - done  # only what was missing
    for name in FILES:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


def test_two_concurrent_runs_share_one_memory(scifact_slice, reference, tmp_path):
    memory = tmp_path / "tm.sqlite"
    procs = [subprocess.Popen(command(scifact_slice, tmp_path / f"out{i}", memory), env=env(tmp_path))
             for i in (1, 2)]
    assert [p.wait(120) for p in procs] == [0, 0]
    unique = manifest(reference).counts["segments_unique"]
    with sqlite3.connect(memory) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0] == unique
    translated = 0
    for i in (1, 2):
        counts = manifest(tmp_path / f"out{i}").counts
        assert counts["from_memory"] + counts["translated"] == unique
        translated += counts["translated"]
        for name in FILES:
            assert (tmp_path / f"out{i}" / name).read_bytes() == (reference / name).read_bytes(), name
    assert translated == unique  # leases: together the two runs translated each unique segment exactly once


def test_shards_then_assemble_give_the_single_process_bytes(scifact_slice, reference, tmp_path):
    out, memory = tmp_path / "out", tmp_path / "tm.sqlite"
    for shard in ("1/3", "2/3", "3/3"):
        subprocess.run(command(scifact_slice, out, memory, BATCH, "--shard", shard), env=env(tmp_path), check=True,
                       timeout=120)
        assert not out.exists()  # a shard writes only its memory
    assert sorted(p.name for p in tmp_path.glob("tm.shard-*")) == [f"tm.shard-{i}-of-3.sqlite" for i in (1, 2, 3)]
    hashes = []
    for i in (1, 2, 3):
        with sqlite3.connect(tmp_path / f"tm.shard-{i}-of-3.sqlite") as conn:
            hashes.append({h for (h,) in conn.execute("SELECT hash FROM segments")})
    assert all(hashes) and len(set().union(*hashes)) == sum(map(len, hashes))  # three disjoint, non-empty shares
    main = manifest(reference).counts
    subprocess.run(command(scifact_slice, out, memory, BATCH, "--assemble"), env=env(tmp_path), check=True, timeout=120)
    for name in FILES:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    counts = manifest(out).counts
    assert counts["segments_unique"] == main["segments_unique"]
    assert counts["from_memory"] + counts["translated"] == main["segments_unique"]
    assert counts["from_memory"] >= sum(map(len, hashes))  # assembly translates only the placeholder fallbacks
    assert manifest(out).options.shards == 3


def test_assemble_names_a_missing_or_half_done_shard_and_writes_nothing(scifact_slice, tmp_path):
    out, memory = tmp_path / "out", tmp_path / "tm.sqlite"
    subprocess.run(command(scifact_slice, out, memory, BATCH, "--shard", "1/2"), env=env(tmp_path), check=True,
                   timeout=120)
    proc = subprocess.run(command(scifact_slice, out, memory, BATCH, "--assemble", "2"), env=env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "shard 2/2" in proc.stderr and "tm.shard-2-of-2.sqlite does not exist" in proc.stderr
    assert "shard 1/2" not in proc.stderr.replace("--shard I/2", "")
    assert not out.exists()

    # shard 2 killed half-way: its memory holds some batches, not all
    shard2 = tmp_path / "tm.shard-2-of-2.sqlite"
    proc = subprocess.Popen(command(scifact_slice, out, memory, BATCH, "--shard", "2/2"), env=env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows, deadline = 0, time.time() + 60
    while rows == 0 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
        try:
            with sqlite3.connect(shard2, timeout=5) as conn:
                rows = conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
        except sqlite3.OperationalError:
            rows = 0
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL, "the shard finished before it could be killed"
    proc = subprocess.run(command(scifact_slice, out, memory, BATCH, "--assemble"), env=env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "shard 2/2 is incomplete" in proc.stderr and "tm.shard-2-of-2.sqlite" in proc.stderr
    assert "shard 1/2 is incomplete" not in proc.stderr and "--shard 2/2" in proc.stderr
    assert not out.exists()
