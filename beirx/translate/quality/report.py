"""Write a quality report: ``quality.json`` + ``quality.md`` (summary, BEIR-PL Table 2 layout, every
method's scores, flags, the worst rows with every score side by side), ``flagged.jsonl`` (every flagged
pair with its reasons, evidence and scores) and ``review_sample.jsonl``/``.md`` (pairs for a human to
check). The Markdown is rendered from the report alone, so it can be rebuilt from any ``quality.json``.
Every file is written atomically, so a report on disk is always complete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from beirx.artifacts.quality import FILENAME, QualityReport
from beirx.atomic import atomic_writer

WORST_ROWS = 20
EXCERPT = 80


def _fmt(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _table(header: list[str], rows: list[list[Any]], align: str = "l") -> list[str]:
    """A Markdown table; header and separator come from one list, so they always agree. ``align`` gives
    each column's alignment (``l``/``r``); its last letter holds for the remaining columns."""
    align = align + align[-1] * max(0, len(header) - len(align))
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align[:len(header)]) + "|"]
    return lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows]


def render_markdown(report: QualityReport, texts: dict[tuple[str, str], str] | None = None) -> str:
    """The human-readable report; ``texts`` (``(field, id) -> translation``) adds excerpts to the worst rows."""
    fields = report.parameters.fields
    src, tgt = report.source.lang, report.translated.lang
    lines = [f"# Translation quality: {report.dataset} ({src} → {tgt})", ""]
    lines += [f"Methods: {', '.join(f'`{name}`' for name in report.methods)}."]
    if "similarity" in report.methods:
        lines += [f"Encoder: `{report.encoder_model}` (revision `{report.encoder_revision}`), cosine similarity "
                  "of source and translation."]
    lines.append("")
    translation = report.translation
    if translation:
        lines += [f"Translator: `{json.dumps(translation.translator, ensure_ascii=False)}`.", ""]
        if translation.partial:
            lines += [f"Partial translation (`--limit {translation.limit}`): items beyond the limit are missing "
                      "by design and not scored.", ""]
    if "similarity" in report.scores:
        lines += ["## Mean similarity (BEIR-PL Table 2 layout)", ""]
        lines += _table(["Dataset", *(f.capitalize() for f in fields)],
                        [[row.dataset, *(_fmt(getattr(row, f)) for f in fields)] for row in report.table], "lr")
        lines.append("")
    lines += _scores_section(report, fields)
    lines += _histograms(report, fields)
    lines += _flags_section(report, fields)
    lines += _summaries(report, fields, tgt)
    lines += _worst_rows(report, fields, texts or {})
    lines += ["", "## Provenance", "",
              f"- Source: `{report.source.path}` ({report.source.checksum})",
              f"- Translation: `{report.translated.path}` ({report.translated.checksum})"]
    if "checks" in report.methods:
        lines.append(f"- Language identifier: {report.identifier}")
    for name, method in report.methods.items():
        sample = f", {method.sample} rows per field (seeded sample)" if method.sample else ""
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
            cells = [_fmt(getattr(d, k)) for k in ("mean", "std", "min", "p5", "p50", "p95", "max")]
            rows.append([f, f"`{score}`", "↑" if info is None or info.higher_is_better else "↓", d.n,
                         outcome.missing if outcome else 0, *cells])
    if not rows:
        return []
    header = ["Field", "score", "better", "n", "no answer", "mean", "std", "min", "p5", "p50", "p95", "max"]
    lines = ["## Scores", ""] + _table(header, rows, "lllr") + [""]
    lines += [f"- `{name}` ({info.method}): {info.description}" for name, info in report.scores.items()]
    return lines + [""]


def _histograms(report: QualityReport, fields: list[str]) -> list[str]:
    lines = []
    for f in fields:
        hist = report.fields[f].similarity.histogram
        if not hist or not sum(hist.counts):
            continue
        top = max(hist.counts)
        lines += [f"Similarity histogram, {f}:", "", "```"]
        for lo, hi, count in zip(hist.edges, hist.edges[1:], hist.counts):
            if count:
                lines.append(f"{lo:.2f}–{hi:.2f} {count:7d} {'#' * max(1, round(40 * count / top))}")
        lines += ["```", ""]
    return lines


