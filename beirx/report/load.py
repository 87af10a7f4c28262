"""Results documents in, the report's own rows out: the ONE place that reads results files.

Files are read as :class:`beirx.artifacts.results.ResultsDocument` (validated; ``beirx.results/1`` files are
upgraded on read), and everything else in :mod:`beirx.report` works on :class:`Result` rows. A folder
argument contributes every results document below it (other JSON files there, such as ``summary.json`` or
a quality report, are skipped); a file named explicitly must be a results document.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import TranslationManifest
from beirx.artifacts.results import ResultsDocument, language_pair
from beirx.errors import DataError

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Result:
    """One system on one dataset, language pair and split, as the report needs it."""

    family: str
    split: str
    corpus_language: str
    query_language: str
    label: str
    kind: str
    tag: str | None
    description: dict[str, Any]
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    path: str | None = None
    created: str | None = None
    dataset_source: str | None = None
    dataset_checksum: str | None = None
    query_source: str | None = None
    query_checksum: str | None = None
    translated_from: str | None = None
    num_queries: int | None = None
    efficiency: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def pair(self) -> str:
        """``"en"`` when queries and corpus share a language, else ``"es2en"`` (Spanish queries, English corpus)."""
        return language_pair(self.query_language, self.corpus_language)

    @property
    def monolingual(self) -> bool:
        return self.query_language == self.corpus_language

    @property
    def queries_folder(self) -> str | None:
        """The dataset folder the queries were read from (the translated one for a cross-lingual pair)."""
        return self.query_source or self.dataset_source

    def metric(self, name: str) -> float | None:
        return self.metrics.get(name)

    def per_query_metric(self, name: str) -> dict[str, float]:
        return {qid: scores[name] for qid, scores in self.per_query.items() if name in scores}

    def model_revisions(self) -> list[str]:
        """``model@revision`` of every model in the system description (nested fusion/rerank stages too)."""
        found: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                model, revision = node.get("model"), node.get("revision") or node.get("model_revision")
                if isinstance(model, str) and model:
                    found.append(f"{model}@{revision}" if revision else model)
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(self.description)
        return list(dict.fromkeys(found))


def load_results(inputs: Iterable[Any]) -> list[Result]:
    """Rows from results files, folders of them, parsed dicts or ``ResultsDocument`` objects."""
    rows: list[Result] = []
    for item in inputs:
        if isinstance(item, (str, Path)):
            path = Path(item)
            if path.is_dir():
                found = [(p, ResultsDocument.load_if_any(p)) for p in sorted(path.rglob("*.json")) if p.is_file()]
                found = [(p, doc) for p, doc in found if doc is not None]
                if not found:
                    raise DataError(path, "no beirx results documents in this folder")
                rows += [from_document(doc, str(p)) for p, doc in found]
            elif path.is_file():
                rows.append(from_document(ResultsDocument.load(path), str(path)))
            else:
                raise DataError(path, "results file or folder not found")
        elif isinstance(item, dict):
            rows.append(from_document(ResultsDocument.from_dict(item), None))
        elif isinstance(item, ResultsDocument):
            rows.append(from_document(item, None))
        else:
            raise TypeError(f"not a results path or document: {item!r}")
    return _unique(rows)


def _manifest_source_language(folder: str | None) -> str | None:
    """The source language in a dataset folder's ``translation.json`` (None for an untranslated folder)."""
    if not folder or not Path(folder).is_dir():
        return None
    manifest = TranslationManifest.load_optional(TranslationManifest.path_in(folder))
    return manifest.source_language if manifest else None


def from_document(doc: ResultsDocument, path: str | None) -> Result:
    """One row from a results document (``beirx.results/1`` files arrive upgraded)."""
    query = doc.query_dataset
    translated_from = (query.translated_from if query else None) or doc.dataset.translated_from
    if translated_from is None:  # upgraded beirx.results/1 files do not record it: ask the manifests
        translated_from = (_manifest_source_language(query.source if query else None)
                           or _manifest_source_language(doc.dataset.source))
    efficiency = {k: v for k, v in dataclasses.asdict(doc.efficiency).items() if v is not None}
    return Result(
        family=doc.family, split=doc.split, corpus_language=doc.corpus_language, query_language=doc.query_language,
        label=doc.label, kind=doc.system.kind, tag=doc.system.tag, description=doc.system.description,
        metrics=dict(doc.metrics), per_query=doc.per_query, path=path, created=doc.created,
        dataset_source=doc.dataset.source, dataset_checksum=doc.dataset.checksum,
        query_source=query.source if query else None, query_checksum=query.checksum if query else None,
        translated_from=translated_from, num_queries=doc.num_queries, efficiency=efficiency,
        versions=dict(doc.versions))


def _unique(rows: list[Result]) -> list[Result]:
    """One result per (family, pair, split, label). Systems whose labels collide (e.g. two BM25 variants
    both labelled "bm25" in upgraded old files) are named by their file tags instead; a collision that
    remains makes every table ambiguous and is refused, naming both files."""
    def key(row: Result) -> tuple:
        return row.family, row.pair, row.split, row.label

    counts: dict[tuple, int] = {}
    for row in rows:
        counts[key(row)] = counts.get(key(row), 0) + 1
    clashing = {k[3] for k, n in counts.items() if n > 1}
    rows = [replace(r, label=r.tag) if r.label in clashing and r.tag else r for r in rows]
    seen: dict[tuple, Result] = {}
    for row in rows:
        if key(row) in seen:
            raise DataError(row.path or "<results document>",
                            f"{row.label} on {row.family} [{row.pair}/{row.split}] is also in "
                            f"{seen[key(row)].path or 'another document'}; give each system a distinct name")
        seen[key(row)] = row
    return rows
