"""Results documents in, the report's own rows out: the ONE place that knows the results file format.

Everything else in :mod:`beirx.report` works on :class:`Result` rows, so a change of the results format
touches this module only. A folder argument contributes every results document below it (other JSON
files there, such as ``summary.json`` or a quality report, are skipped); a file named explicitly must be
a results document.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from beirx.errors import DataError

log = logging.getLogger(__name__)

SCHEMAS = ("beirx.results/1", "beirx.results/2")
MANIFEST = "translation.json"  # written beside a translated dataset by ``beirx translate``


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
        if self.query_language == self.corpus_language:
            return self.corpus_language
        return f"{self.query_language}2{self.corpus_language}"

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
                files = sorted(p for p in path.rglob("*.json") if p.is_file())
                found = [r for r in (_read(p, strict=False) for p in files) if r is not None]
                if not found:
                    raise DataError(path, "no beirx results documents in this folder")
                rows += found
            elif path.is_file():
                rows.append(_read(path, strict=True))
            else:
                raise DataError(path, "results file or folder not found")
        elif isinstance(item, dict):
            rows.append(from_dict(item, None))
        elif hasattr(item, "to_dict"):
            source = getattr(item, "source", None)
            rows.append(from_dict(item.to_dict(), str(source) if source else None))
        else:
            raise TypeError(f"not a results path or document: {item!r}")
    return _unique(rows)


def _read(path: Path, strict: bool) -> Result | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if strict:
            raise DataError(path, f"not readable as JSON: {exc}") from exc
        log.warning("skipping %s: not readable as JSON (%s)", path, exc)
        return None
    if not (isinstance(data, dict) and data.get("schema") in SCHEMAS):
        if strict:
            raise DataError(path, f"not a beirx results document (schema must be one of {', '.join(SCHEMAS)})")
        return None
    return from_dict(data, str(path))


def _need(data: dict, dotted: str, source: str | None) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise DataError(source or "<results document>", f"missing field {dotted!r}")
        node = node[part]
    return node


def _v1_label(path: str | None, family: str, pair: str, split: str, description: dict) -> str:
    """beirx.results/1 has no label: it is the file-name tag after ``<dataset>-<languages>-<split>-``."""
    prefix = f"{family.replace('/', '_')}-{pair}-{split}-"
    if path and Path(path).stem.startswith(prefix):
        return Path(path).stem[len(prefix):]
    return str(description.get("retriever") or description.get("fusion") or "system")


def _v1_kind(description: dict) -> str:
    if "fusion" in description:
        return "fusion"
    if "reranker" in description:
        return "rerank"
    return "run_file" if description.get("retriever") == "run_file" else "retriever"


def _v1_efficiency(timings: dict[str, float], num_queries: int | None) -> dict[str, Any]:
    """What a beirx.results/1 file measured: index, encoding and search seconds of a single retriever."""
    eff: dict[str, Any] = {}
    for name, key in (("index", "index_seconds"), ("encode_corpus", "encode_seconds"), ("search", "search_seconds")):
        if name in timings:
            eff[key] = timings[name]
    if eff.get("search_seconds") and num_queries:
        eff["num_queries"] = num_queries
        eff["queries_per_second"] = num_queries / eff["search_seconds"]
    return eff


def _manifest_source_language(folder: str | None) -> str | None:
    """The source language recorded in a translated dataset's ``translation.json`` (None if untranslated)."""
    if not folder or not (Path(folder) / MANIFEST).is_file():
        return None
    try:
        manifest = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
        return (manifest.get("source") or {}).get("lang") or "?"
    except (OSError, ValueError, AttributeError):
        return "?"


def from_dict(data: dict[str, Any], source: str | None) -> Result:
    """One row from a parsed results document (schema 1 or 2); errors name the file and the field."""
    schema = data.get("schema")
    if schema not in SCHEMAS:
        raise DataError(source or "<results document>", f"unknown schema {schema!r}; expected one of {SCHEMAS}")
    dataset = _need(data, "dataset", source)
    family = str(_need(data, "dataset.name", source))
    split = str(_need(data, "dataset.split", source))
    corpus_lang = str(_need(data, "dataset.language", source))
    query_lang = str(dataset.get("query_language") or corpus_lang)
    metrics = _need(data, "metrics", source)
    per_query = data.get("per_query") or {}
    if not isinstance(metrics, dict) or not isinstance(per_query, dict):
        raise DataError(source or "<results document>", "'metrics' and 'per_query' must be objects")
    query_ds = data.get("query_dataset") or {}
    evaluation = data.get("evaluation") or {}
    num_queries = evaluation.get("num_queries")
    pair = corpus_lang if query_lang == corpus_lang else f"{query_lang}2{corpus_lang}"
    system = _need(data, "system", source)
    if schema == "beirx.results/1":
        description = system
        label = tag = _v1_label(source, family, pair, split, description)
        kind = _v1_kind(description)
        efficiency = _v1_efficiency(data.get("timings_seconds") or {}, num_queries)
        translated_from = (_manifest_source_language(query_ds.get("source"))
                           or _manifest_source_language(dataset.get("source")))
    else:
        description = system.get("description") or {}
        label = str(_need(data, "system.label", source))
        tag = system.get("tag")
        kind = str(system.get("kind") or _v1_kind(description))
        efficiency = {k: v for k, v in (data.get("efficiency") or {}).items() if v is not None}
        translated_from = query_ds.get("translated_from") or dataset.get("translated_from")
    return Result(
        family=family, split=split, corpus_language=corpus_lang, query_language=query_lang, label=label, kind=kind,
        tag=tag, description=description, metrics={k: float(v) for k, v in metrics.items()},
        per_query={str(q): {k: float(v) for k, v in s.items()} for q, s in per_query.items()},
        path=source, created=data.get("created"), dataset_source=dataset.get("source"),
        dataset_checksum=dataset.get("checksum"), query_source=query_ds.get("source"),
        query_checksum=query_ds.get("checksum"), translated_from=translated_from, num_queries=num_queries,
        efficiency=efficiency, versions=data.get("versions") or {})


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
