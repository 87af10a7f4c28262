"""Run the quality methods over a translated dataset and write the report (``beirx quality``; also run by
``beirx translate`` when it finishes).

For each field (``queries``, ``corpus``) the rows present in both datasets are handed to every method
(:mod:`beirx.translate.quality`: always ``checks`` and ``similarity``, plus those the user asked for).
Their per-row scores and flags land generically in ``quality.json``; every flagged row goes to
``flagged.jsonl`` with its reasons, evidence and every score; a seeded random sample per field goes to
``review_sample.jsonl``/``.md`` (BEIR-PL checked 100 pairs by hand).

Documents are compared as ``(title + " " + text).strip()``, as dense retrievers see them.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import DatasetSide, TranslationManifest
from beirx.artifacts.quality import (FieldQuality, MethodField, MethodInfo, QualityParameters, QualityReport,
                                     ScoreInfo, TableRow, TranslationSummary)
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.provenance import Timer, environment_versions
from beirx.translate.backends.base import Translator
from beirx.translate.quality.base import FieldPairs, MethodResult, QualityContext, QualityMethod
from beirx.translate.quality.checks import Checks
from beirx.translate.quality.embedding import EmbeddingSimilarity
from beirx.translate.quality.report import write_report
from beirx.translate.quality.roundtrip import DEFAULT_SAMPLE, RoundTrip
from beirx.translate.quality.stats import distribution
from beirx.translate.quality.translation_flags import TranslationFlags
from beirx.translate.similarity import DEFAULT_ENCODER

log = logging.getLogger(__name__)

FIELDS = ("queries", "corpus")
ROLES = {"queries": "query", "corpus": "passage"}
JSONL_DIGITS = 4  # scores in flagged.jsonl / review_sample.jsonl; quality.json keeps full precision


def field_texts(dataset: BeirDataset, field: str) -> dict[str, str]:
    """``{id: text}`` of one field: query text, or the document's ``(title + " " + text).strip()``."""
    if field == "queries":
        return {qid: q.text for qid, q in dataset.queries.items()}
    if field == "corpus":
        return {did: f"{d.title} {d.text}".strip() for did, d in dataset.corpus.items()}
    raise BeirxError(f"unknown field {field!r}; choose from {', '.join(FIELDS)}")


def _translation_summary(manifest: TranslationManifest | None) -> TranslationSummary | None:
    """The translator and whether the translation is a ``--limit`` preview (then items are missing by design)."""
    if manifest is None:
        return None
    return TranslationSummary(translator=manifest.translator, partial=manifest.partial, limit=manifest.options.limit,
                              untranslated_fields=list(manifest.untranslated_fields))


def report_dir(translated: BeirDataset, output_dir: Path | str | None = None) -> Path:
    """Where the report goes: ``output_dir``, by default ``<translated folder>/quality``."""
    return Path(output_dir) if output_dir is not None else QualityReport.path_in(translated.root).parent


def _pairs(source: BeirDataset, translated: BeirDataset, field: str, max_items: int | None,
           seed: int) -> tuple[FieldPairs, list[str], int]:
    """The field's aligned rows (a seeded subset with ``max_items``), the missing IDs, the empty sources."""
    src_texts, out_texts = field_texts(source, field), field_texts(translated, field)
    missing = [i for i in src_texts if i not in out_texts]
    ids = [i for i in src_texts if i in out_texts and src_texts[i].strip()]
    empty_sources = sum(1 for i in src_texts if not src_texts[i].strip())
    if max_items is not None and len(ids) > max_items:
        keep = set(random.Random(f"{seed}-{field}-items").sample(ids, max_items))
        ids = [i for i in ids if i in keep]
    pairs = FieldPairs(field, ROLES[field], ids, [src_texts[i] for i in ids], [out_texts[i] for i in ids])
    return pairs, missing, empty_sources


