"""Where a review lives: ``<translated dataset>/review/review.sqlite``.

One SQLite file holds the sample (drawn once, so every annotator and every restart sees the same items in
the same order) and every rating. WAL journal with ``synchronous = FULL``: several annotators (server
threads) write at once without blocking readers, and a rating is on disk when the page says it is saved, so
a killed server loses nothing already submitted. A rating is one row per (item, annotator), replaced when
the annotator changes their mind. Unlike a cache, a damaged file is reported, never moved aside or rebuilt:
it holds people's work. A review in a folder this process cannot write (a read-only file system or folder) is
opened read-only (:attr:`ReviewStore.read_only`): it can be exported and applied, not rated.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.artifacts.base import utc_now
from beirx.errors import BeirxError
from beirx.sqlite_store import Database, WriteTransaction, connect

FILENAME = "review.sqlite"
FOLDER = "review"  # in the translated dataset's folder, beside review.json
BUSY_TIMEOUT_S = 30.0
#: MQM-lite error categories an annotator can mark (Lommel et al., 2014, the MQM core, reduced to what a
#: retrieval benchmark's reader would notice), each as minor or major.
ERROR_CATEGORIES = {
    "mistranslation": "a word or phrase means something else",
    "omission": "part of the source is missing",
    "addition": "the translation adds something the source does not say",
    "untranslated": "left in the source language",
    "terminology": "a domain term is wrong or inconsistent",
    "grammar": "grammar, spelling or punctuation",
    "other": "anything else",
}
SEVERITIES = ("minor", "major")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    position INTEGER PRIMARY KEY, field TEXT NOT NULL, id TEXT NOT NULL, stratum TEXT NOT NULL,
    source TEXT NOT NULL, translation TEXT NOT NULL, title TEXT NOT NULL, scores TEXT NOT NULL,
    UNIQUE (field, id));
CREATE TABLE IF NOT EXISTS ratings (
    position INTEGER NOT NULL REFERENCES items(position), annotator TEXT NOT NULL,
    adequacy INTEGER NOT NULL CHECK (adequacy BETWEEN 1 AND 5), fluency INTEGER NOT NULL CHECK (fluency BETWEEN 1 AND 5),
    errors TEXT NOT NULL, correction TEXT, created TEXT NOT NULL, updated TEXT NOT NULL,
    PRIMARY KEY (position, annotator));
"""
_ITEMS = "SELECT position, field, id, stratum, source, translation, title, scores FROM items"
_RATINGS = "SELECT position, annotator, adequacy, fluency, errors, correction, updated FROM ratings"


@dataclass(frozen=True)
class Item:
    """One sampled pair. Documents are shown as ``title + " " + text`` (``title`` is the translated title,
    kept apart so a correction can be written back to the right field)."""

    position: int
    field: str
    id: str
    stratum: str
    source: str
    translation: str
    title: str = ""
    scores: dict[str, float | None] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class StoredRating:
    position: int
    annotator: str
    adequacy: int
    fluency: int
    errors: dict[str, str]
    correction: dict[str, str] | None  # {"text": ..., "title": ...} (title only for titled documents)
    updated: str


