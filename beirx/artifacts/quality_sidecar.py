"""The per-row sidecar ``rows.jsonl`` as a file: written with its digest, read back verified.

``quality.json`` records what the sidecar held when it was written (:class:`Sidecar`): its lines and their
SHA-256, and the same for each field's block of lines (a field's rows are together, fields in the report's
order), so a reader that wants only the queries' rows verifies them and stops there, without reading the corpus
lines after them. Every reader goes through :func:`read`: a sidecar cut short (even at a line boundary), with
lines added, changed or out of order, a line that is not UTF-8 or not JSON, or a score that is no finite number
stops with the file and line named, never with fewer rows than the report describes.

A report of format 5 or older recorded no digest; its sidecar (one line per scored item, so each field's
``pairs``) is checked by those counts and by every line's syntax, which catches a file cut short or damaged,
though not a value changed in place; a one-line warning says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from beirx.artifacts.base import fld
from beirx.atomic import atomic_writer
from beirx.errors import DataError

log = logging.getLogger(__name__)

FILENAME = "rows.jsonl"


@dataclass(kw_only=True)
class FieldRows:
    """One field's block of lines in the sidecar."""

    rows: int = fld("its lines")
    sha256: str = fld("SHA-256 of those lines' bytes")


@dataclass(kw_only=True)
class Sidecar:
    """What the per-row sidecar held when ``quality.json`` was written, for readers to verify it against."""

    file: str = fld("the sidecar's name, beside quality.json")
    rows: int = fld("its lines (one per row)")
    sha256: str = fld("SHA-256 of the whole file")
    fields: dict[str, FieldRows] = fld("each field's block of lines, in the file's order")


class SidecarWriter:
    """Writes sidecar records to a binary file handle and keeps their digest (:meth:`digest`)."""

    def __init__(self, fh: IO[bytes]):
        self.fh = fh
        self.whole = hashlib.sha256()
        self.fields: dict[str, tuple[int, Any]] = {}
        self.current: str | None = None
        self.not_finite = 0

    def write(self, row: dict) -> None:
        field = row["field"]
        if field != self.current:
            if field in self.fields:
                raise ValueError(f"the rows of field {field!r} must be written together")
            self.fields[field] = (0, hashlib.sha256())
            self.current = field
        scores = row["scores"]
        if any(isinstance(v, float) and not math.isfinite(v) for v in scores.values()):
            # a method's NaN is "no value" everywhere else (distributions, ranks): the file says so, as JSON can
            self.not_finite += 1
            row = {**row, "scores": {k: None if isinstance(v, float) and not math.isfinite(v) else v
                                     for k, v in scores.items()}}
        line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
        self.fh.write(line)
        self.whole.update(line)
        count, digest = self.fields[field]
        digest.update(line)
        self.fields[field] = (count + 1, digest)

    def digest(self) -> Sidecar:
        if self.not_finite:
            log.warning("%d rows had a score that is not a finite number (NaN or infinite): recorded as no answer",
                        self.not_finite)
        fields = {name: FieldRows(rows=count, sha256=digest.hexdigest()) for name, (count, digest) in self.fields.items()}
        return Sidecar(file=FILENAME, rows=sum(f.rows for f in fields.values()), sha256=self.whole.hexdigest(),
                       fields=fields)


def write(path: Path, rows: Iterable[dict]) -> Sidecar:
    """Write ``rows`` (each field's together) to the sidecar ``path`` atomically; returns its digest."""
    with atomic_writer(path, binary=True) as fh:
        writer = SidecarWriter(fh)
        for row in rows:
            writer.write(row)
    return writer.digest()


def read(path: Path, digest: Sidecar | None = None, fields: Iterable[str] | None = None,
         counts: Mapping[str, int] | None = None) -> Iterator[dict]:
    """Stream the records of ``fields`` (default all) from the sidecar ``path``, verified against ``digest`` (what
    quality.json recorded) or, for a report that recorded none, against ``counts`` (rows per field). Reading stops
    once the wanted fields' rows have passed (each verified at its end), so the queries' rows of an MS MARCO report
    are read without the 8.8M passages' lines after them. Any problem raises :class:`DataError` naming the file
    and line; a consumer sees it before it has seen the last row it asked for."""
    wanted = None if fields is None else set(fields)
    expected = ({name: (f.rows, f.sha256) for name, f in digest.fields.items()} if digest is not None
                else {name: (n, None) for name, n in counts.items()} if counts is not None else None)
    return _Reader(Path(path), digest, expected, wanted).rows()


def verify(path: Path, digest: Sidecar | None = None, counts: Mapping[str, int] | None = None) -> None:
    """Check the whole sidecar ``path`` against ``digest`` before a command uses it: its bytes hashed and lines
    counted in large blocks (a few seconds for the 8.8M rows of MS MARCO), and only when that fails (or for a report
    that recorded no digest, checked against ``counts``) read line by line, for the file and line to name. Raises
    :class:`DataError`."""
    path = Path(path)
    if digest is not None:
        try:
            fh = open(path, "rb")
        except OSError:
            fh = None  # the reader below names the problem
        if fh is not None:
            whole, lines, last = hashlib.sha256(), 0, b"\n"
            with fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    whole.update(block)
                    lines += block.count(b"\n")
                    last = block[-1:]
            if last == b"\n" and lines == digest.rows and whole.hexdigest() == digest.sha256:
                return
    for _ in read(path, digest, None, counts):
        pass


