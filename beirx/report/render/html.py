"""The report as one self-contained HTML file: inline CSS and JavaScript, figures as data URIs, nothing
fetched from the network. Tables sort by clicking a header (on each cell's raw value); every number
links to its provenance entry (results file, dataset checksum, model revision) and shows it on hover.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

from beirx.report.sources import Sources
from beirx.report.table import Cell, Table

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1400px;
color:#1b1f23;padding:0 1rem;line-height:1.4}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.8rem 0;font-size:.8rem;font-variant-numeric:tabular-nums}
th,td{padding:.25rem .45rem;border-bottom:1px solid #e4e7eb;text-align:left;white-space:nowrap}
th{background:#f3f5f7;cursor:pointer;user-select:none;border-bottom:2px solid #8c959f}
th.num,td.num{text-align:right}th:after{content:" \\2195";color:#8c959f;font-size:.75em}
th.asc:after{content:" \\25B2"}th.desc:after{content:" \\25BC"}
tr:hover td{background:#f6f8fa}td b{color:#0a3069}.mark{color:#cf222e}
sup a{color:#57606a;text-decoration:none;font-size:.7em}
.caption{color:#57606a;font-size:.85rem;max-width:1100px}.scroll{overflow-x:auto}
figure{margin:1.2rem 0}figure img{max-width:100%;border:1px solid #e4e7eb}
figcaption{color:#57606a;font-size:.85rem}code{font-size:.82rem;word-break:break-all}
"""

# Sort a table by a clicked header, on each cell's data-sort value (numbers numerically, absent last).
_JS = """
document.querySelectorAll("table.sortable th").forEach(function(th, col){
  th.addEventListener("click", function(){
    var table = th.closest("table"), body = table.tBodies[0];
    var asc = !th.classList.contains("asc");
    table.querySelectorAll("th").forEach(function(h){h.classList.remove("asc","desc");});
    th.classList.add(asc ? "asc" : "desc");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function(a, b){
      var x = a.cells[col].getAttribute("data-sort"), y = b.cells[col].getAttribute("data-sort");
      if (x === "" || y === "") return (x === "") - (y === "");
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function(r){body.appendChild(r);});
  });
});
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _cell(cell: Cell, numeric: bool, sources: Sources) -> str:
    text = _e(cell.text())
    if cell.bold and not cell.missing:
        text = f"<b>{text}</b>"
    if cell.mark:
        text += f'<span class="mark">{_e(cell.mark)}</span>'
    title = ""
    if cell.sources and not cell.missing:
        refs = [sources.items[n - 1] for n in cell.sources]
        text += "<sup>" + ",".join(f'<a href="#src-{n}">[{n}]</a>' for n in cell.sources) + "</sup>"
        title = " title=\"" + _e("; ".join(f"[{s.number}] {s.file}" for s in refs)) + "\""
    cls = ' class="num"' if numeric else ""
    return f'<td{cls} data-sort="{_e(cell.sort_key())}"{title}>{text}</td>'


def table_html(table: Table, sources: Sources) -> str:
    head = "".join(f'<th{" class=num" if n else ""}>{_e(c)}</th>' for c, n in zip(table.columns, table.numeric))
    body = "\n".join("<tr>" + "".join(_cell(c, n, sources) for c, n in zip(row, table.numeric)) + "</tr>"
                     for row in table.rows)
    return (f'<h2 id="{_e(table.name)}">{_e(table.title)}</h2>\n<div class="scroll"><table class="sortable" '
            f'id="table-{_e(table.name)}"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>\n'
            f'<p class="caption">{_e(table.caption)}</p>\n')


def _figure(title: str, png: Path) -> str:
    data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
    return (f'<figure><img alt="{_e(title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(title)}</figcaption></figure>\n")


def _provenance(sources: Sources) -> str:
    rows = []
    for s in sources.items:
        details = "<br>".join(f"{_e(k)}: <code>{_e(v)}</code>" for k, v in s.details.items())
        rows.append(f'<tr id="src-{s.number}"><td data-sort="{s.number}">[{s.number}]</td><td data-sort="{_e(s.what)}">'
                    f'{_e(s.what)}</td><td data-sort="{_e(s.file or "")}"><code>{_e(s.file or "–")}</code></td>'
                    f'<td data-sort="">{details}</td></tr>')
    return ('<h2 id="provenance">Provenance</h2><div class="scroll"><table class="sortable" id="table-provenance">'
            "<thead><tr><th>#</th><th>What</th><th>File</th><th>Details</th></tr></thead><tbody>"
            + "\n".join(rows) + "</tbody></table></div>"
            '<p class="caption">Every number in the tables links to the documents it is computed from.</p>\n')


def document_html(title: str, tables: list[Table], figures: list[tuple[str, Path]], notes: list[str],
                  sources: Sources) -> str:
    nav = " · ".join(f'<a href="#{_e(t.name)}">{_e(t.title)}</a>' for t in tables)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>", f"<h1>{_e(title)}</h1>",
             "<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>",
             f'<p>{nav} · <a href="#figures">Figures</a> · <a href="#provenance">Provenance</a></p>']
    parts += [table_html(t, sources) for t in tables]
    if figures:
        parts.append('<h2 id="figures">Figures</h2>')
        parts += [_figure(t, p) for t, p in figures]
    parts += [_provenance(sources), f"<script>{_JS}</script>", "</body></html>", ""]
    return "\n".join(parts)
