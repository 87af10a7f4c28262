"""Run the quality methods over a translated dataset and write the report (``beirx quality``; also run by
``beirx translate`` and ``beirx suite`` when they finish).

Each field's pairs (:mod:`~beirx.translate.quality.pairs`) go through every method chunk by chunk
(:mod:`~beirx.translate.quality.field`); the rows stream into the report's files (``rows.jsonl``, ``flagged.jsonl``,
a seeded review sample, as BEIR-PL checked 100 pairs by hand: :mod:`~beirx.translate.quality.report_files`) and each
field's distributions, flag counts and method summaries land in ``quality.json``.
"""

from __future__ import annotations

import logging
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from beirx.artifacts.manifest import DatasetSide
from beirx.artifacts.quality import (FieldQuality, MethodInfo, QualityParameters, QualityReport, ScoreInfo, TableRow,
                                     TranslationSummary, Verifies)
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.provenance import Timer, environment_versions
from beirx.translate.quality import pairs
from beirx.translate.quality.base import JudgedRows, MethodSpec, QualityContext, QualityMethod, resolve_methods
from beirx.translate.quality.field import FieldScorer
from beirx.translate.quality.pair_encoder import DEFAULT_ENCODER
from beirx.translate.quality.report_files import ReportFiles

log = logging.getLogger(__name__)


def report_dir(translated: BeirDataset, output_dir: Path | str | None = None) -> Path:
    """Where the report goes: ``output_dir``, by default ``<translated folder>/quality``."""
    return Path(output_dir) if output_dir is not None else QualityReport.path_in(translated.root).parent


def _fields(translated: BeirDataset, fields: Sequence[str]) -> list[str]:
    """``fields`` checked, without those ``beirx translate`` copied untranslated (nothing to score)."""
    for field in fields:
        if field not in pairs.FIELDS:
            raise BeirxError(f"unknown field {field!r}; choose from {', '.join(pairs.FIELDS)}")
    manifest = translated.translation
    copied = [f for f in fields if manifest is not None and f in manifest.untranslated_fields]
    if copied:
        log.info("not scoring %s: beirx translate copied it untranslated", ", ".join(copied))
    return [f for f in fields if f not in copied]


def run_quality(source: BeirDataset, translated: BeirDataset, output_dir: Path | str | None = None, *,
                src_lang: str, tgt_lang: str, methods: Sequence[MethodSpec] | None = None,
                encoder: str = DEFAULT_ENCODER, encoder_revision: str | None = None, batch_size: int = 32,
                use_cache: bool = True, fields: Sequence[str] = pairs.FIELDS, sample_size: int = 100,
                seed: int = 0, max_items: int | None = None, show_progress: bool = True) -> QualityReport:
    """Score ``translated`` against ``source`` (same IDs) with ``methods`` (:func:`resolve_methods`) and write the
    report's files atomically to ``output_dir`` (:func:`report_dir`).

    ``encoder`` (Hub id or folder; default LaBSE, as BEIR-PL) is the multilingual sentence-transformers model
    every embedding method shares. A field ``beirx translate`` copied untranslated is skipped. ``sample_size``
    pairs per field go to the manual-review sample; ``max_items`` scores a seeded subset of at most that many
    pairs per field; ``seed`` makes every sample reproducible.
    """
    from beirx.translate.quality.pair_encoder import PairEncoder

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
    with ReportFiles(output_dir, sample_size, seed) as files:
        for name in fields:
            found = pairs.scan(source, translated, name)
            keep = None
            if max_items is not None and found.pairs > max_items:  # (positions: the same rows as sampling the IDs)
                keep = set(random.Random(f"{seed}-{name}-items").sample(range(found.pairs), max_items))
            scorer = FieldScorer(name, len(keep) if keep is not None else found.pairs, methods, context, timer)
            log.info("quality of %s %s: %d pairs (%d missing in the translation); methods: %s", translated.name,
                     name, scorer.size, found.missing_count, ", ".join(m.name for m in methods))
            with tempfile.TemporaryFile("w+", encoding="utf-8", dir=output_dir, suffix=".spill") as spill:
                scorer.score(lambda size: pairs.chunks(source, translated, name, found, keep, size), spill)
                flags, flagged_items = files.add(name, scorer.size, scorer.finish(spill))
            entries[name] = scorer.quality(found, flags, flagged_items)
        timings = {**timer.seconds, "total": round(time.time() - started, 3)}
        report = _report(source, translated, methods, context, entries,
                         QualityParameters(fields=list(entries), sample_size=sample_size, seed=seed,
                                           max_items=max_items), timings)
        files.finish(report)
    return report


def _report(source: BeirDataset, translated: BeirDataset, methods: Sequence[QualityMethod],
            context: QualityContext, entries: dict[str, FieldQuality], parameters: QualityParameters,
            timings: dict[str, float]) -> QualityReport:
    """``quality.json``'s content: what ran, what each score means, each field's figures."""
    manifest = translated.translation  # a --limit preview misses items by design
    return QualityReport(
        dataset=translated.name,
        source=DatasetSide(path=str(source.root), name=source.name, lang=context.src_lang, checksum=source.checksum()),
        translated=DatasetSide(path=str(translated.root), name=translated.name, lang=context.tgt_lang,
                               checksum=translated.checksum()),
        translation=None if manifest is None else TranslationSummary(
            translator=manifest.translator, partial=manifest.partial, limit=manifest.options.limit,
            untranslated_fields=list(manifest.untranslated_fields)),
        methods={m.name: MethodInfo(description=_description(m, context), scores=[s.name for s in m.scores],
                                    flags=dict(m.flags), sample=None if isinstance(m.sample, JudgedRows) else m.sample,
                                    verifies=Verifies(note=m.verifies[0], label=m.verifies[1]) if m.verifies else None)
                 for m in methods},
        scores={s.name: ScoreInfo(method=m.name, description=s.description, higher_is_better=s.higher_is_better,
                                  scale=list(s.scale) if s.scale else None) for m in methods for s in m.scores},
        parameters=parameters,
        fields=entries,
        table=[TableRow(dataset=translated.name, **{f: e.similarity.mean for f, e in entries.items()})],
        versions=environment_versions(),
        timings=timings,
    )


def _description(method: QualityMethod, context: QualityContext) -> dict:
    """What ``quality.json`` records of a method: its own description, and the rows it scored when they are a
    split's judged rows rather than a seeded sample (``"rows": "qrels:test"``; its ``sample`` is then null)."""
    description = method.describe(context)
    if isinstance(method.sample, JudgedRows):
        description = {**description, "rows": str(method.sample)}
    return description
