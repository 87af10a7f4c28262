"""Hardening battery, class 6: caches verify themselves. A damaged entry is reported and rebuilt (never
used), giving the metrics of the clean run; concurrent processes on one BEIRX_HOME are safe."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from beirx.cli import main
from beirx.evaluate.rerankers.score_cache import PairScoreCache
from beirx.evaluate.run_cache import RunCache
from beirx.translate.backends.base import Translator
from beirx.translate.translation_memory import TranslationMemory
from conftest import write_beir
from hardening_helpers import CLEAN, CORPUS, QRELS, QUERIES, eval_cli, metrics_of, tiny_st  # noqa: F401 (a fixture)
from extras import needs

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def ds(tmp_path):
    return write_beir(tmp_path / "tiny", CORPUS, QUERIES, QRELS)


def _index_dir(home: Path) -> Path:
    [folder] = [p for p in (home / "indexes").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return folder


def _damaged(caplog, what: str) -> bool:
    return any(f"damaged {what}" in r.getMessage() and "rebuilding" in r.getMessage() or
               f"damaged {what}" in r.getMessage() and "new one" in r.getMessage() for r in caplog.records)


# -- BM25 index ---------------------------------------------------------------------------------------
def _damage_field_folder(folder):
    import shutil

    shutil.rmtree(folder / "title")


def _damage_doc_ids(folder):
    ids = json.loads((folder / "doc_ids.json").read_text())
    (folder / "doc_ids.json").write_text(json.dumps(ids[::-1]))


def _damage_truncate(folder):
    victim = max((p for p in (folder / "text").iterdir() if p.is_file()), key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])


def _damage_marker(folder):
    (folder / "COMPLETE").write_text("{not json")


def _damage_legacy_marker(folder):
    (folder / "COMPLETE").write_text(json.dumps({"retriever": "bm25"}))  # an older beirx's marker


@pytest.mark.parametrize("damage", [_damage_field_folder, _damage_doc_ids, _damage_truncate, _damage_marker,
                                    _damage_legacy_marker])
def test_damaged_bm25_index_is_rebuilt(ds, tmp_path, beirx_home, caplog, damage):
    code, first = eval_cli(ds, tmp_path / "a")
    assert code == 0 and metrics_of(first) == CLEAN and not first["system"]["description"].get("index_from_cache")
    damage(_index_dir(beirx_home))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        code, second = eval_cli(ds, tmp_path / "b")
    assert code == 0 and _damaged(caplog, "BM25 index")
    assert metrics_of(second) == CLEAN and not second["system"]["description"].get("index_from_cache")
    code, third = eval_cli(ds, tmp_path / "c")  # the rebuilt entry is sound and loads
    assert code == 0 and third["system"]["description"]["index_from_cache"] is True and metrics_of(third) == CLEAN


# -- dense embeddings ---------------------------------------------------------------------------------
def _emb_dir(home: Path) -> Path:
    [folder] = [p for p in (home / "embeddings").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return folder


def _zero(folder):
    m = np.load(folder / "embeddings.npy")
    np.save(folder / "embeddings.npy", np.zeros_like(m))


def _wrong_ids(folder):
    ids = json.loads((folder / "doc_ids.json").read_text())
    (folder / "doc_ids.json").write_text(json.dumps(ids[1:] + ids[:1]))


def _truncate_npy(folder):
    data = (folder / "embeddings.npy").read_bytes()
    (folder / "embeddings.npy").write_bytes(data[: len(data) - 200])


def _no_meta(folder):
    (folder / "meta.json").unlink()


@pytest.mark.parametrize("damage", [_zero, _wrong_ids, _truncate_npy, _no_meta])
def test_damaged_embedding_entry_is_detected_and_rebuilt(tmp_path, caplog, damage):
    """The cache API directly, with a known encoder: every kind of damage is caught before use."""
    from beirx.models.embeddings_cache import EmbeddingCache, length_order

    ids = [f"d{i}" for i in range(50)]
    texts = [f"text {i} " * (i % 7 + 1) for i in range(50)]

    def encode(batch):
        return np.array([[len(t), t.count("1") + 1.0, 3.0] for t in batch], dtype=np.float32)

    cache = EmbeddingCache(tmp_path, "tiny-model", "k1")
    order = length_order([len(t) for t in texts])
    matrix, got_ids = cache.build(ids, texts, encode, 3, 8, {"model": "m"}, order, show_progress=False)
    expected = np.array(matrix)
    assert cache.exists() and got_ids == ids
    damage(cache.folder)
    with caplog.at_level(logging.WARNING):
        assert not cache.exists()
    assert _damaged(caplog, "embedding cache") and not cache.folder.exists()
    matrix, got_ids = cache.build(ids, texts, encode, 3, 8, {"model": "m"}, order, show_progress=False)
    assert cache.exists() and got_ids == ids and np.array_equal(np.array(matrix), expected)


@pytest.mark.parametrize("damage", [_zero, _wrong_ids])
def test_damaged_embeddings_are_rebuilt(ds, tmp_path, beirx_home, caplog, tiny_st, damage):
    args = ("--retriever", "dense", "--model", str(tiny_st), "--device", "cpu")
    code, clean = eval_cli(ds, tmp_path / "a", *args)
    assert code == 0 and clean["metrics"]["NDCG@10"] > 0
    damage(_emb_dir(beirx_home))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        code, again = eval_cli(ds, tmp_path / "b", *args)
    assert code == 0 and _damaged(caplog, "embedding cache")
    assert not again["system"]["description"].get("index_from_cache")
    assert again["metrics"] == pytest.approx(clean["metrics"], abs=1e-6)
    code, third = eval_cli(ds, tmp_path / "c", *args)
    assert third["system"]["description"]["index_from_cache"] is True and third["metrics"] == pytest.approx(clean["metrics"], abs=1e-6)


# -- first-stage run cache ----------------------------------------------------------------------------
RUN = {"q1": {"d1": 2.5, "d3": 1.25}, "q2": {"d4": 3.0}, "q3": {}}


@pytest.mark.parametrize("damage", ["truncate", "edit", "sidecar", "legacy"])
def test_damaged_run_cache_is_not_used(caplog, damage):
    cache = RunCache("first-stage-tiny-en", "k" * 16)
    cache.put(RUN, {"system": {"retriever": "bm25"}})
    assert cache.get() == RUN
    if damage == "truncate":
        cache.path.write_text(cache.path.read_text()[:-20])
    elif damage == "edit":
        cache.path.write_text(cache.path.read_text().replace("2.5", "9.5"))
    elif damage == "sidecar":
        cache.meta_path.write_text('{"queries": ')
    else:
        meta = json.loads(cache.meta_path.read_text())
        del meta["integrity"]
        cache.meta_path.write_text(json.dumps(meta))
    with caplog.at_level(logging.WARNING):
        assert cache.get() is None
    assert _damaged(caplog, "cached run")
    cache.put(RUN, {"system": {"retriever": "bm25"}})  # recomputed and stored again
    assert cache.get() == RUN


# -- SQLite caches: reranker scores and the translation memory ----------------------------------------
def _fill_scores(path):
    cache = PairScoreCache(path, {"model": "m"})
    cache.put_many({i.to_bytes(16, 'big'): float(i) for i in range(2000)})
    cache.close()


@pytest.mark.parametrize("damage", ["garbage", "truncate"])
def test_damaged_score_cache_is_set_aside_and_restarted(tmp_path, caplog, damage):
    path = tmp_path / "rerank" / "ce-x.sqlite"
    _fill_scores(path)
    data = path.read_bytes()
    path.write_bytes(b"this is not a database" * 100 if damage == "garbage" else data[: len(data) // 3])
    with caplog.at_level(logging.WARNING):
        cache = PairScoreCache(path, {"model": "m"})
    assert _damaged(caplog, "reranker score cache")
    assert len(cache) == 0 and cache.get_many([b"\x01" * 16]) == {}
    cache.put_many({b"\x01" * 16: 0.5})
    assert cache.get_many([b"\x01" * 16]) == {b"\x01" * 16: 0.5}
    assert list(path.parent.glob("ce-x.sqlite.damaged-*"))  # kept for inspection, never read again


class Upper(Translator):
    name = "upper"
    max_batch_size = 8
    keeps_placeholders = True
    calls = 0

    def describe(self):
        return {"backend": "upper", "model": "upper", "revision": "1"}

    def translate_batch(self, segments):
        Upper.calls += len(segments)
        return [s.upper() for s in segments]


@pytest.mark.parametrize("damage", ["garbage", "truncate", "zero-header"])
def test_damaged_translation_memory_is_rebuilt(ds, tmp_path, caplog, damage):
    from beirx.data.dataset import BeirDataset
    from beirx.translate.pipeline import translate_dataset

    memory = tmp_path / "tm.sqlite"
    Upper.calls = 0
    with TranslationMemory(memory) as tm:
        translate_dataset(BeirDataset(ds), tmp_path / "first", Upper("en", "xx"), tm, progress=False)
    first_calls = Upper.calls
    data = memory.read_bytes()
    for side in (memory.with_name("tm.sqlite-wal"), memory.with_name("tm.sqlite-shm")):
        side.unlink(missing_ok=True)
    if damage == "garbage":
        memory.write_bytes(os.urandom(len(data)))
    elif damage == "truncate":
        memory.write_bytes(data[: len(data) // 2])
    else:
        memory.write_bytes(b"\0" * 100 + data[100:])
    with caplog.at_level(logging.WARNING):
        with TranslationMemory(memory) as tm:
            translate_dataset(BeirDataset(ds), tmp_path / "second", Upper("en", "xx"), tm, progress=False)
    assert _damaged(caplog, "translation memory")
    assert Upper.calls == 2 * first_calls  # everything translated again, nothing read from damaged pages
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "second" / name).read_bytes() == (tmp_path / "first" / name).read_bytes()


# -- concurrency and permissions ---------------------------------------------------------------------
_EVAL = """
import json, sys
from beirx.cli import main
code = main(["-q", "eval", "--dataset", sys.argv[1], "--output", sys.argv[2], "--fields", sys.argv[3]])
print(json.dumps(code))
"""


def test_concurrent_evals_on_one_home(ds, tmp_path, beirx_home):
    env = {**os.environ, "PYTHONPATH": str(REPO), "BEIRX_HOME": str(beirx_home)}
    procs = [subprocess.Popen([sys.executable, "-c", _EVAL, str(ds), str(tmp_path / f"out{i}"),
                               "flat" if i % 2 else "multifield"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(6)]
    outcomes = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [o[1][-2000:] for o in outcomes]
    assert all(o[0].strip().splitlines()[-1] == "0" and "Traceback" not in o[1] for o in outcomes)
    results = [json.loads(next((tmp_path / f"out{i}").glob("*.json")).read_text()) for i in range(6)]
    assert all(metrics_of(r) == CLEAN for r in results)
    assert len([p for p in (beirx_home / "indexes").iterdir() if p.is_dir() and not p.name.startswith(".")]) == 2


_PUBLISH = """
import sys, time
from pathlib import Path
from beirx.atomic import atomic_dir
for i in range(30):
    with atomic_dir(Path(sys.argv[1])) as tmp:
        (tmp / "a.txt").write_text(sys.argv[2])
        (tmp / "b.txt").write_text(sys.argv[2])
