"""Validate a BEIR folder, and check that a translated copy kept every ID and the qrels.

Errors (the dataset cannot be trusted): malformed JSON, missing ``_id``/``text``, duplicate IDs, empty
files, bad qrels columns or scores, and, with a source dataset, any ID or qrels difference.
Warnings (reported with counts, never silently dropped): qrels pointing at documents or queries the
dataset does not contain — upstream BEIR has such cases (ArguAna has a judged document missing from
its corpus) — and empty texts.
"""

from __future__ import annotations

import filecmp
from dataclasses import dataclass, field
from pathlib import Path

from beirx.data import beir_io
from beirx.errors import DataError


@dataclass
class ValidationReport:
    path: Path
    errors: list[DataError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return {"path": str(self.path), "ok": self.ok, "counts": self.counts,
                "errors": [str(e) for e in self.errors], "warnings": self.warnings}


def _ids_in_order(path: Path, errors: list[DataError]) -> tuple[list[str], int]:
    """IDs in file order and the number of records whose text and title are both empty."""
    ids, empty = [], 0
    for obj in beir_io.iter_json_records(path, errors):
        ids.append(obj[1]["_id"])
        empty += not (obj[1].get("text") or "").strip() and not (obj[1].get("title") or "").strip()
    return ids, empty


def validate_dataset(root: Path | str, against: Path | str | None = None) -> ValidationReport:
    """Check ``root``; with ``against`` (the source dataset) also check IDs and qrels are identical."""
    root = Path(root)
    report = ValidationReport(root)
    if not root.is_dir():
        report.errors.append(DataError(root, "dataset folder not found"))
        return report
    ids: dict[str, list[str]] = {}
    for stem in ("corpus", "queries"):
        path = beir_io.find_file(root, stem)
        if path is None:
            report.errors.append(DataError(root / f"{stem}.jsonl", f"{stem} file not found"))
            continue
        ids[stem], empty = _ids_in_order(path, report.errors)
        report.counts[stem] = len(ids[stem])
        if empty:
            report.warnings.append(f"{path.name}: {empty} records have empty text and title")

    qrels_files = sorted((root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
    if not qrels_files:
        report.errors.append(DataError(root / "qrels", "no qrels/<split>.tsv files"))
    doc_set, query_set = set(ids.get("corpus", [])), set(ids.get("queries", []))
    for path in qrels_files:
        qrels = beir_io.read_qrels(path, report.errors)
        pairs = [(q, d) for q, docs in qrels.items() for d in docs]
        report.counts[f"qrels/{path.stem}"] = len(pairs)
        report.counts[f"qrels/{path.stem} queries"] = len(qrels)
        if "corpus" in ids:
            unknown_docs = sorted({d for _, d in pairs if d not in doc_set})
            if unknown_docs:
                n_rows = sum(d not in doc_set for _, d in pairs)
                report.warnings.append(f"{path.name}: {n_rows} judgements point at {len(unknown_docs)} documents "
                                       f"missing from the corpus (e.g. {unknown_docs[0]!r}); they count as unretrievable")
        if "queries" in ids:
            unknown_q = sorted(q for q in qrels if q not in query_set)
            if unknown_q:
                report.warnings.append(f"{path.name}: {len(unknown_q)} judged queries are missing from the queries "
                                       f"file (e.g. {unknown_q[0]!r}); they score 0")
    if against is not None:
        _compare_with_source(report, root, Path(against), ids)
    return report


def _compare_with_source(report: ValidationReport, root: Path, source: Path, ids: dict[str, list[str]]) -> None:
    """A translation must keep the IDs (in order) and byte-identical qrels of its source."""
    for stem in ("corpus", "queries"):
        src = beir_io.find_file(source, stem)
        if src is None or stem not in ids:
            report.errors.append(DataError(source / f"{stem}.jsonl", f"cannot compare {stem}: file missing"))
            continue
        src_ids, _ = _ids_in_order(src, [])
        if src_ids != ids[stem]:
            missing = [i for i in src_ids if i not in set(ids[stem])]
            extra = [i for i in ids[stem] if i not in set(src_ids)]
            detail = (f"{len(missing)} missing, {len(extra)} extra" if missing or extra else "same IDs in a different order")
            report.errors.append(DataError(root / src.name, f"{stem} IDs differ from the source {src}: {detail}"))
    src_qrels = sorted((source / "qrels").glob("*.tsv")) if (source / "qrels").is_dir() else []
    ours = {p.name for p in (root / "qrels").glob("*.tsv")} if (root / "qrels").is_dir() else set()
    for path in src_qrels:
        if path.name not in ours:
            report.errors.append(DataError(root / "qrels" / path.name, "qrels split of the source is missing"))
        elif not filecmp.cmp(path, root / "qrels" / path.name, shallow=False):
            report.errors.append(DataError(root / "qrels" / path.name, f"qrels differ from the source {path}"))
    report.counts["compared_with"] = 1
