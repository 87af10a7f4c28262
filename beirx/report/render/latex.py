"""Tables as LaTeX ``table`` floats with booktabs rules, ready for a paper, and a compilable document
holding all of them (``article`` + booktabs + graphicx; wide tables are scaled to the line width)."""

from __future__ import annotations

from beirx.report.table import Cell, Table

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_UNICODE = {"Δ": r"$\Delta$", "†": r"$^\dagger$", "ρ": r"$\rho$", "–": "--", "−": "$-$", "→": r"$\rightarrow$",
            "¼": r"$\frac{1}{4}$", "α": r"$\alpha$", "≤": r"$\leq$"}


def escape(text: str) -> str:
    out = "".join(_SPECIAL.get(ch, ch) for ch in text)
    for raw, tex in _UNICODE.items():
        out = out.replace(raw, tex)
    return out


def _cell(cell: Cell) -> str:
    text = escape(cell.text())
    if cell.bold and not cell.missing:
        text = rf"\textbf{{{text}}}"
    return text + escape(cell.mark)


def table_latex(table: Table) -> str:
    spec = "".join("r" if numeric else "l" for numeric in table.numeric)
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{escape(table.caption or table.title)}}}",
             rf"\label{{tab:beirx-{table.name}}}", r"\resizebox{\linewidth}{!}{%", rf"\begin{{tabular}}{{{spec}}}",
             r"\toprule", " & ".join(escape(c) for c in table.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(_cell(c) for c in row) + r" \\" for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}%", "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def document_latex(title: str, tables: list[Table]) -> str:
    body = "\n".join(table_latex(t) for t in tables)
    return "\n".join([r"\documentclass{article}", r"\usepackage[margin=2cm]{geometry}", r"\usepackage{booktabs}",
                      r"\usepackage{graphicx}", r"\usepackage[T1]{fontenc}", r"\usepackage[utf8]{inputenc}",
                      rf"\title{{{escape(title)}}}", r"\date{}", r"\begin{document}", r"\maketitle", body,
                      r"\end{document}", ""])
