"""The significance table: every paired comparison behind the marks of the other tables, with both tests'
raw and Holm-adjusted p-values (and the bootstrap interval when asked for)."""

from __future__ import annotations

from beirx.report.options import describe_test
from beirx.significance import PAIRING_RULE, Comparison
from beirx.report.table import Cell, Table


def comparisons_table(families: list[tuple[str, list[Comparison]]], options) -> Table:
    columns = ["Table", "Comparison", "Metric", "Queries", "Dropped", "Mean A", "Mean B", "Δ (B − A)",
               "t-test p", "t-test Holm p", "Randomization p", "Randomization Holm p"]
    with_ci = any(c.ci for _, comps in families for c in comps)
    if with_ci:
        columns += ["95% CI low", "95% CI high"]
    table = Table("significance", "Significance tests", columns, numeric=[False] * 3 + [True] * (len(columns) - 3))
    for name, comps in families:
        for c in comps:
            mark = "†" if c.significant(options.test, options.alpha) else ""
            row = [Cell(name), Cell(c.label), Cell(c.metric), Cell(c.n, "int"), Cell(c.dropped, "int"),
                   Cell(c.mean_a, "metric"), Cell(c.mean_b, "metric"), Cell(c.difference, "diff", mark),
                   Cell(c.t_p, "p"), Cell(c.t_holm, "p"), Cell(c.perm_p, "p"), Cell(c.perm_holm, "p")]
            if with_ci:
                low, high = c.ci or (None, None)
                row += [Cell(low, "diff"), Cell(high, "diff")]
            table.rows.append(row)
    table.caption = (f"A = source language or baseline, B = target language or system. Holm-Bonferroni within "
                     f"each table. † = {describe_test(options)}. {PAIRING_RULE}."
                     + (f" CI: paired BCa bootstrap, {options.bootstrap:,} resamples." if with_ci else ""))
    return table
