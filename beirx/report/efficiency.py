"""Efficiency tables (BEIR Table 3): per system and dataset the index or embedding build time, query
throughput, per-query latency (p50, p95), index size, peak memory and device, as measured during
evaluation and stored in the results' ``efficiency`` block ("–" where a figure was not recorded); and per
translation the characters, segments, time and money spent or estimated (``translation.json``).
"""

from __future__ import annotations

from beirx.report.groups import columns, system_order
from beirx.report.load import Result
from beirx.report.sources import Sources
from beirx.report.table import Cell, Table
from beirx.report.translations import Translation

FIELDS = [  # (results efficiency key, column, kind)
    ("device", "Device", "text"),
    ("index_seconds", "Index (s)", "seconds"),
    ("encode_seconds", "Encode (s)", "seconds"),
    ("search_seconds", "Search (s)", "seconds"),
    ("queries_per_second", "Queries/s", "rate"),
    ("latency_ms_p50", "Latency p50 (ms)", "ms"),
    ("latency_ms_p95", "Latency p95 (ms)", "ms"),
    ("index_bytes", "Index size", "bytes"),
    ("peak_rss_bytes", "Peak memory", "bytes"),
]


def efficiency_table(results: list[Result], sources: Sources, baseline: str | None = None) -> Table:
    table = Table("efficiency", "Efficiency", ["Dataset", "System"] + [f[1] for f in FIELDS],
                  numeric=[False, False, False] + [True] * (len(FIELDS) - 1))
    for col in columns(results):
        mine = [r for r in results if (r.family, r.pair, r.split) == (col.family, col.pair, col.split)]
        for label in system_order(mine, baseline):
            row = next(r for r in mine if r.label == label)
            ref = (sources.result(row),)
            cached = " (cached)" if row.description.get("index_from_cache") else ""
            cells = [Cell(col.label), Cell(label + cached)]
            cells += [Cell(row.efficiency.get(key), kind, sources=ref) for key, _, kind in FIELDS]
            table.rows.append(cells)
    table.caption = ("Measured during evaluation and stored in each results file; – = not recorded. Index: "
                     "index build or load (\"cached\": loaded from the on-disk cache), Encode: corpus embedding, "
                     "Search: all queries; latency per query; sizes in IEC units (MiB = 2^20 bytes).")
    return table


def _cost(manifest) -> float | None:
    """Money spent (list price) when the manifest records it, else the estimate; None for free backends."""
    cost = manifest.cost or {}
    return cost.get("spent_usd", cost.get("estimated_usd"))


def translation_table(translations: list[Translation], sources: Sources) -> Table:
    columns_ = ["Dataset", "Languages", "Translator", "Characters", "Segments", "Unique segments", "Time (s)",
                "Cost (USD)"]
    table = Table("translation", "Translation cost", columns_, numeric=[False, False, False] + [True] * 5)
    for t in translations:
        manifest = t.manifest
        if manifest is None:
            continue
        ref = (sources.translation(t),)
        counts = manifest.counts
        cells = [Cell(manifest.family), Cell(f"{manifest.source_language} → {manifest.target_language}"),
                 Cell(" ".join(x for x in (manifest.backend, manifest.model) if x) or None),
                 Cell(counts.get("characters"), "int", sources=ref),
                 Cell(counts.get("segments_total"), "int", sources=ref),
                 Cell(counts.get("segments_unique"), "int", sources=ref),
                 Cell(manifest.timings.get("translate", manifest.timings.get("total")), "seconds", sources=ref),
                 Cell(_cost(manifest), "money", sources=ref)]
        table.rows.append(cells)
    table.caption = ("From each translated dataset's translation.json: characters sent to the translator, "
                     "segments (sentences) and unique segments, wall-clock translation time, and the money "
                     "spent at list price (else the estimate); – = not recorded in translation.json.")
    return table
