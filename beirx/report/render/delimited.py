"""Tables as CSV with raw (unrounded) values: numbers for analysis, not for reading; a column with marks
(e.g. significance daggers) gets a companion ``<column> mark`` column."""

from __future__ import annotations

import csv
import io

from beirx.report.table import Table


def table_csv(table: Table) -> str:
    marked = [any(row[i].mark for row in table.rows) for i in range(len(table.columns))]
    header = []
    for name, has_mark in zip(table.columns, marked):
        header += [name, f"{name} mark"] if has_mark else [name]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in table.rows:
        values = []
        for cell, has_mark in zip(row, marked):
            values.append("" if cell.missing else cell.value)
            if has_mark:
                values.append(cell.mark)
        writer.writerow(values)
    return buffer.getvalue()
