"""The Languages table (BEIR-PL Table 3): per dataset and system, the source-language and target-language
metric side by side, the absolute difference (target - source) and the share retained (target / source),
with paired tests of target against source marked on the difference, plus average rows.
"""

from __future__ import annotations

from beirx.report.groups import language_pairs, system_order
from beirx.report.load import Result
from beirx.significance import PAIRING_RULE, Comparison, compare, correct
from beirx.report.sources import Sources
from beirx.report.table import Cell, Table
from beirx.report.options import describe_test


def _share(target: float | None, source: float | None) -> float | None:
    return None if target is None or not source else target / source


def languages_table(results: list[Result], metrics: list[str], sources: Sources, *,
                    options) -> tuple[Table, list[Comparison]]:
    """The table and its comparisons (one per row and metric; Holm-corrected together)."""
    pairs = language_pairs(results, options.source_language, options.baseline)
    columns = ["Dataset", "System", "Source", "Target"]
    for metric in metrics:
        columns += [f"{metric} source", f"{metric} target", f"{metric} Δ", f"{metric} retained"]
    comparisons: list[Comparison] = []
    rows: list[tuple[Result, Result, list[Comparison]]] = []
    for source, target in pairs:
        mine = [compare(f"{source.family}/{source.label}: {target.pair} vs {source.pair}", metric,
                        source.per_query_metric(metric), target.per_query_metric(metric),
                        permutations=options.permutations, seed=options.seed, bootstrap=options.bootstrap)
                for metric in metrics]
        comparisons += mine
        rows.append((source, target, mine))
    correct(comparisons)
    table = Table("languages", "Languages: source vs target language", columns,
                  numeric=[False] * 4 + [True] * 4 * len(metrics))
    for source, target, mine in rows:
        refs = (sources.result(source), sources.result(target))
        cells = [Cell(source.family), Cell(source.label), Cell(source.pair), Cell(target.pair)]
        for metric, comparison in zip(metrics, mine):
            s, t = source.metric(metric), target.metric(metric)
            mark = "†" if comparison.significant(options.test, options.alpha) else ""
            cells += [Cell(s, "metric", sources=refs[:1]), Cell(t, "metric", sources=refs[1:]),
                      Cell(None if s is None or t is None else t - s, "diff", mark, sources=refs),
                      Cell(_share(t, s), "share", sources=refs)]
        table.rows.append(cells)
    table.rows += _averages(rows, metrics, sources, options.baseline)
    table.caption = (f"Source- and target-language {', '.join(metrics)}; Δ = target − source, retained = "
                     f"target / source. † = {describe_test(options)}, target vs source. {PAIRING_RULE}. "
                     "Average rows: mean over datasets of each system and target.")
    return table, comparisons


def _averages(rows: list[tuple[Result, Result, list[Comparison]]], metrics: list[str], sources: Sources,
              baseline: str | None) -> list[list[Cell]]:
    out = []
    labels = system_order([s for s, _, _ in rows], baseline)
    targets = list(dict.fromkeys(t.pair for _, t, _ in rows))
    for label in labels:
        for pair in targets:
            group = [(s, t) for s, t, _ in rows if s.label == label and t.pair == pair]
            if not group:
                continue
            cells = [Cell(f"Average ({len(group)})"), Cell(label), Cell(group[0][0].pair), Cell(pair)]
            src_refs = tuple(sources.result(s) for s, _ in group)
            tgt_refs = tuple(sources.result(t) for _, t in group)
            for metric in metrics:
                src = [s.metric(metric) for s, _ in group]
                tgt = [t.metric(metric) for _, t in group]
                if None in src or None in tgt:
                    cells += [Cell(None, "metric")] * 4
                    continue
                ms, mt = sum(src) / len(src), sum(tgt) / len(tgt)
                cells += [Cell(ms, "metric", sources=src_refs), Cell(mt, "metric", sources=tgt_refs),
                          Cell(mt - ms, "diff", sources=src_refs + tgt_refs),
                          Cell(_share(mt, ms), "share", sources=src_refs + tgt_refs)]
            out.append(cells)
    return out
