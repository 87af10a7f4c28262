"""Runs: ``{query_id: {doc_id: score}}``, ranked and written as TREC run files.

Ranking order everywhere in beirx is pytrec_eval's (trec_eval's): score descending, then document ID
descending (string comparison) among equal scores. Using the evaluator's own order when writing ranks,
truncating to a cut-off and computing beirx's extra metrics means a run file, its metrics and a
re-evaluation of that file with ``trec_eval`` all agree even when scores tie.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Container
from pathlib import Path

from beirx.atomic import atomic_writer
from beirx.data.beir_io import read_lines
from beirx.data.ids import id_problem
from beirx.errors import DataError
from beirx.speedups import native

Run = dict[str, dict[str, float]]


def ranked(doc_scores: dict[str, float]) -> list[tuple[str, float]]:
    """``(doc_id, score)`` in evaluation order: score descending, then doc ID descending."""
    return sorted(doc_scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def truncate(run: Run, k: int) -> Run:
    """The top ``k`` documents per query in evaluation order."""
    return {qid: dict(ranked(docs)[:k]) for qid, docs in run.items()}


def run_checksum(run: Run) -> str:
    """SHA-256 over ``query<TAB>doc<TAB>repr(score)`` lines, queries sorted, documents in evaluation order: two
    runs share it exactly when they rank the same documents with the same scores (whatever file they came from)."""
    digest = hashlib.sha256()
    for qid in sorted(run):
        for did, score in ranked(run[qid]):
            digest.update(f"{qid}\t{did}\t{score!r}\n".encode())
    return "sha256:" + digest.hexdigest()


def drop_identical_ids(run: Run) -> Run:
    """Remove documents whose ID equals the query's ID (BEIR's and MTEB's ``ignore_identical_ids``).

    Needed where queries are themselves corpus documents (ArguAna, Quora): otherwise every query
    retrieves itself at rank 1.
    """
    return {qid: {did: s for did, s in docs.items() if did != qid} for qid, docs in run.items()}


def write_trec(path: Path | str, run: Run, tag: str = "beirx") -> None:
    """Write ``qid Q0 docid rank score tag`` lines atomically, queries in run order, ranks from 1.

    Scores are written with ``repr`` so that reading the file back gives the identical floats (and so
    identical ties and metrics). With the compiled extension each query's lines are sorted and formatted
    in one C call (``trec_lines``: the same order and the same ``repr``), which matters for 300k+ lines.
    """
    tag = tag.replace(" ", "_") or "beirx"
    with atomic_writer(path) as fh:
        for qid, docs in run.items():
            lines = native.trec_lines(qid, docs, tag) if native is not None and isinstance(qid, str) else None
            fh.write(lines if lines is not None else _trec_lines(qid, docs, tag))


def _trec_lines(qid: str, docs: dict[str, float], tag: str) -> str:
    """Pure-Python twin of ``beirx._speedups.trec_lines``."""
    return "".join(f"{qid} Q0 {did} {rank} {float(score)!r} {tag}\n" for rank, (did, score) in enumerate(ranked(docs), 1))


def read_trec(path: Path | str, queries: Container[str] | None = None) -> Run:
    """Read a TREC run file (6 whitespace-separated columns); errors name the file and line.

    ``queries``: keep only these query IDs (the file is still read and checked whole, but memory holds only
    their lines, e.g. a subset's 50 queries out of a 7M-line run)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "run file not found" if not path.exists() else "expected a run file, found a folder")
    run: Run = {}
    seen = False  # lines of queries left out
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        cols = line.split()
        if len(cols) != 6:
            raise DataError(path, f"expected 6 columns 'qid Q0 docid rank score tag', got {len(cols)}", line_no)
        qid, _, did, _, score, _ = cols
        problem = id_problem(qid) or id_problem(did)
        if problem:
            raise DataError(path, problem, line_no)
        try:
            value = float(score)
        except ValueError:
            raise DataError(path, f"score is not a number: {score!r}", line_no) from None
        if not math.isfinite(value):
            raise DataError(path, f"score must be a finite number, got {score!r}", line_no)
        if queries is not None and qid not in queries:
            seen = True
            continue
        docs = run.setdefault(qid, {})
        if did in docs:
            raise DataError(path, f"document {did!r} appears twice for query {qid!r}", line_no)
        docs[did] = value
    if not run and not seen:
        raise DataError(path, "run file is empty")
    return run