class _Reader:
    def __init__(self, path: Path, digest: Sidecar | None, expected: dict[str, tuple[int, str | None]] | None,
                 wanted: set[str] | None):
        self.path, self.digest, self.expected, self.wanted = path, digest, expected, wanted
        self.done: list[str] = []

    def rows(self) -> Iterator[dict]:
        try:
            fh = open(self.path, "rb")
        except OSError as exc:
            raise DataError(self.path, f"cannot read the per-row quality scores ({exc.strerror or exc}); "
                                       "quality.json's rows are in this file beside it: copy it along, or run "
                                       "beirx quality again") from None
        whole = hashlib.sha256()
        current, count, block = None, 0, hashlib.sha256()
        number = 0
        with fh:
            for number, raw in enumerate(fh, 1):
                row = self._parse(raw, number)
                if row["field"] != current:
                    if current is not None:
                        self._close(current, count, block, number - 1)
                        if self.wanted is not None and self.wanted <= set(self.done):
                            return
                    current, count, block = self._open(row["field"], number)
                count += 1
                block.update(raw)
                whole.update(raw)
                if self.expected is not None and count > self.expected[current][0]:
                    raise DataError(self.path, f"more {current} rows than the {self.expected[current][0]} quality.json "
                                               "records: lines were added after beirx quality wrote the file; run "
                                               "beirx quality again", line=number)
                if self.wanted is None or current in self.wanted:
                    yield row
            if current is not None:
                self._close(current, count, block, number)
        self._finish(number, whole)

    def _parse(self, raw: bytes, number: int) -> dict:
        if not raw.endswith(b"\n"):
            raise DataError(self.path, "the last line stops in the middle (no line end): the file is cut short; "
                                       "copy it again or run beirx quality again", line=number)
        try:
            row: Any = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise DataError(self.path, f"not valid UTF-8 (byte {exc.start + 1} of the line): not a rows.jsonl written "
                                       "by beirx quality (a binary file?)", line=number) from None
        except ValueError as exc:
            raise DataError(self.path, f"not valid JSON: {exc}", line=number) from None
        check_record(row, self.path, number)
        return row

    def _open(self, field: str, number: int) -> tuple[str, int, Any]:
        if field in self.done:
            raise DataError(self.path, f"a {field} row after the rows of {self.done[-1]}: each field's rows must be "
                                       "together, as beirx quality writes them", line=number)
        if self.expected is not None and field not in self.expected:
            raise DataError(self.path, f"field {field!r} is not one quality.json records rows of "
                                       f"({', '.join(self.expected) or 'none'})", line=number)
        return field, 0, hashlib.sha256()

    def _close(self, field: str, count: int, block: Any, last: int) -> None:
        self.done.append(field)
        if self.expected is None:
            return
        rows, sha256 = self.expected[field]
        if count < rows:
            raise DataError(self.path, f"the {field} rows end after {count} of the {rows} quality.json records: the "
                                       "file lost lines (cut short or edited); copy it again or run beirx quality "
                                       "again", line=last)
        if sha256 is not None and block.hexdigest() != sha256:
            raise DataError(self.path, f"the {field} rows (lines {last - count + 1}-{last}) differ from what "
                                       "quality.json records (their SHA-256): the file was changed after beirx "
                                       "quality wrote it; copy it again or run beirx quality again", line=last)

    def _finish(self, number: int, whole: Any) -> None:
        if self.expected is None:
            return
        missing = [name for name in self.expected if name not in self.done and self.expected[name][0]]
        if missing and (self.wanted is None or self.wanted & set(missing)):
            total = sum(rows for rows, _ in self.expected.values())
            raise DataError(self.path, f"the file ends after line {number}, but quality.json records {total} rows "
                                       f"(no {', '.join(missing)} rows here): it is cut short; copy it again or run "
                                       "beirx quality again", line=number or None)
        if self.wanted is None and self.digest is not None and whole.hexdigest() != self.digest.sha256:
            raise DataError(self.path, "the file differs from what quality.json records (its SHA-256): it was "
                                       "changed after beirx quality wrote it; copy it again or run beirx quality "
                                       "again")


def check_record(row: Any, path: Path | str, number: int) -> None:
    """A sidecar record's shape: ``field`` and ``id`` strings, ``flags`` a list of strings, ``rank`` and every
    score a finite number or null; a problem raises :class:`DataError` naming the file, line and field."""
    if not (isinstance(row, dict) and isinstance(row.get("field"), str) and isinstance(row.get("id"), str)
            and isinstance(row.get("flags"), list) and isinstance(row.get("scores"), dict)):
        raise DataError(path, "expected an object with 'field', 'id', 'flags', 'rank' and 'scores'", line=number)
    if not all(isinstance(flag, str) for flag in row["flags"]):
        raise DataError(path, f"field 'flags' of {row['id']!r} must list reasons (strings), got {row['flags']!r}",
                        line=number)
    row.setdefault("rank", None)
    for name, value in [("rank", row["rank"]), *((f"scores.{k}", v) for k, v in row["scores"].items())]:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataError(path, f"field {name!r} of {row['id']!r} is {json.dumps(value, ensure_ascii=False)}, not a "
                                  "number (or null for no answer)", line=number)
        if not math.isfinite(value):
            raise DataError(path, f"field {name!r} of {row['id']!r} is {value}: a score must be a finite number (or "
                                  "null for no answer)", line=number)