def _field_quality(pairs: FieldPairs, results: dict[str, MethodResult], methods: Sequence[QualityMethod],
                   missing: list[str], empty_sources: int) -> FieldQuality:
    """Every method's scores, flags and summary of one field in the report's generic layout."""
    values = {score: found for r in results.values() for score, found in r.values.items()}
    scales = {s.name: s.scale for m in methods for s in m.scores}
    flagged: dict[str, list[str]] = {}
    for item in pairs.ids:  # row order, methods in run order: a row's reasons read the same on every run
        reasons = [reason for m in methods for reason in results[m.name].reasons.get(item, [])]
        if reasons:
            flagged[item] = reasons
    counts: dict[str, int] = {}
    for reasons in flagged.values():
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
    return FieldQuality(
        pairs=len(pairs), missing=len(missing), empty_sources=empty_sources,
        flags=dict(sorted(counts.items())), flagged_items=len(flagged),
        scores={score: distribution([v for v in found.values() if v is not None], scales[score])
                for score, found in values.items()},
        methods={name: MethodField(scored=r.scored, missing=r.missing, summary=r.summary) for name, r in results.items()},
        rows=values, flagged=flagged, missing_examples=missing[:10] if missing else None)


def _rows(pairs: FieldPairs, results: dict[str, MethodResult], flagged: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One dict per row for ``flagged.jsonl``/``review_sample.jsonl``: every score, reasons, evidence, texts."""
    rows = []
    for n, item in enumerate(pairs.ids):
        row: dict[str, Any] = {"field": pairs.field, "id": item}
        details: dict[str, Any] = {}
        texts: dict[str, str] = {}
        for result in results.values():
            for score, found in result.values.items():
                if item in found:
                    row[score] = None if found[item] is None else round(found[item], JSONL_DIGITS)
            details.update(result.details.get(item, {}))
            texts.update({key: by_id[item] for key, by_id in result.texts.items() if item in by_id})
        row.update(reasons=flagged.get(item, []), details=details, source=pairs.sources[n],
                   translation=pairs.translations[n], **texts)
        rows.append(row)
    return rows


def default_methods(roundtrip_translator: Translator | None = None,
                    roundtrip_sample: int | None = DEFAULT_SAMPLE) -> list[QualityMethod]:
    """The always-on methods (``checks``, ``translation_flags``, ``similarity``), plus a round trip when a
    translator is given."""
    methods: list[QualityMethod] = [Checks(), TranslationFlags(), EmbeddingSimilarity()]
    if roundtrip_translator is not None:
        methods.append(RoundTrip(roundtrip_translator, roundtrip_sample))
    return methods


def run_quality(source: BeirDataset, translated: BeirDataset, output_dir: Path | str | None = None, *,
                src_lang: str, tgt_lang: str, methods: Sequence[QualityMethod] | None = None,
                encoder: str = DEFAULT_ENCODER, encoder_revision: str | None = None, batch_size: int = 32,
                use_cache: bool = True, fields: tuple[str, ...] | list[str] = FIELDS, sample_size: int = 100,
                seed: int = 0, max_items: int | None = None, show_progress: bool = True,
                roundtrip_translator: Translator | None = None,
                roundtrip_sample: int | None = DEFAULT_SAMPLE) -> QualityReport:
    """Score ``translated`` against ``source`` with every method and write the report (in :func:`report_dir`).

    Args:
        source, translated: the original and the translated BEIR folders (same IDs).
        output_dir: where ``quality.json``, ``quality.md``, ``flagged.jsonl``, ``review_sample.jsonl`` and
            ``review_sample.md`` are written (atomically); default ``<translated folder>/quality``.
        src_lang, tgt_lang: ISO 639-1 codes of the source and translation.
        methods: the quality methods to run, in order (default :func:`default_methods`, with a round trip
            through ``roundtrip_translator`` over ``roundtrip_sample`` rows per field when one is given).
        encoder: the multilingual sentence-transformers model (Hub id or folder) every embedding method
            shares; default LaBSE as in BEIR-PL. ``encoder_revision`` pins a Hub revision, ``batch_size``
            and ``use_cache`` (cached embeddings) tune it.
        fields: any of ``queries``, ``corpus``; a field that ``beirx translate`` copied untranslated (its
            manifest's ``untranslated_fields``) is skipped.
        sample_size: pairs per field in the manual-review sample; ``seed`` makes every sample reproducible.
        max_items: score a seeded random subset of at most this many items per field (None = all).
        show_progress: progress bars (log lines when stderr is not a terminal).

    Returns:
        The :class:`~beirx.artifacts.quality.QualityReport` (also in ``quality.json``).
    """
    from beirx.translate.similarity import PairEncoder

    output_dir = report_dir(translated, output_dir)
    for field in fields:
        if field not in FIELDS:
            raise BeirxError(f"unknown field {field!r}; choose from {', '.join(FIELDS)}")
    methods = list(methods) if methods is not None else default_methods(roundtrip_translator, roundtrip_sample)
    _check_unique_scores(methods)
    manifest = translated.translation
    copied = [f for f in fields if manifest is not None and f in manifest.untranslated_fields]
    if copied:
        log.info("not scoring %s: beirx translate copied it untranslated", ", ".join(copied))
        fields = [f for f in fields if f not in copied]
    timer = Timer()
    started = time.time()
    context = QualityContext(src_lang=src_lang, tgt_lang=tgt_lang, seed=seed, show_progress=show_progress,
                             encoder_factory=lambda: PairEncoder(encoder, revision=encoder_revision,
                                                                 batch_size=batch_size, use_cache=use_cache,
                                                                 show_progress=show_progress),
                             translated_root=translated.root)
    entries: dict[str, FieldQuality] = {}
    flagged: list[dict] = []
    samples: list[dict] = []
    texts: dict[tuple[str, str], str] = {}
    for field in fields:
        pairs, missing, empty_sources = _pairs(source, translated, field, max_items, seed)
        log.info("quality of %s %s: %d pairs (%d missing in the translation); methods: %s", translated.name, field,
                 len(pairs), len(missing), ", ".join(m.name for m in methods))
        results: dict[str, MethodResult] = {}
        for method in methods:
            with timer.section(f"{field}.{method.name}"):
                results[method.name] = method.score(pairs, context)
        entry = _field_quality(pairs, results, methods, missing, empty_sources)
        entries[field] = entry
        rows = _rows(pairs, results, entry.flagged)
        texts.update(((field, item), text) for item, text in zip(pairs.ids, pairs.translations))
        flagged += [r for r in rows if r["reasons"]]
        picked = sorted(random.Random(f"{seed}-{field}-review").sample(range(len(rows)), min(sample_size, len(rows))))
        samples += [rows[i] for i in picked]
    report = QualityReport(
        dataset=translated.name,
        source=DatasetSide(path=str(source.root), name=source.name, lang=src_lang, checksum=source.checksum()),
        translated=DatasetSide(path=str(translated.root), name=translated.name, lang=tgt_lang,
                               checksum=translated.checksum()),
        translation=_translation_summary(manifest),
        methods={m.name: MethodInfo(description=m.describe(context), scores=[s.name for s in m.scores],
                                    flags=dict(m.flags), sample=m.sample) for m in methods},
        scores={s.name: ScoreInfo(method=m.name, description=s.description, higher_is_better=s.higher_is_better,
                                  scale=list(s.scale) if s.scale else None) for m in methods for s in m.scores},
        parameters=QualityParameters(fields=list(fields), sample_size=sample_size, seed=seed, max_items=max_items),
        fields=entries,
        table=[TableRow(dataset=translated.name, **{f: entries[f].similarity.mean for f in fields})],
        versions=environment_versions(),
        timings={**timer.seconds, "total": round(time.time() - started, 3)},
    )
    write_report(output_dir, report, flagged, samples, texts)
    return report


def _check_unique_scores(methods: Sequence[QualityMethod]) -> None:
    seen: dict[str, str] = {}
    for method in methods:
        for score in method.scores:
            if score.name in seen:
                raise BeirxError(f"quality methods {seen[score.name]} and {method.name} both produce a score named "
                                 f"{score.name!r}")
            seen[score.name] = method.name
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise BeirxError(f"a quality method is listed twice: {', '.join(names)}")
