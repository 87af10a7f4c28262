"""Write a quality report: ``quality.json``, its per-row sidecar ``rows.jsonl``, ``quality.md``, ``flagged.jsonl``
(every flagged pair with its reasons, evidence and scores) and ``review_sample.jsonl``/``.md`` (pairs for a human
to check). Rows are streamed to the files as each field is scored, so memory holds the review sample and the worst
rows, not a record per row; the Markdown is rendered from the report and its sidecar alone, so it can be rebuilt
from any ``quality.json``. Every file is written atomically, ``quality.json`` last: a report on disk is complete."""

from __future__ import annotations

import contextlib
import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from beirx.artifacts import quality_rows, quality_sidecar
from beirx.artifacts.quality import FILENAME, QualityReport
from beirx.atomic import atomic_writer
from beirx.translate.quality.base import QUALITY_METHODS

# one row as the run hands it over: its sidecar record, evidence, texts (e.g. back_translation), source, translation
Row = tuple[dict, dict[str, Any], dict[str, str], str, str]

WORST_ROWS = 20
EXCERPT = 80
JSONL_DIGITS = 4  # scores in flagged.jsonl / review_sample.jsonl; rows.jsonl keeps full precision


class ReportFiles(contextlib.ExitStack):
    """The files of one run, as a context (an error before :meth:`finish` leaves any earlier report as it was)."""

    def __init__(self, folder: Path, sample_size: int, seed: int):
        super().__init__()
        self.folder, self.sample_size, self.seed = folder, sample_size, seed
        self.sample: list[dict] = []
        self.worst: dict[str, list[dict]] = {}

    def __enter__(self) -> ReportFiles:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._rows = quality_sidecar.SidecarWriter(
            self.enter_context(atomic_writer(self.folder / quality_sidecar.FILENAME, binary=True)))
        self._flagged = self.enter_context(atomic_writer(self.folder / "flagged.jsonl"))
        return self

    def add(self, field: str, size: int, rows: Iterator[Row]) -> tuple[dict[str, int], int]:
        """Stream one field's ``size`` rows to the sidecar and ``flagged.jsonl``, keep its review sample and worst
        rows; returns its items per flag reason and its flagged items."""
        counts: Counter[str] = Counter()
        flagged = 0
        picked = set(random.Random(f"{self.seed}-{field}-review").sample(range(size), min(self.sample_size, size)))

        def records() -> Iterator[dict]:
            nonlocal flagged
            for n, (row, details, texts, source, translation) in enumerate(rows):
                self._rows.write(row)
                if row["flags"] or n in picked:
                    scores = {k: None if v is None else round(v, JSONL_DIGITS) for k, v in row["scores"].items()}
                    full = {"field": field, "id": row["id"], **scores, "reasons": row["flags"], "details": details,
                            "source": source, "translation": translation, **texts}
                    if row["flags"]:
                        self._flagged.write(json.dumps(full, ensure_ascii=False) + "\n")
                    if n in picked:
                        self.sample.append(full)
                counts.update(row["flags"])
                flagged += bool(row["flags"])
                yield {**row, "translation": translation}

        self.worst[field] = quality_rows.worst(records(), WORST_ROWS)  # a bounded heap over the stream
        return dict(counts), flagged

    def finish(self, report: QualityReport) -> None:
        """Commit the streamed files, then write the sample, the Markdown and ``quality.json`` (last), which
        records the digest of the sidecar as it was written."""
        self.close()
        report.sidecar = self._rows.digest()
        report.rows_beside(self.folder / FILENAME)
        with atomic_writer(self.folder / "review_sample.jsonl") as fh:
            fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in self.sample)
        with atomic_writer(self.folder / "review_sample.md") as fh:
            fh.write(render_sample(self.sample))
        with atomic_writer(self.folder / "quality.md") as fh:
            fh.write(render_markdown(report, self.worst))
        report.save(self.folder / FILENAME)


def fmt(value: Any, digits: int = 3) -> str:
    """A figure of ``quality.md``: ``digits`` decimals, a dash for none."""
    return "–" if value is None else f"{value:.{digits}f}"


def table(header: list[str], rows: list[list[Any]], align: str = "l") -> list[str]:
    """A Markdown table; header and separator come from one list, so they always agree. ``align`` gives
    each column's alignment (``l``/``r``); its last letter holds for the remaining columns."""
    align = align + align[-1] * max(0, len(header) - len(align))
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align[:len(header)]) + "|"]
    return lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows]