def _flags_section(report: QualityReport, fields: list[str]) -> list[str]:
    reasons = sorted({r for f in fields for r in report.fields[f].flags})
    header = ["Field", "pairs", "missing", "flagged", *reasons]  # one list: header and separator always agree
    rows = [[f, e.pairs, e.missing, e.flagged_items, *(e.flags.get(r, 0) for r in reasons)]
            for f, e in ((f, report.fields[f]) for f in fields)]
    lines = ["## Flags", ""] + _table(header, rows, "lr")
    if not reasons:
        return lines + ["", "No pair was flagged."]
    legend = {reason: (name, text) for name, m in report.methods.items() for reason, text in m.flags.items()}
    lines += ["", "Every flagged pair is in `flagged.jsonl` with its reasons:", ""]
    for reason in reasons:
        method, text = legend.get(reason, ("?", ""))
        lines.append(f"- `{reason}` ({method}): {text}")
    return lines


def _summaries(report: QualityReport, fields: list[str], tgt: str) -> list[str]:
    lines = [""]
    for f in fields:
        checks = report.fields[f].methods.get("checks")
        if checks is not None:
            language = checks.summary.get("language") or {}
            if language.get("checked"):
                top = ", ".join(f"{k} {v}" for k, v in language.get("detected", {}).items())
                lines.append(f"- Language of {f} translations: {100 * language['target_share']:.1f}% {tgt} "
                             f"(detected: {top}).")
            ratio = checks.summary.get("length_ratio") or {}
            if ratio:
                lines.append(f"- Length ratio bounds for {f}: {ratio['bounds'][0]}–{ratio['bounds'][1]} "
                             f"({ratio['method']}).")
        chrf = report.fields[f].corpus_chrf
        if chrf is not None:
            trip = report.fields[f].methods["roundtrip"]
            lines.append(f"- Round trip, {f}: corpus chrF {chrf:.2f} over {trip.scored} back-translations "
                         f"(sacrebleu `{trip.summary.get('signature')}`).")
    return lines


def _worst_rows(report: QualityReport, fields: list[str], texts: dict[tuple[str, str], str]) -> list[str]:
    scores = list(report.scores)
    lines = []
    for f in fields:
        entry = report.fields[f]
        worst = report.ranked_rows(f)[:WORST_ROWS]
        if not worst:
            continue
        rows = []
        for item in worst:
            values = [_fmt(entry.rows.get(s, {}).get(item)) for s in scores]
            excerpt = " ".join(texts.get((f, item), "").split())
            excerpt = (excerpt[:EXCERPT] + "…" if len(excerpt) > EXCERPT else excerpt).replace("|", "\\|")
            rows.append([f"`{item}`", ", ".join(entry.flagged.get(item, [])) or "–", *values, excerpt])
        lines += ["", f"## Worst {len(worst)} {f} rows", "",
                  "Most flags first, then the lowest mean percentile rank over every score.", ""]
        lines += _table(["id", "flags", *(f"`{s}`" for s in scores), "translation"], rows,
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


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with atomic_writer(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_report(output_dir: Path, report: QualityReport, flagged: list[dict], sample: list[dict],
                 texts: dict[tuple[str, str], str] | None = None) -> None:
    """All report files; ``texts`` (``(field, id) -> translation``) gives the worst rows their excerpts."""
    output_dir.mkdir(parents=True, exist_ok=True)
    _write_jsonl(output_dir / "flagged.jsonl", flagged)
    _write_jsonl(output_dir / "review_sample.jsonl", sample)
    with atomic_writer(output_dir / "review_sample.md") as fh:
        fh.write(render_sample(sample))
    with atomic_writer(output_dir / "quality.md") as fh:
        fh.write(render_markdown(report, texts))
    report.save(output_dir / FILENAME)
