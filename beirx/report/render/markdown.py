"""Tables as GitHub-flavoured Markdown (pipe tables), and the whole report as one Markdown file."""

from __future__ import annotations

from beirx.report.table import Cell, Table


def _cell(cell: Cell) -> str:
    text = (cell.text() + cell.mark).replace("|", "\\|")
    return f"**{text}**" if cell.bold and not cell.missing else text


def table_markdown(table: Table) -> str:
    align = ["---:" if numeric else "---" for numeric in table.numeric]
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in table.columns) + " |",
             "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    if table.caption:
        lines += ["", f"*{table.caption}*"]
    return "\n".join(lines) + "\n"


def document_markdown(title: str, tables: list[Table], figures: list[tuple[str, str]], notes: list[str]) -> str:
    """``figures``: (title, relative path of the PNG)."""
    parts = [f"# {title}", ""] + [f"- {note}" for note in notes] + [""]
    for table in tables:
        parts += [f"## {table.title}", "", table_markdown(table)]
    if figures:
        parts += ["## Figures", ""] + [f"![{t}]({p})" for t, p in figures] + [""]
    return "\n".join(parts)
