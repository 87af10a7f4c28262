"""The Systems table (BEIR-PL Table 4, BEIR Table 2): systems x datasets for one metric, each value with
its difference to the baseline system (paired tests marked), the best system per dataset in bold, the
average over datasets and, per system, on how many datasets it beats the baseline.
"""

from __future__ import annotations

from beirx.report.groups import Column, baseline_label, columns, system_order
from beirx.report.load import Result
from beirx.report.options import describe_test
from beirx.significance import PAIRING_RULE, Comparison, compare, correct
from beirx.report.sources import Sources
from beirx.report.table import Cell, Table


def lookup(results: list[Result]) -> dict[tuple[str, str, str, str], Result]:
    return {(r.family, r.pair, r.split, r.label): r for r in results}


def systems_table(results: list[Result], sources: Sources, *, options) -> tuple[Table, list[Comparison]]:
    metric = options.metric
    baseline = baseline_label(results, options.baseline)
    cols = columns(results)
    labels = system_order(results, baseline)
    by_key = lookup(results)

    def get(label: str, col: Column) -> Result | None:
        return by_key.get((col.family, col.pair, col.split, label))

    comparisons: dict[tuple[str, Column], Comparison] = {}
    for col in cols:
        base = get(baseline, col)
        for label in labels[1:]:
            other = get(label, col)
            if base is not None and other is not None:
                comparisons[(label, col)] = compare(f"{col.label}: {label} vs {baseline}", metric,
                                                    base.per_query_metric(metric), other.per_query_metric(metric),
                                                    permutations=options.permutations, seed=options.seed,
                                                    bootstrap=options.bootstrap)
    correct(list(comparisons.values()))
    best = {}
    for col in cols:
        values = [r.metric(metric) for r in (get(label, col) for label in labels) if r and r.metric(metric) is not None]
        best[col] = max(values) if values else None
    header = ["System"]
    for col in cols:
        header += [col.label, f"{col.label} Δ"]
    header += ["Average", f"Wins vs {baseline}"]
    table = Table("systems", f"Systems: {metric} per dataset", header,
                  numeric=[False] + [True] * (2 * len(cols) + 2))
    for label in labels:
        cells = [Cell(label + (" (baseline)" if label == baseline else ""))]
        values, wins, compared, refs_all = [], 0, 0, ()
        for col in cols:
            row, base = get(label, col), get(baseline, col)
            value = row.metric(metric) if row else None
            base_value = base.metric(metric) if base else None
            refs = tuple(sources.result(r) for r in (row, base) if r is not None)
            cells.append(Cell(value, "metric", bold=value is not None and value == best[col], sources=refs[:1]))
            if label == baseline or value is None or base_value is None:
                cells.append(Cell(None, "diff"))
            else:
                comparison = comparisons.get((label, col))
                mark = "†" if comparison and comparison.significant(options.test, options.alpha) else ""
                cells.append(Cell(value - base_value, "diff", mark, sources=refs))
                compared += 1
                wins += value > base_value
            if value is not None:
                values.append(value)
                refs_all += refs[:1]
        average = sum(values) / len(values) if len(values) == len(cols) else None
        cells.append(Cell(average, "metric", sources=refs_all))
        cells.append(Cell(None if label == baseline else f"{wins}/{compared}"))
        table.rows.append(cells)
    table.caption = (f"{metric} of every system on every dataset (language pair in brackets; \"q2c\" = queries in q on "
                     f"the corpus in c). Δ = difference to the baseline {baseline}; bold = best per "
                     f"dataset; Average over datasets (– when a system misses one); Wins = datasets where the "
                     f"system scores above the baseline. † = {describe_test(options)}. {PAIRING_RULE}.")
    return table, list(comparisons.values())
