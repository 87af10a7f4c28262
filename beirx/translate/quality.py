"""The QUALITY stage: how good is a machine-translated BEIR dataset? (``beirx quality``; also run by
``beirx translate`` when it finishes.)

For each field (``queries``, ``corpus``) and each item present in both datasets it measures:

1. **Cross-lingual similarity** of source and translation (:mod:`beirx.translate.similarity`): cosine
   of multilingual sentence embeddings, as BEIR-PL's Table 2 (mean LaBSE similarity per dataset and
   field, Wojtasik et al., 2024). Reported as a distribution: mean, std, percentiles and a histogram
   with fixed bins (0.05 wide on [0, 1]) so reports of different datasets compare directly.
2. **Flags** (:mod:`beirx.translate.quality_flags`): empty, untranslated or near-identical copies,
   wrong output language (:mod:`beirx.translate.langid`), length-ratio outliers, lost numbers and URLs,
   low-similarity outliers. Every flagged item goes to ``flagged.jsonl`` with its reasons.
3. **Round trip** (optional): a seeded sample of translations is translated back with a reverse
   backend and compared to the original with chrF (Popović, 2015; sacrebleu), a reference-free proxy
   of adequacy when no human reference exists.
4. **A review sample**: ``sample_size`` random pairs per field (BEIR-PL checked 100 by hand) in
   ``review_sample.jsonl`` and ``review_sample.md`` with a checkbox per pair.

Documents are compared as ``(title + " " + text).strip()``, as dense retrievers see them.
"""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from beirx.artifacts.manifest import DatasetSide, TranslationManifest
from beirx.artifacts.quality import (Distribution, FieldQuality, Histogram, LanguageCheck, LengthRatio,
                                     QualityParameters, QualityReport, RoundTrip, TableRow, TranslationSummary)
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError, require
from beirx.progress import progress
from beirx.provenance import Timer, environment_versions
from beirx.translate import langid, quality_flags
from beirx.translate.backends.base import Translator
from beirx.translate.llm.outcome import fold_into_quality, read_flags
from beirx.translate.quality_report import write_report

log = logging.getLogger(__name__)

FIELDS = ("queries", "corpus")
ROLES = {"queries": "query", "corpus": "passage"}
HISTOGRAM_EDGES = [round(x * 0.05, 2) for x in range(21)]
PERCENTILES = (5, 25, 50, 75, 95)


def field_texts(dataset: BeirDataset, field: str) -> dict[str, str]:
    """``{id: text}`` of one field: query text, or the document's ``(title + " " + text).strip()``."""
    if field == "queries":
        return {qid: q.text for qid, q in dataset.queries.items()}
    if field == "corpus":
        return {did: f"{d.title} {d.text}".strip() for did, d in dataset.corpus.items()}
    raise BeirxError(f"unknown field {field!r}; choose from {', '.join(FIELDS)}")


def distribution(values: np.ndarray) -> Distribution:
    """Mean, population std, min/max, percentiles and a fixed-bin histogram (values clipped to [0, 1])."""
    if len(values) == 0:
        return Distribution(n=0)
    counts, _ = np.histogram(np.clip(values, 0.0, 1.0), bins=HISTOGRAM_EDGES)
    return Distribution(n=int(len(values)), mean=float(values.mean()), std=float(values.std()),
                        min=float(values.min()), max=float(values.max()),
                        **{f"p{p}": float(np.percentile(values, p)) for p in PERCENTILES},
                        histogram=Histogram(edges=list(HISTOGRAM_EDGES), counts=[int(c) for c in counts]))


def back_translate(translator: Translator, texts: list[str]) -> list[str]:
    """``texts`` through ``translator``, segmented into sentences exactly as the pipeline segments
    (:mod:`beirx.translate.plan`), so a model with an input limit never truncates a document."""
    from beirx.translate.plan import translate_texts

    return translate_texts(translator, texts)


def chrf(hypotheses: list[str], references: list[str]) -> dict[str, Any]:
    """Corpus-level chrF (sacrebleu defaults: character 6-grams, beta 2) and its signature."""
    sacrebleu = require("sacrebleu", "translate", "round-trip chrF")
    metric = sacrebleu.metrics.CHRF()
    score = metric.corpus_score(hypotheses, [references])
    return {"chrF": round(float(score.score), 2), "signature": str(metric.get_signature())}