def render_markdown(report: QualityReport, worst: dict[str, list[dict]] | None = None) -> str:
    """The human-readable report. ``worst`` (field -> its worst sidecar rows, a ``translation`` in each for an
    excerpt) is read from the report's sidecar when not given (then without excerpts)."""
    fields = report.parameters.fields
    src, tgt = report.source.lang, report.translated.lang
    lines = [f"# Translation quality: {report.dataset} ({src} → {tgt})", ""]
    lines += [f"Methods: {', '.join(f'`{name}`' for name in report.methods)}.", ""]
    translation = report.translation
    if translation:
        lines += [f"Translator: `{json.dumps(translation.translator, ensure_ascii=False)}`.", ""]
        if translation.partial:
            lines += [f"Partial translation (`--limit {translation.limit}`): items beyond the limit are missing "
                      "by design and not scored.", ""]
    # the report's methods this beirx knows (a report may name a method since removed)
    known = [QUALITY_METHODS.get(name) for name in report.methods if name in QUALITY_METHODS]
    for method in known:
        lines += method.report_section(report)
    lines += _scores_section(report, fields)
    lines += _flags_section(report, fields)
    lines += [""] + [line for f in fields for method in known for line in method.report_lines(report, f)]
    lines += _worst_rows(report, fields, worst)
    lines += ["", "## Provenance", "",
              f"- Source: `{report.source.path}` ({report.source.checksum})",
              f"- Translation: `{report.translated.path}` ({report.translated.checksum})"]
    for name, method in report.methods.items():
        sample = (f", {method.sample} rows per field (seeded sample)" if method.sample else
                  f", the rows {method.description['rows']} judges" if method.description.get("rows") else "")
        lines.append(f"- `{name}`: `{json.dumps(method.description, ensure_ascii=False)}`{sample}")
    lines += [f"- Timings (s): {', '.join(f'{k} {v}' for k, v in report.timings.items())}", ""]
    return "\n".join(lines)


def _scores_section(report: QualityReport, fields: list[str]) -> list[str]:
    rows = []
    for f in fields:
        entry = report.fields[f]
        for score, d in entry.scores.items():
            info = report.scores.get(score)
            outcome = entry.methods.get(info.method) if info else None
            cells = [fmt(getattr(d, k)) for k in ("mean", "std", "min", "p5", "p50", "p95", "max")]
            rows.append([f, f"`{score}`", "↑" if info is None or info.higher_is_better else "↓", d.n,
                         outcome.missing if outcome else 0, *cells])
    if not rows:
        return []
    header = ["Field", "score", "better", "n", "no answer", "mean", "std", "min", "p5", "p50", "p95", "max"]
    lines = ["## Scores", ""] + table(header, rows, "lllr") + [""]
    lines += [f"- `{name}` ({info.method}): {info.description}" for name, info in report.scores.items()]
    return lines + [""]


def _flags_section(report: QualityReport, fields: list[str]) -> list[str]:
    reasons = sorted({r for f in fields for r in report.fields[f].flags})
    header = ["Field", "pairs", "missing", "flagged", *reasons]  # one list: header and separator always agree
    rows = [[f, e.pairs, e.missing, e.flagged_items, *(e.flags.get(r, 0) for r in reasons)]
            for f, e in ((f, report.fields[f]) for f in fields)]
    lines = ["## Flags", ""] + table(header, rows, "lr")
    if not reasons:
        return lines + ["", "No pair was flagged."]
    legend = {reason: (name, text) for name, m in report.methods.items() for reason, text in m.flags.items()}
    lines += ["", "Every flagged pair is in `flagged.jsonl` with its reasons:", ""]
    for reason in reasons:
        method, text = legend.get(reason, ("?", ""))
        lines.append(f"- `{reason}` ({method}): {text}")
    return lines


def _worst_rows(report: QualityReport, fields: list[str], worst: dict[str, list[dict]] | None) -> list[str]:
    scores = list(report.scores)
    lines = []
    for f in fields:
        found = worst[f] if worst is not None else report.worst(WORST_ROWS, [f])
        if not found:
            continue
        rows = []
        for row in found:
            values = [fmt(row["scores"].get(s)) for s in scores]
            excerpt = " ".join(row.get("translation", "").split())
            excerpt = (excerpt[:EXCERPT] + "…" if len(excerpt) > EXCERPT else excerpt).replace("|", "\\|")
            rows.append([f"`{row['id']}`", ", ".join(row["flags"]) or "–", *values, excerpt])
        lines += ["", f"## Worst {len(found)} {f} rows", "",
                  "Most flags first, then the lowest mean percentile rank over every score.", ""]
        lines += table(["id", "flags", *(f"`{s}`" for s in scores), "translation"], rows,
                        "ll" + "r" * len(scores) + "l")
    return lines


def render_sample(rows: list[dict]) -> str:
    """The manual-review sample: one block per pair with a checkbox to tick when the translation is adequate."""
    lines = ["# Manual review sample", "",
             "Tick the box when the translation is adequate (meaning preserved, fluent enough for retrieval).", ""]
    for n, row in enumerate(rows, 1):
        reasons = ", ".join(row["reasons"]) or "none"
        similarity = f"similarity {row['similarity']:.3f}, " if row.get("similarity") is not None else ""
        lines += [f"## {n}. {row['field']} `{row['id']}` — {similarity}flags: {reasons}", "",
                  "- [ ] adequate", "", f"> **source:** {_quote(row['source'])}", ">",
                  f"> **translation:** {_quote(row['translation'])}"]
        if "back_translation" in row:
            lines += [">", f"> **back-translation:** {_quote(row['back_translation'])}"]
        lines.append("")
    return "\n".join(lines)


def _quote(text: str) -> str:
    return " ".join(text.split())
