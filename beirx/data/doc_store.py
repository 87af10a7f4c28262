"""Documents by ID without loading the corpus: an on-disk index from ID to the byte offset of its line.

Why: rerankers and reports need a few hundred thousand documents by ID (the first-stage candidates), and
a dict of the whole corpus costs gigabytes for MS MARCO. The index (SQLite, ``id -> offset``, built in one
streaming pass and cached under ``$BEIRX_HOME/indexes/docstore``, keyed by the corpus file's path, size
and modification time) lets each lookup seek to the line and parse that one document. A gzip corpus cannot
be seeked, so its index keeps the JSON lines themselves (the corpus's size on disk, still not in memory).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from beirx.data.beir_io import doc_from_json, parse_record
from beirx.data.records import Doc
from beirx.errors import DataError
from beirx.sqlite_store import WriteTransaction, read_only, scratch

_FORMAT = 1
_ROWS_PER_COMMIT = 50_000


class DocStore(Mapping[str, Doc]):
    """A read-only ``Mapping[str, Doc]`` over ``corpus.jsonl[.gz]`` (as the rerankers take the corpus)."""

    def __init__(self, corpus_path: Path | str, index_dir: Path | str | None = None):
        self.path = Path(corpus_path)
        if index_dir is None:
            from beirx.data.cache import cache_dir

            index_dir = cache_dir("indexes") / "docstore"
        self.gzip = str(self.path).endswith(".gz")
        self.index_path = Path(index_dir) / f"{_index_key(self.path)}.sqlite"
        if not self.index_path.is_file():
            _build(self.path, self.index_path, self.gzip)
        self._conn = read_only(self.index_path, threads=True)
        self._file = None if self.gzip else open(self.path, "rb")
        self._len: int | None = None

    @classmethod
    def for_dataset(cls, dataset) -> DocStore:
        return cls(dataset.corpus_path)

    def _row(self, doc_id: str) -> tuple[int, str | None] | None:
        return self._conn.execute("SELECT offset, line FROM docs WHERE id = ?", (doc_id,)).fetchone()

    def __getitem__(self, doc_id: str) -> Doc:
        row = self._row(doc_id)
        if row is None:
            raise KeyError(doc_id)
        offset, line = row
        if line is None:
            self._file.seek(offset)
            line = self._file.readline()
        return doc_from_json(json.loads(line))

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self._row(doc_id) is not None

    def __len__(self) -> int:
        if self._len is None:
            self._len = self._conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
        return self._len

    def __iter__(self) -> Iterator[str]:
        """IDs in file order."""
        cursor = self._conn.execute("SELECT id FROM docs ORDER BY offset")
        while rows := cursor.fetchmany(10_000):
            yield from (r[0] for r in rows)

    def close(self) -> None:
        self._conn.close()
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> DocStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DocTexts(Sequence[str]):
    """``render(doc)`` for the documents ``ids``, read from ``store`` when indexed: a list of texts that
    never holds the corpus (dense encoding walks it in length order, a batch at a time)."""

    def __init__(self, store: DocStore, ids: Sequence[str], render: Callable[[Doc], str]):
        self.store, self.ids, self.render = store, ids, render

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.render(self.store[d]) for d in self.ids[index]]
        return self.render(self.store[self.ids[index]])


def _index_key(path: Path) -> str:
    stat = path.stat()
    ident = f"{_FORMAT}\0{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
    return hashlib.sha256(ident.encode("utf-8")).hexdigest()[:24]


def _lines(path: Path, gz: bool) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, offset or line number, raw line)`` of every non-blank line."""
    opener = gzip.open if gz else open
    with opener(path, "rb") as fh:
        offset = 0
        for number, raw in enumerate(fh, 1):
            start, offset = offset, offset + len(raw)
            if raw.strip():
                yield number, (number if gz else start), raw


def _build(path: Path, target: Path, gz: bool) -> None:
    """Stream the corpus once into a new index file, then move it into place (atomic)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        conn = scratch(tmp)  # moved into place whole once built: a crash leaves only the temporary file
        with WriteTransaction(conn):  # a full disk: OSError(ENOSPC) naming the index file, not a bare SQLite error
            conn.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, offset INTEGER NOT NULL, line TEXT) WITHOUT ROWID")
        rows: list[tuple[str, int, str | None]] = []

        def flush() -> None:
            try:
                with WriteTransaction(conn):
                    conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", rows)
            except sqlite3.IntegrityError:
                seen: set[str] = set()
                for doc_id, *_ in rows:  # which one (the batch is small); earlier batches are committed
                    if doc_id in seen or conn.execute("SELECT 1 FROM docs WHERE id = ?", (doc_id,)).fetchone():
                        raise DataError(path, f"duplicate _id {doc_id!r}", numbers[doc_id]) from None
                    seen.add(doc_id)
                raise
            rows.clear()
            numbers.clear()

        numbers: dict[str, int] = {}
        for number, offset, raw in _lines(path, gz):
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            record, problem = parse_record(text)  # the same checks as every corpus reader
            if problem:
                raise DataError(path, f"malformed corpus line: {problem}", number)
            doc_id = record["_id"]
            if number == 1 and raw.startswith(b"\xef\xbb\xbf") and not gz:
                offset += 3  # past the byte-order mark
            rows.append((doc_id, offset, text if gz else None))
            numbers[doc_id] = number
            if len(rows) >= _ROWS_PER_COMMIT:
                flush()
        if rows:
            flush()
        conn.close()
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
