"""Write a quality report: ``quality.json`` + ``quality.md`` (summary, BEIR-PL Table 2 layout),
``flagged.jsonl`` (every flagged pair with its reasons) and ``review_sample.jsonl``/``.md`` (pairs for a
human to check). Every file is written atomically, so a report on disk is always complete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from beirx.artifacts.quality import FILENAME, QualityReport
from beirx.atomic import atomic_writer
from beirx.translate.llm.outcome import QUALITY_REASONS
from beirx.translate.quality_flags import REASONS


def _fmt(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render_markdown(report: QualityReport) -> str:
    fields = report.parameters.fields
    src, tgt = report.source.lang, report.translated.lang
    lines = [f"# Translation quality: {report.dataset} ({src} → {tgt})", "",
             f"Encoder: `{report.encoder_model}` (revision `{report.encoder_revision}`), cosine similarity "
             "of source and translation.", ""]
    translation = report.translation
    if translation:
        lines += [f"Translator: `{json.dumps(translation.translator, ensure_ascii=False)}`.", ""]
        if translation.partial:
            lines += [f"Partial translation (`--limit {translation.limit}`): items beyond the limit are missing "
                      "by design and not scored.", ""]
    lines += ["## Mean similarity (BEIR-PL Table 2 layout)", "",
              "| Dataset | " + " | ".join(f.capitalize() for f in fields) + " |",
              "|---|" + "---:|" * len(fields)]
    for row in report.table:
        lines.append(f"| {row.dataset} | " + " | ".join(_fmt(getattr(row, f)) for f in fields) + " |")
    lines += ["", "## Similarity distribution", "",
              "| Field | n | mean | std | min | p5 | p25 | p50 | p75 | p95 | max |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for f in fields:
        d = report.fields[f].similarity
        cells = [str(d.n)] + [_fmt(getattr(d, k)) for k in ("mean", "std", "min", "p5", "p25", "p50", "p75", "p95",
                                                             "max")]
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    for f in fields:
        hist = report.fields[f].similarity.histogram
        if not hist or not sum(hist.counts):
            continue
        top = max(hist.counts)
        lines += ["", f"Histogram, {f}:", "", "```"]
        for lo, count in zip(hist.edges, hist.counts):
            if count:
                lines.append(f"{lo:.2f}–{lo + 0.05:.2f} {count:7d} {'#' * max(1, round(40 * count / top))}")
        lines.append("```")
    reasons = sorted({r for f in fields for r in report.fields[f].flags})
    header = ["Field", "pairs", "missing", "flagged", *reasons]  # one list: header and separator always agree
    lines += ["", "## Flags", "", "| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for f in fields:
        e = report.fields[f]
        cells = [f, e.pairs, e.missing, e.flagged_items, *(e.flags.get(r, 0) for r in reasons)]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    if reasons:
        lines += ["", "Every flagged pair is in `flagged.jsonl` with its reasons:", ""]
        lines += [f"- `{reason}`: {REASONS.get(reason) or QUALITY_REASONS[reason]}" for reason in reasons]
    else:
        lines += ["", "No pair was flagged."]
    lines.append("")
    for f in fields:
        lang = report.fields[f].language
        if lang.checked:
            top = ", ".join(f"{k} {v}" for k, v in lang.detected.items())
            lines.append(f"- Language of {f} translations: {100 * lang.target_share:.1f}% {tgt} "
                         f"(detected: {top}).")
        ratio = report.fields[f].length_ratio
        lines.append(f"- Length ratio bounds for {f}: {ratio.bounds[0]}–{ratio.bounds[1]} ({ratio.method}).")
    trips = [(f, report.fields[f].roundtrip) for f in fields if report.fields[f].roundtrip]
    if trips:
        lines += ["", "## Round trip", "",
                  f"Back-translation with `{json.dumps(report.parameters.roundtrip_translator)}`, "
                  "chrF against the original.", "", "| Field | n | chrF |", "|---|---:|---:|"]
        lines += [f"| {f} | {t.n} | {t.chrF:.2f} |" for f, t in trips]
        lines += ["", f"sacrebleu signature: `{trips[0][1].signature}`"]
    lines += ["", "## Provenance", "",
              f"- Source: `{report.source.path}` ({report.source.checksum})",
              f"- Translation: `{report.translated.path}` ({report.translated.checksum})",
              f"- Language identifier: {report.identifier}",
              f"- Timings (s): {', '.join(f'{k} {v}' for k, v in report.timings.items())}", ""]
    return "\n".join(lines)


def render_sample(rows: list[dict]) -> str:
    """The manual-review sample: one block per pair with a checkbox to tick when the translation is adequate."""
    lines = ["# Manual review sample", "",
             "Tick the box when the translation is adequate (meaning preserved, fluent enough for retrieval).", ""]
    for n, row in enumerate(rows, 1):
        reasons = ", ".join(row["reasons"]) or "none"
        lines += [f"## {n}. {row['field']} `{row['id']}` — similarity {row['similarity']:.3f}, flags: {reasons}", "",
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


def write_report(output_dir: Path, report: QualityReport, flagged: list[dict], sample: list[dict]) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    _write_jsonl(output_dir / "flagged.jsonl", flagged)
    _write_jsonl(output_dir / "review_sample.jsonl", sample)
    with atomic_writer(output_dir / "review_sample.md") as fh:
        fh.write(render_sample(sample))
    with atomic_writer(output_dir / "quality.md") as fh:
        fh.write(render_markdown(report))
    report.save(output_dir / FILENAME)
