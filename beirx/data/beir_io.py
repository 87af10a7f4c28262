"""Read and write BEIR folders: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv`` (``.jsonl.gz`` too).

Readers stream, so a corpus larger than memory can be walked with :func:`iter_corpus`. Every malformed
line raises :class:`~beirx.errors.DataError` naming the file and the 1-based line, or, when an ``errors``
list is passed (validation), is recorded there and skipped so that one pass reports every problem.
Writers are atomic: they write a temp file beside the target and rename it, so a crash never leaves a
half-written file where a complete one was.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from beirx.atomic import atomic_writer
from beirx.data.ids import INT32, id_problem, text_problem
from beirx.data.records import Doc, Qrels, Query
from beirx.errors import DataError

log = logging.getLogger(__name__)

QRELS_HEADER = ("query-id", "corpus-id", "score")


def find_file(root: Path, stem: str) -> Path | None:
    """``root/stem.jsonl`` or ``root/stem.jsonl.gz``, whichever exists.

    Both present is ambiguous unless they hold the same text (then the plain file is used): which one a
    tool picks would otherwise decide the numbers silently.
    """
    plain, packed = root / f"{stem}.jsonl", root / f"{stem}.jsonl.gz"
    for path in (plain, packed):
        if path.exists() and not path.is_file():
            raise DataError(path, "expected a file, found a folder or special file")
    if plain.is_file() and packed.is_file():
        if not _same_text(plain, packed):
            raise DataError(root, f"both {plain.name} and {packed.name} exist and differ: delete the one that is "
                                  "not the dataset")
        return plain
    for path in (plain, packed):
        if path.is_file():
            return path
    return None


_SAME_TEXT: dict[tuple, bool] = {}  # (path, size, mtime_ns) of both files -> verdict: each path lookup asks


def _same_text(plain: Path, packed: Path) -> bool:
    key = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in (plain, packed))
    if key not in _SAME_TEXT:
        _SAME_TEXT[key] = _hash_text(plain, open) == _hash_text(packed, gzip.open)
    return _SAME_TEXT[key]


def _hash_text(path: Path, opener) -> bytes:
    import hashlib

    h = hashlib.sha256()
    try:
        with opener(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(path, f"cannot read ({exc})") from exc
    return h.digest()


def open_text(path: Path, mode: str = "r") -> IO[str]:
    """Open plain or gzip text as UTF-8 (BEIR files are UTF-8; a BOM is tolerated)."""
    if str(path).endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, mode + "b"), encoding="utf-8-sig" if "r" in mode else "utf-8")
    return open(path, mode, encoding="utf-8-sig" if "r" in mode else "utf-8", newline="")


def _fail(errors: list[DataError] | None, err: DataError) -> None:
    if errors is None:
        raise err
    errors.append(err)


class _SeenIds:
    """Duplicate-ID detection in 8 bytes per record: a process-local 64-bit hash of each ID in an array.

    A set of the ID strings costs ~90 bytes per record (0.8 GB for MS MARCO's 8.8M passages), the largest
    thing a streaming reader would otherwise hold. Equal hashes are found by sorting once at the end of the
    file; only then is the file read again to compare the candidate IDs exactly (so a hash collision can
    never report a false duplicate) and to name the line of each real duplicate.
    """

    def __init__(self) -> None:
        from array import array

        self.hashes = array("q")

    def add(self, doc_id: str) -> None:
        self.hashes.append(hash(doc_id))

    def duplicates(self, path: Path) -> list[tuple[int, str]]:
        """``(line_no, id)`` of every record whose ID appeared on an earlier line."""
        import numpy as np

        hashes = np.frombuffer(self.hashes, dtype=np.int64)
        ordered = np.sort(hashes)
        repeated = set(ordered[1:][ordered[1:] == ordered[:-1]].tolist())
        if not repeated:
            return []
        found, first = [], set()
        for line_no, line in read_lines(path):
            try:
                obj = json.loads(line) if line.strip() else None
            except (json.JSONDecodeError, RecursionError):
                continue
            raw_id = obj.get("_id") if isinstance(obj, dict) else None
            if raw_id is None or hash(str(raw_id)) not in repeated:
                continue
            if str(raw_id) in first:
                found.append((line_no, str(raw_id)))
            first.add(str(raw_id))
        return found


def parse_record(line: str, require_text: bool = True) -> tuple[dict | None, str | None]:
    """One JSON line of a corpus or queries file: ``(record with a string '_id', None)`` or ``(None, what is
    wrong)`` -- JSON, object, '_id', 'text' and 'title' types, the ID rule, lone surrogates. Every reader of
    these files checks records with it (the streaming readers here, the document store's index)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return None, "JSON nested too deeply"
    if not isinstance(obj, dict):
        return None, "expected a JSON object"
    raw_id = obj.get("_id")
    if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
        return None, "missing '_id'"
    if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool):
        return None, f"'_id' must be a string, got {type(raw_id).__name__}"
    if require_text and not isinstance(obj.get("text"), str):
        return None, ("missing 'text'" if "text" not in obj
                      else f"'text' must be a string, got {type(obj['text']).__name__}")
    title = obj.get("title", "")
    if title is not None and not isinstance(title, str):
        return None, f"'title' must be a string, got {type(title).__name__}"
    doc_id = str(raw_id)
    problem = id_problem(doc_id)
    if problem is None and "\\u" in line:  # lone surrogates can only arrive as JSON escapes
        problem = text_problem(obj.get("text") or "", title or "")
    if problem:
        return None, problem
    obj["_id"] = doc_id
    return obj, None


def iter_json_records(path: Path, errors: list[DataError] | None, require_text: bool = True,
                      unique: bool = True) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_no, obj)`` for each valid record; check JSON, ``_id``, ``text`` and, when ``unique``,
    duplicate IDs (reported when the file has been read, see :class:`_SeenIds`: 8 bytes a record, so a reader
    whose memory must not grow with the file, such as the review sampler, leaves that check to validation)."""
    seen = _SeenIds() if unique else None
    any_line = False
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        any_line = True
        obj, problem = parse_record(line, require_text)
        if problem:
            _fail(errors, DataError(path, problem, line_no))
            continue
        if seen is not None:
            seen.add(obj["_id"])
        yield line_no, obj
    if not any_line:
        _fail(errors, DataError(path, "file is empty"))
    for line_no, doc_id in seen.duplicates(path) if seen is not None else ():
        _fail(errors, DataError(path, f"duplicate _id {doc_id!r}", line_no))


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line_no, line)`` of a UTF-8 text file (plain or gzip; a leading BOM is dropped).

    Lines are split as bytes and decoded one by one, so a decoding error names its exact line; gzip
    and I/O failures also become :class:`DataError` with the line being read.
    """
    line_no = 0
    try:
        with (gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")) as fh:
            for line_no, raw in enumerate(fh, 1):
                if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                yield line_no, raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not valid UTF-8 ({exc.reason} at byte {exc.start} of the line); re-encode the "
                              "file as UTF-8", line_no) from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise DataError(path, f"compressed data is truncated or not gzip ({exc or type(exc).__name__}); "
                              "download or write the file again", line_no + 1) from exc
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror or exc}", line_no + 1) from exc


