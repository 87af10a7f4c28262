"""The outputs of the damage analysis (:mod:`beirx.report.quality_drop`): the ``damage`` table (every signal in
every view against the damage and each system's drop) and ``damage_queries.csv`` (every analysed query's drop per
system, damage, and every signal in every view), the per-query evidence behind the table.
"""

from __future__ import annotations

import math
from pathlib import Path

from beirx.artifacts.damage import DamageAnalysis
from beirx.report.quality_drop import Attribution
from beirx.report.sources import Sources
from beirx.report.table import Cell, Table


def damage_table(items: list[tuple[Attribution, DamageAnalysis]], sources: Sources) -> Table:
    """The per-signal table: against the damage (rho with its interval, precision and recall at k), then rho and
    precision against each system's own drop."""
    systems = list(dict.fromkeys(label for _, a in items for label in a.systems))
    metric = items[0][1].metric
    cols = ["Dataset", "Target", "Signal", "View", "Queries", "Spearman ρ", "ρ 95% low", "ρ 95% high", "P@k", "R@k",
            "k"]
    for label in systems:
        cols += [f"ρ {label}", f"P@k {label}"]
    table = Table("damage", "Which quality signal predicts the retrieval drop", cols,
                  numeric=[False] * 4 + [True] * (len(cols) - 4))
    for item, analysis in items:
        refs = tuple(sources.result(r) for pair in item.pairs for r in pair) + (sources.translation(item.translation),)
        head = [Cell(analysis.family), Cell(analysis.target_pair)]
        chosen = analysis.chosen
        base = len(analysis.damaged) / analysis.queries
        table.rows.append(head + [Cell("(random order)"), Cell("–"), Cell(analysis.queries, "int"), Cell(None, "corr"),
                                  Cell(None, "corr"), Cell(None, "corr"), Cell(base, "metric"),
                                  Cell(analysis.k / analysis.queries, "metric"), Cell(analysis.k, "int")]
                          + [Cell(None)] * (2 * len(systems)))
        for e in analysis.signals:
            r = e.damage
            picked = chosen is not None and (e.signal.name, e.view) == (chosen.signal, chosen.view)
            row = head + [Cell(e.signal.name, mark="*" if picked else ""), Cell(e.view),
                          Cell(r.queries, "int", sources=refs), Cell(r.spearman, "corr", sources=refs),
                          Cell(r.ci_low, "corr"), Cell(r.ci_high, "corr"), Cell(r.precision, "metric", sources=refs),
                          Cell(r.recall, "metric", sources=refs), Cell(r.k, "int")]
            for label in systems:
                mine = e.systems.get(label)
                row += [Cell(mine.spearman if mine else None, "corr"), Cell(mine.precision if mine else None, "metric")]
            table.rows.append(row)
    resamples, seed = items[0][1].resamples, items[0][1].seed
    table.caption = (
        f"Per query, damage = the {metric} drop (source − target) averaged over the systems evaluated on both sides; "
        "damaged = the worst decile (the k = ⌈n/10⌉ queries with the largest damage, ties at the cut included, "
        "damage > 0). A signal is a quality method's per-row score (negated when higher is better), the flag count "
        "of a method without a score, or the quality report's combined order, read on the query's own row or on its "
        "judged relevant documents' rows (worst, mean); higher = worse. Spearman ρ: signal against damage (positive: "
        f"the worse the translation, the larger the drop), 95% percentile bootstrap over queries ({resamples:,} "
        f"resamples, seed {seed}). P@k, R@k: share of the signal's k worst queries that are damaged, and of the "
        "damaged queries among them (ties at the cut shared out in expectation); (random order): what a random "
        "ranking scores. ρ/P@k <system>: the same against that system's own drop and damaged queries. * = the "
        "signal a damage-aimed review draws by (damage.json). Left out: a signal the same on every query (e.g. a "
        "flag no analysed row has); – : undefined (a constant side, or an interval whose draws are too often "
        "undefined).")
    return table


def write_query_attribution(items: list[tuple[Attribution, DamageAnalysis]], path: Path) -> None:
    """Every analysed query: its drop per system, damage, whether damaged, and every signal in every view."""
    import csv

    from beirx.atomic import atomic_writer

    keys = list(dict.fromkeys(key for item, _ in items for key in item.values))
    systems = list(dict.fromkeys(label for item, _ in items for label in item.drops))
    with atomic_writer(path) as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["Dataset", "Split", "Target", "Query", *(f"drop {s}" for s in systems), "damage", "damaged",
                         *(f"{name} ({view})" for name, view in keys)])
        for item, analysis in items:
            damage, hit = item.damage, set(analysis.damaged)
            for i, qid in enumerate(item.qids):
                values = [item.values[k][i] if k in item.values else math.nan for k in keys]
                writer.writerow([analysis.family, analysis.split, analysis.target_pair, qid,
                                 *("" if s not in item.drops else repr(float(item.drops[s][i])) for s in systems),
                                 repr(float(damage[i])), int(qid in hit),
                                 *("" if math.isnan(v) else repr(float(v)) for v in values)])
