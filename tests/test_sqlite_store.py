"""The one SQLite helper: chunked ``IN`` lookups past SQLite's parameter limit, the key-value cache every get/put
cache shares, and the two answers to a damaged file (a cache is moved aside; a database holding people's work is
reported and left byte for byte as it was)."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from beirx.errors import DataError
from beirx.sqlite_store import MAX_PARAMETERS, KeyValueCache, WriteTransaction, connect, select_in


def test_select_in_returns_every_row_across_chunks_for_plain_and_row_value_keys(tmp_path):
    conn = connect(tmp_path / "t.sqlite", "test database")
    with WriteTransaction(conn):
        conn.execute("CREATE TABLE t (g TEXT, n INTEGER, s TEXT, PRIMARY KEY (g, n, s))")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(g, n, f"s{n}") for g in "ab" for n in range(1200)])
    keys = list(range(1200)) + [5000]  # three chunks of MAX_PARAMETERS - 1 keys beside g
    assert len(keys) > 2 * MAX_PARAMETERS
    rows = list(select_in(conn, "SELECT n FROM t WHERE g = ? AND n IN ({marks})", keys, ("a",)))
    assert sorted(r[0] for r in rows) == list(range(1200))
    pairs = [(n, f"s{n}") for n in range(0, 1200, 2)] + [(1, "s2")]  # (1, "s2") is no row
    rows = list(select_in(conn, "SELECT n FROM t WHERE g = 'b' AND (n, s) IN (VALUES {marks})", pairs))
    assert sorted(r[0] for r in rows) == list(range(0, 1200, 2))
    assert list(select_in(conn, "SELECT n FROM t WHERE n IN ({marks})", [])) == []


def test_key_value_cache_round_trip_replaces_and_reopens(tmp_path):
    path = tmp_path / "sub" / "kv.sqlite"
    cache = KeyValueCache(path, "test cache", "pairs", key="pair", value="score", key_type="BLOB",
                          value_type="REAL NOT NULL")
    cache.put_many({i.to_bytes(4, "big"): i / 4 for i in range(1500)})
    cache.put_many({(7).to_bytes(4, "big"): -1.0})
    cache.close()
    cache = KeyValueCache(path, "test cache", "pairs", key="pair", value="score", key_type="BLOB",
                          value_type="REAL NOT NULL")
    got = cache.get_many([i.to_bytes(4, "big") for i in range(1490, 1510)] + [(7).to_bytes(4, "big")] * 2)
    assert got == {**{i.to_bytes(4, "big"): i / 4 for i in range(1490, 1500)}, (7).to_bytes(4, "big"): -1.0}
    assert len(cache) == 1500
    assert cache._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    cache.close()


def test_a_damaged_cache_is_moved_aside_but_a_damaged_work_database_is_left_as_it_is(tmp_path, caplog):
    cache, work = tmp_path / "c.sqlite", tmp_path / "w.sqlite"
    for path in (cache, work):
        path.write_bytes(b"not a database at all " * 200)
    with caplog.at_level(logging.WARNING):
        connect(cache, "test cache").close()
    assert any("damaged test cache" in r.getMessage() and "new one" in r.getMessage() for r in caplog.records)
    assert len(list(tmp_path.glob("c.sqlite.damaged-*"))) == 1
    with pytest.raises(DataError) as raised:
        connect(work, "work database", if_damaged="restore it from a backup")
    assert "the work database is damaged (file is not a database); restore it from a backup" in str(raised.value)
    assert work.read_bytes() == b"not a database at all " * 200 and not list(tmp_path.glob("w.sqlite.*"))


def test_a_full_disk_reads_as_enospc_naming_the_file_and_keeps_earlier_commits(tmp_path):
    conn = connect(tmp_path / "full.sqlite", "test database")
    with WriteTransaction(conn):
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.execute("INSERT INTO t VALUES ('kept')")
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0] + 1}")
    with pytest.raises(OSError) as raised:
        with WriteTransaction(conn):
            conn.executemany("INSERT INTO t VALUES (?)", [("x" * 4000,)] * 50)
    assert raised.value.errno == 28 and raised.value.filename == str((tmp_path / "full.sqlite").resolve())
    assert isinstance(raised.value.__cause__, sqlite3.Error)
    assert conn.execute("SELECT x FROM t").fetchall() == [("kept",)]
