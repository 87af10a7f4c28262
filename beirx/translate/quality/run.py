"""Run the quality methods over a translated dataset and write the report (``beirx quality``; also run by
``beirx translate`` and ``beirx suite`` when they finish).

For each field (``queries``, ``corpus``) the rows present in both datasets, with a non-empty source, are handed
to every method in order: by default the methods :data:`~beirx.translate.quality.QUALITY_METHODS` marks
``default`` (``checks``, ``translation_flags``, ``similarity``), else those given (built, or registry names
built with their defaults). Each field's score distributions, flag counts and method summaries land in
``quality.json``; every row's scores and flags are streamed to its sidecar ``rows.jsonl``
(:mod:`beirx.artifacts.quality_rows`); every flagged row goes to ``flagged.jsonl`` with its reasons, evidence
and every score; a seeded random sample per field goes to ``review_sample.jsonl``/``.md`` (BEIR-PL checked 100
pairs by hand).

Documents are compared as ``(title + " " + text).strip()``, as dense retrievers see them.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path

from beirx.artifacts.manifest import DatasetSide, TranslationManifest
from beirx.artifacts.quality import (FieldQuality, MethodField, MethodInfo, QualityParameters, QualityReport,
                                     ScoreInfo, TableRow, TranslationSummary, Verifies)
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.provenance import Timer, environment_versions
from beirx.translate.quality.registry import QUALITY_METHODS
from beirx.translate.quality.base import FieldPairs, MethodResult, QualityContext, QualityMethod
from beirx.translate.quality.report import ReportFiles
from beirx.translate.quality.stats import distribution
from beirx.translate.similarity import DEFAULT_ENCODER

log = logging.getLogger(__name__)

FIELDS = ("queries", "corpus")
ROLES = {"queries": "query", "corpus": "passage"}
MethodSpec = QualityMethod | str  # a built method, or a registry name built with its defaults


def field_texts(dataset: BeirDataset, field: str) -> dict[str, str]:
    """``{id: text}`` of one field: query text, or the document's ``(title + " " + text).strip()`` (the corpus
    streamed, not kept as documents besides)."""
    if field == "queries":
        return {qid: q.text for qid, q in dataset.queries.items()}
    if field == "corpus":
        return {d.id: f"{d.title} {d.text}".strip() for d in dataset.iter_corpus()}
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


def resolve_methods(specs: Sequence[MethodSpec] | None) -> list[QualityMethod]:
    """The methods to run: ``specs`` built (a name through the registry, with its defaults), by default every
    registered method marked ``default``; two methods with one name or one score name are refused."""
    if specs is None:
        specs = [name for name in QUALITY_METHODS.in_order() if QUALITY_METHODS.get(name).default]
    methods = [spec if isinstance(spec, QualityMethod) else _build(spec) for spec in specs]
    _check_unique_scores(methods)
    return methods


def _build(name: str) -> QualityMethod:
    cls = QUALITY_METHODS.get(name)
    try:
        return cls()
    except TypeError:
        raise BeirxError(f"quality method {name!r} needs options: build it (e.g. from its beirx quality flags, "
                         f"{cls.__name__}.from_args) and pass the method instead of its name") from None


def _fields(translated: BeirDataset, fields: Sequence[str]) -> list[str]:
    """``fields`` checked, without those ``beirx translate`` copied untranslated (nothing to score)."""
    for field in fields:
        if field not in FIELDS:
            raise BeirxError(f"unknown field {field!r}; choose from {', '.join(FIELDS)}")
    manifest = translated.translation
    copied = [f for f in fields if manifest is not None and f in manifest.untranslated_fields]
    if copied:
        log.info("not scoring %s: beirx translate copied it untranslated", ", ".join(copied))
    return [f for f in fields if f not in copied]


def run_quality(source: BeirDataset, translated: BeirDataset, output_dir: Path | str | None = None, *,
                src_lang: str, tgt_lang: str, methods: Sequence[MethodSpec] | None = None,
                encoder: str = DEFAULT_ENCODER, encoder_revision: str | None = None, batch_size: int = 32,
                use_cache: bool = True, fields: tuple[str, ...] | list[str] = FIELDS, sample_size: int = 100,
                seed: int = 0, max_items: int | None = None, show_progress: bool = True) -> QualityReport:
    """Score ``translated`` against ``source`` with every method and write the report (in :func:`report_dir`).

    Args:
        source, translated: the original and the translated BEIR folders (same IDs).
        output_dir: where ``quality.json``, ``rows.jsonl``, ``quality.md``, ``flagged.jsonl``,
            ``review_sample.jsonl`` and ``review_sample.md`` are written (atomically); default
            ``<translated folder>/quality``.
        src_lang, tgt_lang: ISO 639-1 codes of the source and translation.
        methods: the quality methods to run, in order (:func:`resolve_methods`).
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
    methods = resolve_methods(methods)
    fields = _fields(translated, fields)
    timer, started = Timer(), time.time()
    context = QualityContext(src_lang=src_lang, tgt_lang=tgt_lang, seed=seed, show_progress=show_progress,
                             encoder_factory=lambda: PairEncoder(encoder, revision=encoder_revision,
                                                                 batch_size=batch_size, use_cache=use_cache,
                                                                 show_progress=show_progress),
                             translated_root=translated.root)
    entries: dict[str, FieldQuality] = {}
    with ReportFiles(output_dir, methods, sample_size, seed) as files:
        for field in fields:
            pairs, missing, empty_sources = _pairs(source, translated, field, max_items, seed)
            log.info("quality of %s %s: %d pairs (%d missing in the translation); methods: %s", translated.name,
                     field, len(pairs), len(missing), ", ".join(m.name for m in methods))
            results: dict[str, MethodResult] = {}
            for method in methods:
                with timer.section(f"{field}.{method.name}"):
                    results[method.name] = method.score(pairs, context)
            flags, flagged_items = files.add(pairs, results)
            entries[field] = _field_quality(pairs, results, methods, missing, empty_sources, flags, flagged_items)
            del pairs, results  # before the next field's texts are read
        report = _report(source, translated, src_lang, tgt_lang, methods, context, entries, sample_size, seed,
                         max_items, {**timer.seconds, "total": round(time.time() - started, 3)})
        files.finish(report)
    return report