print("ok")
"""


def test_atomic_dir_publishers_race_safely(tmp_path):
    target = tmp_path / "entry"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", _PUBLISH, str(target), str(i)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [o[0].strip() for o in outs] == ["ok"] * 4, [o[1][-1500:] for o in outs]
    a, b = (target / "a.txt").read_text(), (target / "b.txt").read_text()
    assert a == b  # one publisher's complete folder, never a mix
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".entry.")]


def _modes(root: Path) -> tuple[set[int], set[int]]:
    files = {p.stat().st_mode & 0o777 for p in root.rglob("*") if p.is_file() and not p.name.endswith(".lock")}
    dirs = {p.stat().st_mode & 0o777 for p in root.rglob("*") if p.is_dir()}
    return files, dirs


@pytest.mark.parametrize("umask,file_mode,dir_mode", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)])
def test_created_files_honour_the_umask(ds, tmp_path, beirx_home, umask, file_mode, dir_mode):
    needs("pyarrow", "hub")
    from beirx.data.dataset import BeirDataset
    from beirx.publish.hub import export_dataset

    export_dataset(BeirDataset(ds), tmp_path / "hub-copy")  # before the umask: only beirx's own writes are checked
    old = os.umask(umask)
    try:
        code, _ = eval_cli(ds, tmp_path / "out")
        assert main(["eval", "--dataset", f"hf:{tmp_path / 'hub-copy'}", "--output", str(tmp_path / "out")]) == 0
        from beirx.atomic import atomic_dir, write_json

        write_json(tmp_path / "extra" / "x.json", {"a": 1})
        with atomic_dir(tmp_path / "extra" / "folder") as tmp:
            (tmp / "f.txt").write_text("x")
    finally:
        os.umask(old)
    assert code == 0
    for root in (tmp_path / "out", beirx_home, tmp_path / "extra"):
        files, dirs = _modes(root)
        assert files == {file_mode}, (root, sorted(map(oct, files)))
        assert dirs <= {dir_mode}, (root, sorted(map(oct, dirs)))
