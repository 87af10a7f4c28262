"""Valid artifacts for tests that need a translation manifest, quality report or results document with
particular values: a real file written by beirx before the typed artifacts (``tests/data/before_v2``, made
from a tiny made-up dataset) with the values a test cares about replaced."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from beirx.artifacts import QualityReport, ResultsDocument, TranslationManifest, quality_rows
from beirx.artifacts.quality import FieldQuality

BEFORE_V2 = Path(__file__).parent / "data" / "before_v2"
BEFORE_V3 = Path(__file__).parent / "data" / "before_v3"  # a format-2 quality report, written before format 3


def translation_manifest(*, name: str, src: str, tgt: str, translator: dict[str, Any], checksum: str = "sha256:abc",
                         partial: bool = False, created: str | None = None) -> TranslationManifest:
    base = TranslationManifest.load(BEFORE_V2 / "translation.json")
    return dataclasses.replace(
        base, source=dataclasses.replace(base.source, name=name, lang=src, checksum=checksum),
        target=dataclasses.replace(base.target, lang=tgt), translator=translator, partial=partial,
        created=created or base.created)


def quality_report(**fields: dict[str, Any]) -> QualityReport:
    """A report whose fields (``queries=dict(mean=..., pairs=..., flagged_items=..., target_share=...)``)
    carry the given headline numbers, without round trip."""
    base = QualityReport.load(BEFORE_V2 / "quality.json")
    entries: dict[str, FieldQuality] = {}
    for name, values in fields.items():
        entry = base.fields[name]
        checks = entry.methods["checks"]
        language = {**checks.summary["language"], "checked": values["pairs"], "target_share": values["target_share"]}
        methods = {k: v for k, v in entry.methods.items() if k != "roundtrip"}
        methods["checks"] = dataclasses.replace(checks, summary={**checks.summary, "language": language})
        entries[name] = dataclasses.replace(
            entry, pairs=values["pairs"], flagged_items=values["flagged_items"], methods=methods,
            scores={**entry.scores, "similarity": dataclasses.replace(entry.similarity, mean=values["mean"])})
    return dataclasses.replace(base, fields=entries,
                               methods={k: v for k, v in base.methods.items() if k != "roundtrip"})


def with_query_similarity(report: QualityReport, similarity: dict[str, float]) -> QualityReport:
    """``report`` with the per-query similarity ``similarity`` (its queries' rows, held until it is saved, when they
    go to the sidecar rows.jsonl)."""
    ranks = quality_rows.mean_percentile_ranks({"similarity": similarity}, {"similarity": True})
    rows = [quality_rows.record("queries", qid, [], ranks[qid], {"similarity": value}) for qid, value in similarity.items()]
    return dataclasses.replace(report).hold_rows({"queries": rows})


def results_document(*, name: str, lang: str, split: str, label: str, description: dict[str, Any],
                     metrics: dict[str, float]) -> ResultsDocument:
    base = ResultsDocument.load(BEFORE_V2 / "results_bm25.json")
    return dataclasses.replace(
        base, dataset=dataclasses.replace(base.dataset, name=name, language=lang, query_language=lang, split=split),
        system=dataclasses.replace(base.system, label=label, tag=label, description=description), metrics=metrics,
        per_query={})


def row_values(report: QualityReport, field: str, score: str) -> dict[str, float | None]:
    """``{item id: value}`` of one score of ``field``, from the report's per-row sidecar (rows without it left out)."""
    return {row["id"]: row["scores"][score] for row in report.rows([field]) if score in row["scores"]}


def row_flags(report: QualityReport, field: str) -> dict[str, list[str]]:
    """``{item id: flag reasons}`` of the flagged rows of ``field``, from the report's per-row sidecar."""
    return {row["id"]: row["flags"] for row in report.rows([field]) if row["flags"]}