def _report(source: BeirDataset, translated: BeirDataset, src_lang: str, tgt_lang: str,
            methods: Sequence[QualityMethod], context: QualityContext, entries: dict[str, FieldQuality],
            sample_size: int, seed: int, max_items: int | None, timings: dict[str, float]) -> QualityReport:
    """``quality.json``'s content: what ran, what each score means, each field's figures."""
    fields = list(entries)
    return QualityReport(
        dataset=translated.name,
        source=DatasetSide(path=str(source.root), name=source.name, lang=src_lang, checksum=source.checksum()),
        translated=DatasetSide(path=str(translated.root), name=translated.name, lang=tgt_lang,
                               checksum=translated.checksum()),
        translation=_translation_summary(translated.translation),
        methods={m.name: MethodInfo(description=m.describe(context), scores=[s.name for s in m.scores],
                                    flags=dict(m.flags), sample=m.sample,
                                    verifies=Verifies(note=m.verifies[0], label=m.verifies[1]) if m.verifies else None)
                 for m in methods},
        scores={s.name: ScoreInfo(method=m.name, description=s.description, higher_is_better=s.higher_is_better,
                                  scale=list(s.scale) if s.scale else None) for m in methods for s in m.scores},
        parameters=QualityParameters(fields=fields, sample_size=sample_size, seed=seed, max_items=max_items),
        fields=entries,
        table=[TableRow(dataset=translated.name, **{f: entries[f].similarity.mean for f in fields})],
        versions=environment_versions(),
        timings=timings,
    )


def _field_quality(pairs: FieldPairs, results: dict[str, MethodResult], methods: Sequence[QualityMethod],
                   missing: list[str], empty_sources: int, flags: dict[str, int], flagged_items: int) -> FieldQuality:
    """Every method's score distributions, flag counts and summary of one field."""
    scales = {s.name: s.scale for m in methods for s in m.scores}
    entry = FieldQuality(
        pairs=len(pairs), missing=len(missing), empty_sources=empty_sources,
        flags=dict(sorted(flags.items())), flagged_items=flagged_items,
        scores={score: distribution([v for v in found.values() if v is not None], scales[score])
                for r in results.values() for score, found in r.values.items()},
        methods={name: MethodField(scored=r.scored, missing=r.missing, summary=r.summary) for name, r in results.items()},
        missing_examples=missing[:10] if missing else None)
    for method in methods:  # recorded, so a dataset card reads them without knowing the method
        entry.methods[method.name].figures = type(method).card_figures(entry)
    return entry


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
