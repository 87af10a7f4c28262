"""Several runs started at the same moment on a fresh translation memory must all open it (WAL switch race)."""

from __future__ import annotations

import multiprocessing as mp

from beirx.translate.translation_memory import TranslationMemory


def _open_and_register(path, barrier, results):
    barrier.wait()
    try:
        with TranslationMemory(path) as memory:
            memory.register({"backend": "test"}, "en", "es")
        results.put("ok")
    except Exception as exc:  # reported to the parent, which asserts on it
        results.put(repr(exc))


def test_simultaneous_opens_of_a_new_memory_all_succeed(tmp_path):
    ctx = mp.get_context("fork")
    outcomes = []
    for round_ in range(15):
        path = tmp_path / f"tm{round_}.sqlite"
        barrier, results = ctx.Barrier(3), ctx.Queue()
        procs = [ctx.Process(target=_open_and_register, args=(path, barrier, results)) for _ in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        outcomes += [results.get(timeout=5) for _ in procs]
    assert outcomes == ["ok"] * 45