def iter_corpus(path: Path, errors: list[DataError] | None = None, unique: bool = True) -> Iterator[Doc]:
    """Stream the documents of a ``corpus.jsonl[.gz]`` file."""
    for _, obj in iter_json_records(Path(path), errors, unique=unique):
        yield doc_from_json(obj)


def doc_from_json(obj: dict) -> Doc:
    """A corpus line's object as a :class:`Doc` (the ID as a string, a missing title empty)."""
    return Doc(id=str(obj["_id"]), text=obj["text"], title=obj.get("title") or "", metadata=obj.get("metadata") or {})


def iter_queries(path: Path, errors: list[DataError] | None = None, unique: bool = True) -> Iterator[Query]:
    """Stream the queries of a ``queries.jsonl[.gz]`` file."""
    for _, obj in iter_json_records(Path(path), errors, unique=unique):
        yield Query(id=obj["_id"], text=obj["text"], metadata=obj.get("metadata") or {})


def read_qrels(path: Path, errors: list[DataError] | None = None) -> Qrels:
    """Read a BEIR qrels TSV (``query-id  corpus-id  score`` with a header line) into pytrec_eval's dict.

    A first line whose score column is not an integer is taken as the header. Conflicting duplicate rows
    are errors; identical duplicates are logged and kept once.
    """
    path = Path(path)
    qrels: Qrels = {}
    rows = 0
    if not path.is_file():
        raise DataError(path, "qrels file not found" if not path.exists() else "expected a file, found a folder")

    for line_no, line in read_lines(path):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        cols = line.split("\t")
        if line_no == 1 and len(cols) == 3 and not _is_int(cols[2]):
            continue  # header
        if len(cols) != 3:
            _fail(errors, DataError(path, f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(cols)}", line_no))
            continue
        qid, did, score = cols[0], cols[1], cols[2].strip()
        if not qid or not did:
            _fail(errors, DataError(path, "empty query-id or corpus-id", line_no))
            continue
        problem = id_problem(qid) or id_problem(did)
        if problem:
            _fail(errors, DataError(path, problem, line_no))
            continue
        if not _is_int(score):
            _fail(errors, DataError(path, f"score must be an integer, got {score!r}", line_no))
            continue
        rel = int(score)
        if not INT32[0] <= rel <= INT32[1]:
            _fail(errors, DataError(path, f"score {rel} does not fit a 32-bit integer (pytrec_eval's relevance)",
                                    line_no))
            continue
        prev = qrels.setdefault(qid, {}).get(did)
        if prev is not None and prev != rel:
            _fail(errors, DataError(path, f"conflicting duplicate judgement for ({qid}, {did}): {prev} and {rel}", line_no))
            continue
        if prev is not None:
            log.warning("%s:%d: duplicate judgement for (%s, %s) kept once", path, line_no, qid, did)
        qrels[qid][did] = rel
        rows += 1
    if rows == 0:
        _fail(errors, DataError(path, "qrels file has no judgements"))
    return qrels


def _is_int(value: str) -> bool:
    try:
        int(value.strip())
        return True
    except ValueError:
        return False


def doc_to_json(doc: Doc) -> dict:
    obj = {"_id": doc.id, "title": doc.title, "text": doc.text}
    if doc.metadata:
        obj["metadata"] = doc.metadata
    return obj


def query_to_json(query: Query) -> dict:
    obj = {"_id": query.id, "text": query.text}
    if query.metadata:
        obj["metadata"] = query.metadata
    return obj


#: characters JSON leaves raw that line-based readers (``str.splitlines``, JavaScript, many editors) take for a
#: line break; escaped, so every record stays on one line for every reader
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def jsonl_line(obj: Any) -> str:
    """``obj`` as one JSON Lines record (UTF-8 text, ending in a newline, no other line break in it)."""
    return json.dumps(obj, ensure_ascii=False).translate(_LINE_BREAKS) + "\n"


def _write_jsonl(path: Path, objs: Iterable[dict]) -> int:
    count = 0
    with atomic_writer(path, gzip_=str(path).endswith(".gz")) as fh:
        for obj in objs:
            fh.write(jsonl_line(obj))
            count += 1
    return count


def write_corpus(path: Path, docs: Iterable[Doc]) -> int:
    """Write documents atomically; returns the number written."""
    return _write_jsonl(Path(path), (doc_to_json(d) for d in docs))


def write_queries(path: Path, queries: Iterable[Query]) -> int:
    """Write queries atomically; returns the number written."""
    return _write_jsonl(Path(path), (query_to_json(q) for q in queries))


def write_qrels(path: Path, qrels: Qrels) -> None:
    """Write a BEIR qrels TSV with header, queries and documents in insertion order."""
    with atomic_writer(Path(path)) as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(QRELS_HEADER)
        for qid, docs in qrels.items():
            for did, rel in docs.items():
                writer.writerow((qid, did, rel))