def _analyse_field(field: str, ids: list[str], sources: list[str], translations: list[str], sims: np.ndarray,
                   src_lang: str, tgt_lang: str, show_progress: bool) -> tuple[list[dict], dict[str, Any]]:
    """Per-item flags (with details) and the field's flag summary (flags, flagged_items, length_ratio and
    language, as :class:`~beirx.artifacts.quality.FieldQuality` arguments)."""
    check_lang = langid.supported(tgt_lang)
    target = langid.base_code(tgt_lang)
    too_long, ratio_info = quality_flags.length_outliers([len(s) for s in sources], [len(t) for t in translations])
    low_sim = quality_flags.low_outliers([float(s) for s in sims])
    rows, detected = [], {}
    for i in progress(range(len(ids)), desc=f"quality flags {field}", unit="item", enabled=show_progress):
        src, out = sources[i], translations[i]
        reasons, details = [], {}
        if not out.strip():
            reasons.append("empty")
        else:
            copy = quality_flags.copy_reason(src, out)
            if copy:
                reasons.append(copy)
            if check_lang:
                lang, prob = langid.identify(out)
                detected[lang] = detected.get(lang, 0) + 1
                if langid.wrong_language(lang, prob, src_lang, tgt_lang):
                    reasons.append("wrong_language")
                    details["language"] = {"detected": lang, "probability": round(prob, 3)}
            if too_long[i]:
                reasons.append("length_ratio")
                details["length_ratio"] = round(len(out) / len(src), 3)
            repeated = quality_flags.repetition(src, out)
            if repeated:
                reasons.append("repetition")
                details["repetition"] = repeated
            lost_numbers = sorted(quality_flags.numbers(src) - quality_flags.numbers(out))
            if lost_numbers:
                reasons.append("lost_numbers")
                details["lost_numbers"] = lost_numbers
            lost_urls = sorted(u for u in quality_flags.urls(src) if u not in out)
            if lost_urls:
                reasons.append("lost_urls")
                details["lost_urls"] = lost_urls
        if low_sim[i]:
            reasons.append("low_similarity")
        rows.append({"field": field, "id": ids[i], "similarity": round(float(sims[i]), 4), "reasons": reasons,
                     "details": details, "source": src, "translation": out})
    counts: dict[str, int] = {}
    for row in rows:
        for reason in row["reasons"]:
            counts[reason] = counts.get(reason, 0) + 1
    summary = {"flags": dict(sorted(counts.items())), "flagged_items": sum(1 for r in rows if r["reasons"]),
               "length_ratio": LengthRatio(**ratio_info)}
    summary["language"] = _language_summary(detected, target) if check_lang else \
        LanguageCheck(checked=0, note=f"language {tgt_lang!r} unknown to the identifier")
    return rows, summary


def _language_summary(detected: dict[str, int], target: str) -> LanguageCheck:
    """How many outputs were checked, the share identified as the target language, the top 10 languages."""
    checked = sum(detected.values())
    return LanguageCheck(checked=checked,
                         target_share=round(detected.get(target, 0) / checked, 4) if checked else None,
                         detected=dict(sorted(detected.items(), key=lambda kv: -kv[1])[:10]))


def _translation_summary(manifest: TranslationManifest | None) -> TranslationSummary | None:
    """The translator and whether the translation is a ``--limit`` preview (then items are missing by design)."""
    if manifest is None:
        return None
    return TranslationSummary(translator=manifest.translator, partial=manifest.partial, limit=manifest.options.limit,
                              untranslated_fields=list(manifest.untranslated_fields))


def report_dir(translated: BeirDataset, output_dir: Path | str | None = None) -> Path:
    """Where the report goes: ``output_dir``, by default ``<translated folder>/quality``."""
    return Path(output_dir) if output_dir is not None else QualityReport.path_in(translated.root).parent