class ReviewStore(Database):
    """The review database of one translated dataset; safe to share between threads of one process
    (one connection per thread: :meth:`close` closes the calling thread's) and between processes (SQLite locking)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._local = threading.local()
        #: the folder or the file cannot be written (SQLite would need to create its -wal and -shm files there)
        self.read_only = self.path.is_file() and not (os.access(self.path.parent, os.W_OK)
                                                      and os.access(self.path, os.W_OK))
        conn = self._conn
        if not self.read_only:
            with WriteTransaction(conn):
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    conn.execute(statement)

    @staticmethod
    def path_in(dataset_root: Path | str) -> Path:
        return Path(dataset_root) / FOLDER / FILENAME

    @classmethod
    def storage_problem(cls, dataset_root: Path | str) -> str | None:
        """Why ratings of the review of ``dataset_root`` cannot be stored (None: they can), found by trying: a
        file created and removed in the review folder (or, before the first review, the folder it will be made
        in), and the database opened for writing. Permissions alone can answer wrongly (root, a read-only mount,
        a network file system), so nothing is inferred from them."""
        import tempfile

        path = cls.path_in(dataset_root)
        folder = path.parent
        while not folder.is_dir() and folder != folder.parent:
            folder = folder.parent
        try:
            handle, probe = tempfile.mkstemp(prefix=".beirx-write-probe-", dir=folder)
            os.close(handle)
            os.unlink(probe)
            if path.is_file():
                with path.open("r+b"):
                    pass
        except OSError as exc:
            return exc.strerror or str(exc)
        return None

    @classmethod
    def in_folder(cls, dataset_root: Path | str, create: bool = False) -> ReviewStore:
        """The review of the dataset in ``dataset_root`` (``create``: start one when there is none)."""
        path = cls.path_in(dataset_root)
        if not path.is_file():
            if not create:
                raise BeirxError(f"{dataset_root} has no review yet ({path} not found): start one with "
                                 f"beirx review {dataset_root} --sample N")
            path.parent.mkdir(parents=True, exist_ok=True)
        return cls(path)

    @property
    def _conn(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use by :func:`beirx.sqlite_store.connect` with ``synchronous =
        FULL``; read-only where the folder cannot be written (SQLite reads ratings a killed server left in the -wal
        file)."""
        if getattr(self._local, "conn", None) is None:
            if not self.path.exists() and not os.access(self.path.parent, os.W_OK):
                raise BeirxError(f"{self.path.parent} is read-only (a read-only file system or folder): a review "
                                 "cannot be started there; copy the dataset to a writable place and review the copy")
            self._local.conn = connect(self.path, "review database", timeout=BUSY_TIMEOUT_S, synchronous="FULL",
                                       threads=True, read_only=self.read_only,
                                       if_damaged="it holds submitted ratings, so beirx leaves it as it is: restore "
                                                  "it from a backup")
            if not self.read_only:
                self._local.conn.execute("PRAGMA foreign_keys = ON")
        return self._local.conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- the sample ---------------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._conn.execute("SELECT key, value FROM meta")}

    def create_sample(self, items: list[Item], meta: dict[str, Any]) -> None:
        """Store the drawn sample and its description (once: a review's items never change under it)."""
        conn = self._conn
        with WriteTransaction(conn):
            if self.size():
                raise BeirxError(f"{self.path} already holds a sample")
            conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [(i.position, i.field, i.id, i.stratum, i.source, i.translation, i.title,
                               json.dumps(i.scores)) for i in items])
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             [(k, json.dumps(v)) for k, v in {**meta, "secret": secrets.token_hex(32)}.items()])

    def items(self) -> list[Item]:
        return [_item(row) for row in self._conn.execute(f"{_ITEMS} ORDER BY position")]

    def item(self, position: int) -> Item | None:
        row = self._conn.execute(f"{_ITEMS} WHERE position = ?", (position,)).fetchone()
        return _item(row) if row else None

    def size(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]

    # -- ratings --------------------------------------------------------------------------------------------
    def save_rating(self, position: int, annotator: str, adequacy: int, fluency: int, errors: dict[str, str],
                    correction: dict[str, str] | None) -> None:
        """Insert or replace ``annotator``'s rating of item ``position``; committed (and synced) on return."""
        stamp = utc_now()
        conn = self._conn
        with WriteTransaction(conn):
            conn.execute(
                "INSERT INTO ratings VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (position, annotator) DO UPDATE SET "
                "adequacy = excluded.adequacy, fluency = excluded.fluency, errors = excluded.errors, "
                "correction = excluded.correction, updated = excluded.updated",
                (position, annotator, adequacy, fluency, json.dumps(errors, sort_keys=True),
                 None if correction is None else json.dumps(correction, ensure_ascii=False), stamp, stamp))

    def rating(self, position: int, annotator: str) -> StoredRating | None:
        row = self._conn.execute(f"{_RATINGS} WHERE position = ? AND annotator = ?", (position, annotator)).fetchone()
        return _rating(row) if row else None

    def ratings(self) -> list[StoredRating]:
        return [_rating(row) for row in self._conn.execute(f"{_RATINGS} ORDER BY position, annotator")]

    def rated_positions(self, annotator: str) -> set[int]:
        return {p for (p,) in self._conn.execute("SELECT position FROM ratings WHERE annotator = ?", (annotator,))}

    def rating_count(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]


def _item(row) -> Item:
    return Item(*row[:7], scores=json.loads(row[7]))


def _rating(row) -> StoredRating:
    return StoredRating(*row[:4], json.loads(row[4]), None if row[5] is None else json.loads(row[5]), row[6])
