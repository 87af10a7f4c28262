"""Run by tests/test_hardening_disk.py inside a private mount namespace with a small tmpfs at ``MNT``.

    python hardening_disk_driver.py MNT SOURCE_DATASET TINY_DATASET WIDE_DATASET MODEL OUT_JSON

Every step calls ``beirx.cli.main`` in this one process (so torch is imported once) and records its exit code
and stderr; the test reads ``OUT_JSON``. Space is made and freed with ``mount -o remount,size=...`` and a
filler file, exactly as a disk fills up and is cleaned.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

MNT, SOURCE, TINY, WIDE, MODEL, OUT = (Path(a) for a in sys.argv[1:7])
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from beirx.cli import main  # noqa: E402


def run(argv: list[str]) -> dict:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(argv)
    return {"code": code, "err": err.getvalue(), "out": out.getvalue()}


def run_process(argv: list[str]) -> dict:
    """A command in a process of its own, as a user reruns it (a translation lease of this process would look
    held by a live run to a rerun in the same process)."""
    done = subprocess.run([sys.executable, "-m", "beirx", *argv], capture_output=True, text=True, timeout=300)
    return {"code": done.returncode, "err": done.stderr, "out": done.stdout}


def remount(options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(MNT)], check=True)


def fill(leave_kb: int) -> None:
    """A filler file that leaves about ``leave_kb`` KB free."""
    free = os.statvfs(MNT).f_bavail * os.statvfs(MNT).f_frsize
    with open(MNT / "filler", "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, max(0, free - leave_kb * 1024))


def rows(db: Path) -> tuple[int, str]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0], \
            conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


result: dict = {}

# 1. translate: the translation memory's disk fills mid-run, then space is freed and the same command resumes
os.environ["BEIRX_HOME"] = str(MNT / "home")
memory = MNT / "home" / "memory.sqlite"
translate = ["translate", "--dataset", str(SOURCE), "--lang", "es", "--translator", "apertium", "--no-quality",
             "--batch-size", "10", "--memory", str(memory), "--output", str(OUT.parent / "es")]
remount("size=256k")
result["translate_full"] = run_process(translate)
result["memory_after_full"] = rows(memory) if memory.exists() else None
remount("size=16m")
result["translate_resumed"] = run_process(translate)

# 2. dense eval: the embedding matrix's disk is full (a memory-mapped write would die with SIGBUS)
def dense(name: str) -> list[str]:
    return ["eval", "--dataset", str(WIDE), "--retriever", "dense", "--model", str(MODEL), "--device", "cpu",
            "--batch-size", "16", "--output", str(OUT.parent / name)]


result["dense_clean"] = run(dense("dense-clean"))  # builds the document store and the embeddings
for entry in (MNT / "home" / "embeddings").iterdir():
    subprocess.run(["rm", "-rf", str(entry)], check=True)
fill(leave_kb=8)  # room for the matrix's header page, not for its rows
result["dense_full"] = run(dense("dense-full"))
(MNT / "filler").unlink()
result["dense_resumed"] = run(dense("dense-resumed"))

# 3. read-only: an output folder, then the cache folder, on a read-only file system
(MNT / "ro-out").mkdir()
remount("ro")
result["readonly_output"] = run(["eval", "--dataset", str(TINY), "--output", str(MNT / "ro-out" / "results")])
os.environ["BEIRX_HOME"] = str(MNT / "ro-home")
result["readonly_home"] = run(["eval", "--dataset", str(TINY), "--output", str(OUT.parent / "bm25")])
result["files_after_readonly"] = sorted(p.name for p in MNT.iterdir())

OUT.write_text(json.dumps(result), encoding="utf-8")