def run_quality(source: BeirDataset, translated: BeirDataset, output_dir: Path | str | None = None, *,
                encoder: str = "sentence-transformers/LaBSE", src_lang: str, tgt_lang: str,
                fields: tuple[str, ...] | list[str] = FIELDS, sample_size: int = 100, seed: int = 0,
                roundtrip_translator: Translator | None = None, roundtrip_sample: int = 200, batch_size: int = 32,
                show_progress: bool = True, max_items: int | None = None, encoder_revision: str | None = None,
                use_cache: bool = True) -> QualityReport:
    """Score ``translated`` against ``source`` and write the report (in :func:`report_dir`); return it.

    Args:
        source, translated: the original and the translated BEIR folders (same IDs).
        output_dir: where ``quality.json``, ``quality.md``, ``flagged.jsonl``, ``review_sample.jsonl`` and
            ``review_sample.md`` are written (atomically); default ``<translated folder>/quality``.
        encoder: multilingual sentence-transformers model (Hub id or local folder) for the similarity;
            default LaBSE as in BEIR-PL. ``encoder_revision`` pins a Hub revision.
        src_lang, tgt_lang: ISO 639-1 codes of the source and translation (``tgt_lang`` drives the
            language-ID check).
        fields: any of ``queries``, ``corpus``; a field that ``beirx translate`` copied untranslated (its
            manifest's ``untranslated_fields``) is skipped.
        sample_size: pairs per field in the manual-review sample; ``seed`` makes every sample reproducible.
        roundtrip_translator: a Translator from ``tgt_lang`` back to ``src_lang``; when given,
            ``roundtrip_sample`` translations per field are back-translated and scored with chrF.
        batch_size: encoder batch size. ``max_items``: score a seeded random subset of at most this many
            items per field (None = all) — for corpora too large to encode twice.
        use_cache: reuse cached embeddings. ``show_progress``: progress bars on a terminal (:mod:`beirx.progress`).

    Returns:
        The :class:`~beirx.artifacts.quality.QualityReport` (also in ``quality.json``): per field
        ``similarity`` (distribution), ``flags``, ``language``, ``length_ratio``, ``missing`` and optional
        ``roundtrip``; ``per_query_similarity`` (every scored query); ``table`` (BEIR-PL Table 2 layout: one
        row per dataset, mean similarity per field); provenance (datasets' checksums, encoder and revision,
        language identifier, parameters, versions, timings).
    """
    from beirx.translate.similarity import PairEncoder

    output_dir = report_dir(translated, output_dir)
    for field in fields:
        if field not in FIELDS:
            raise BeirxError(f"unknown field {field!r}; choose from {', '.join(FIELDS)}")
    manifest = translated.translation
    copied = [f for f in fields if manifest is not None and f in manifest.untranslated_fields]
    if copied:
        log.info("not scoring %s: beirx translate copied it untranslated", ", ".join(copied))
        fields = [f for f in fields if f not in copied]
    timer = Timer()
    started = time.time()
    pair_encoder = PairEncoder(encoder, revision=encoder_revision, batch_size=batch_size, use_cache=use_cache,
                               show_progress=show_progress)
    parameters = QualityParameters(fields=list(fields), sample_size=sample_size, seed=seed, max_items=max_items,
                                   roundtrip_sample=roundtrip_sample if roundtrip_translator else None,
                                   roundtrip_translator=roundtrip_translator.describe() if roundtrip_translator
                                   else None)
    entries: dict[str, FieldQuality] = {}
    per_query_similarity: dict[str, float] = {}
    flagged: list[dict] = []
    samples: list[dict] = []
    translation_flags = read_flags(translated.root)  # LLM backends: records that fell back or were flagged
    for field in fields:
        src_texts, out_texts = field_texts(source, field), field_texts(translated, field)
        missing = [i for i in src_texts if i not in out_texts]
        ids = [i for i in src_texts if i in out_texts and src_texts[i].strip()]
        empty_sources = sum(1 for i in src_texts if not src_texts[i].strip())
        if max_items is not None and len(ids) > max_items:
            keep = set(random.Random(f"{seed}-{field}-items").sample(ids, max_items))
            ids = [i for i in ids if i in keep]
        sources = [src_texts[i] for i in ids]
        translations = [out_texts[i] for i in ids]
        log.info("quality of %s %s: %d pairs (%d missing in the translation)", translated.name, field, len(ids),
                 len(missing))
        with timer.section(f"{field}.similarity"):
            sims = pair_encoder.similarities(sources, translations, ROLES[field], f"quality-{field}")
        if field == "queries":
            per_query_similarity = {qid: float(sim) for qid, sim in zip(ids, sims)}
        with timer.section(f"{field}.flags"):
            rows, summary = _analyse_field(field, ids, sources, translations, sims, src_lang, tgt_lang,
                                           show_progress)
            fold_into_quality(rows, summary, translation_flags.get(field, {}))
        entry = FieldQuality(pairs=len(ids), missing=len(missing), empty_sources=empty_sources,
                             similarity=distribution(np.asarray(sims, dtype=np.float64)), **summary,
                             missing_examples=missing[:10] if missing else None)
        if roundtrip_translator is not None and ids:
            with timer.section(f"{field}.roundtrip"):
                picked = sorted(random.Random(f"{seed}-{field}-roundtrip").sample(range(len(ids)),
                                                                                  min(roundtrip_sample, len(ids))))
                back = back_translate(roundtrip_translator, [translations[i] for i in picked])
                entry.roundtrip = RoundTrip(n=len(picked), **chrf(back, [sources[i] for i in picked]))
                for i, text in zip(picked, back):
                    rows[i]["back_translation"] = text
        entries[field] = entry
        flagged += [r for r in rows if r["reasons"]]
        picked = sorted(random.Random(f"{seed}-{field}-review").sample(range(len(rows)), min(sample_size, len(rows))))
        samples += [rows[i] for i in picked]
    report = QualityReport(
        dataset=translated.name,
        source=DatasetSide(path=str(source.root), name=source.name, lang=src_lang, checksum=source.checksum()),
        translated=DatasetSide(path=str(translated.root), name=translated.name, lang=tgt_lang,
                               checksum=translated.checksum()),
        translation=_translation_summary(manifest),
        encoder=pair_encoder.describe(),
        language_identifier=langid.describe(),
        parameters=parameters,
        fields=entries,
        per_query_similarity=per_query_similarity,
        table=[TableRow(dataset=translated.name, **{f: entries[f].similarity.mean for f in fields})],
        versions=environment_versions(),
        timings={**timer.seconds, "total": round(time.time() - started, 3)},
    )
    write_report(output_dir, report, flagged, samples)
    return report
