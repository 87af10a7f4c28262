"""Run the quality methods over a translated dataset and write the report (``beirx quality``; also run by
``beirx translate`` and ``beirx suite`` when they finish).

For each field (``queries``, ``corpus``) the rows present in both datasets, with a non-empty source, are streamed
from disk in chunks of :data:`~beirx.translate.quality.base.CHUNK` rows and handed to every method in order
(a method that needs the whole field at once gets it in one piece, :attr:`QualityMethod.whole_field`): by
default the methods :data:`~beirx.translate.quality.QUALITY_METHODS` marks
``default`` (``checks``, ``translation_flags``, ``similarity``), else those given (built, or registry names
built with their defaults). Each field's score distributions, flag counts and method summaries land in
``quality.json``; every row's scores and flags are streamed to its sidecar ``rows.jsonl``
(:mod:`beirx.artifacts.quality_rows`); every flagged row goes to ``flagged.jsonl`` with its reasons, evidence
and every score; a seeded random sample per field goes to ``review_sample.jsonl``/``.md`` (BEIR-PL checked 100
pairs by hand).

Memory does not grow with the corpus (except for a whole-field method, or a translation whose rows are not in the
source's order, whose texts are then held): each chunk's rows go to a spill file beside the report, and what needs
the whole field (flags on a field's distribution, percentile ranks, distributions) is decided on per-row arrays
of numbers (8 bytes a row and score); the spill is then streamed once more into the report's files.

Documents are compared as ``(title + " " + text).strip()``, as dense retrievers see them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from beirx.artifacts import quality_rows
from beirx.artifacts.manifest import DatasetSide, TranslationManifest
from beirx.artifacts.quality import (FieldQuality, MethodField, MethodInfo, QualityParameters, QualityReport,
                                     ScoreInfo, TableRow, TranslationSummary, Verifies)
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.progress import progress
from beirx.provenance import Timer, environment_versions
from beirx.translate.quality.registry import QUALITY_METHODS
from beirx.translate.quality import base
from beirx.translate.quality.base import FieldPairs, MethodResult, QualityContext, QualityMethod
from beirx.translate.quality.report import ReportFiles, Row
from beirx.translate.quality.stats import distribution, low_outlier_mask
from beirx.translate.similarity import DEFAULT_ENCODER

log = logging.getLogger(__name__)

FIELDS = ("queries", "corpus")
ROLES = {"queries": "query", "corpus": "passage"}
MethodSpec = QualityMethod | str  # a built method, or a registry name built with its defaults


def field_texts(dataset: BeirDataset, field: str) -> Iterator[tuple[str, str]]:
    """``(id, text)`` of one field in file order: query text, or the document's ``(title + " " + text).strip()``
    (the corpus streamed)."""
    if field == "queries":
        return ((qid, q.text) for qid, q in dataset.queries.items())
    if field == "corpus":
        return ((d.id, f"{d.title} {d.text}".strip()) for d in dataset.iter_corpus())
    raise BeirxError(f"unknown field {field!r}; choose from {', '.join(FIELDS)}")


class _Unaligned(Exception):
    """The translation's rows do not follow the source's."""


def _walk(source: BeirDataset, translated: BeirDataset, field: str,
          lookup: dict[str, str] | None) -> Iterator[tuple[str, str, str | None]]:
    """``(id, source text, translation or None when missing)`` in the source's order: the translation read
    alongside when ``lookup`` is None (raises :class:`_Unaligned` at the end when its rows did not follow the
    source's), else looked up in ``lookup``."""
    others = field_texts(translated, field) if lookup is None else None
    pending = next(others, None) if others is not None else None
    for item, text in field_texts(source, field):
        if others is None:
            yield item, text, lookup.get(item)
        elif pending is not None and pending[0] == item:
            yield item, text, pending[1]
            pending = next(others, None)
        else:
            yield item, text, None
    if pending is not None:
        raise _Unaligned


@dataclass
class _Scan:
    """One walk over a field: how to pair it (``lookup``: the translation's texts, held only when its rows are
    not in the source's order) and its counts."""

    lookup: dict[str, str] | None = None
    pairs: int = 0
    missing: list[str] = dataclasses.field(default_factory=list)  # the first 10
    missing_count: int = 0
    empty_sources: int = 0


def _scan(source: BeirDataset, translated: BeirDataset, name: str) -> _Scan:
    scan = _Scan()
    while True:
        try:
            for item, text, out in _walk(source, translated, name, scan.lookup):
                scan.empty_sources += not text.strip()
                if out is None:
                    scan.missing_count += 1
                    scan.missing += [item] if len(scan.missing) < 10 else []
                elif text.strip():
                    scan.pairs += 1
            return scan
        except _Unaligned:
            log.info("%s %s: the translation's rows are not in the source's order; holding its texts in memory",
                     translated.name, name)
            scan = _Scan(lookup=dict(field_texts(translated, name)))


def _chunks(source: BeirDataset, translated: BeirDataset, name: str, scan: _Scan,
            keep: set[int] | None) -> Iterator[FieldPairs]:
    """The field's aligned rows (those at the positions ``keep``, all when None) in chunks of :data:`~beirx.translate.quality.base.CHUNK`."""
    chunk = FieldPairs(name, ROLES[name], [], [], [])
    position = -1
    for item, text, out in _walk(source, translated, name, scan.lookup):
        if out is None or not text.strip():
            continue
        position += 1
        if keep is None or position in keep:
            chunk.ids.append(item), chunk.sources.append(text), chunk.translations.append(out)
        if len(chunk) == base.CHUNK:
            yield chunk
            chunk = FieldPairs(name, ROLES[name], [], [], [])
    if len(chunk):
        yield chunk


def _translation_summary(manifest: TranslationManifest | None) -> TranslationSummary | None:
    """The translator and whether the translation is a ``--limit`` preview (then items are missing by design)."""
    if manifest is None:
        return None
    return TranslationSummary(translator=manifest.translator, partial=manifest.partial, limit=manifest.options.limit,
                              untranslated_fields=list(manifest.untranslated_fields))


def report_dir(translated: BeirDataset, output_dir: Path | str | None = None) -> Path:
    """Where the report goes: ``output_dir``, by default ``<translated folder>/quality``."""
    return Path(output_dir) if output_dir is not None else QualityReport.path_in(translated.root).parent


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
    with ReportFiles(output_dir, sample_size, seed) as files:
        for name in fields:
            scan = _scan(source, translated, name)
            keep = None
            if max_items is not None and scan.pairs > max_items:  # (positions: the same rows as sampling the IDs)
                keep = set(random.Random(f"{seed}-{name}-items").sample(range(scan.pairs), max_items))
            rows = _Field(name, len(keep) if keep is not None else scan.pairs, methods, context, timer)
            log.info("quality of %s %s: %d pairs (%d missing in the translation); methods: %s", translated.name,
                     name, rows.size, scan.missing_count, ", ".join(m.name for m in methods))
            with tempfile.TemporaryFile("w+", encoding="utf-8", dir=output_dir, suffix=".spill") as spill:
                rows.score(lambda: _chunks(source, translated, name, scan, keep), spill)
                flags, flagged_items = files.add(name, rows.size, rows.finish(spill))
            entries[name] = rows.quality(scan, flags, flagged_items)
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


class _Field:
    """Scoring one field: per-row numbers (scores, measures) as arrays over the field's rows (NaN: none), each
    method's outcome; the rows themselves wait in a spill file until the field's flags and ranks are known."""

    def __init__(self, name: str, size: int, methods: Sequence[QualityMethod], context: QualityContext, timer: Timer):
        self.name, self.size, self.methods, self.context, self.timer = name, size, methods, context, timer
        self.arrays: dict[str, np.ndarray] = {}  # score, or "method.measure" -> its per-row values
        self.seen: dict[str, dict[str, None]] = {m.name: {} for m in methods}  # each method's scores, in order
        self.outcomes = {m.name: MethodField(scored=0, missing=0) for m in methods}

    def _score(self, method: QualityMethod, pairs: FieldPairs) -> MethodResult:
        with self.timer.section(f"{self.name}.{method.name}"):
            result = method.score(pairs, self.context)
        outcome = self.outcomes[method.name]
        outcome.scored, outcome.missing = outcome.scored + result.scored, outcome.missing + result.missing
        outcome.summary.update(result.summary)
        self.seen[method.name].update(dict.fromkeys(result.values))
        return result

    def _array(self, key: str) -> np.ndarray:
        if key not in self.arrays:
            self.arrays[key] = np.full(self.size, np.nan)
        return self.arrays[key]

    def score(self, chunks: Callable[[], Iterator[FieldPairs]], spill: TextIO) -> None:
        """Score every chunk, keeping the numbers and spilling each row with every method's findings."""
        whole: dict[str, MethodResult] = {}
        if any(m.whole_field for m in self.methods):
            ids, sources, translations = [], [], []
            for chunk in chunks():
                ids += chunk.ids
                sources += chunk.sources
                translations += chunk.translations
            pairs = FieldPairs(self.name, ROLES[self.name], ids, sources, translations)
            whole = {m.name: self._score(m, pairs) for m in self.methods if m.whole_field}
            del pairs, ids, sources, translations
        start = 0
        with progress(total=self.size, desc=f"quality {self.name}", unit="row",
                      enabled=self.context.show_progress) as bar:
            for chunk in chunks():
                results = [whole[m.name] if m.whole_field else self._score(m, chunk) for m in self.methods]
                for m, result in zip(self.methods, results):
                    for key, found in [*result.values.items(),
                                       *((f"{m.name}.{k}", v) for k, v in result.measures.items())]:
                        values = self._array(key)
                        for n, item in enumerate(chunk.ids, start):
                            if found.get(item) is not None:
                                values[n] = found[item]
                for n, item in enumerate(chunk.ids):
                    found = [[{score: v[item] for score, v in r.values.items() if item in v}, r.reasons.get(item, []),
                              r.details.get(item, {}), {k: t[item] for k, t in r.texts.items() if item in t},
                              {reason: e[item] for reason, e in r.deferred.items() if item in e}] for r in results]
                    spill.write(json.dumps([item, chunk.sources[n], chunk.translations[n], found],
                                           ensure_ascii=False) + "\n")
                start += len(chunk)
                bar.update(len(chunk))

    def finish(self, spill: TextIO) -> Iterator[Row]:
        """The flags decided on the whole field (each method's :meth:`~QualityMethod.finish`, every score's low
        outliers), the ranks, then every row from the spill, complete."""
        masks: dict[str, dict[str, np.ndarray]] = {}
        for m in self.methods:
            values = {s.name: self.arrays[s.name] for s in m.scores if s.name in self.arrays}
            values.update((k.split(".", 1)[1], v) for k, v in self.arrays.items() if k.startswith(f"{m.name}."))
            found, summary = m.finish(self.name, values, self.context)
            masks[m.name] = {**{s.low_outlier: low_outlier_mask(values[s.name], s.higher_is_better)
                                for s in m.scores if s.low_outlier and s.name in values}, **found}
            self.outcomes[m.name].summary.update(summary)
        scales = {s.name: s.scale for m in self.methods for s in m.scores}
        self.arrays = {score: self.arrays[score] for score in self._scores()}  # the measures are done with
        self.distributions = {score: distribution(values[~np.isnan(values)], scales[score])
                              for score, values in self.arrays.items()}
        higher = {s.name: s.higher_is_better for m in self.methods for s in m.scores}
        ranks = quality_rows.percentile_ranks(self.size, self.arrays, higher, lambda wanted: self._ids(spill, wanted))
        self.arrays = {}
        spill.seek(0)
        for n, line in enumerate(spill):
            item, source, translation, found = json.loads(line)
            reasons, scores, details, texts = [], {}, {}, {}
            for m, (values, flags, evidence, more, deferred) in zip(self.methods, found):
                extra = [reason for reason, mask in masks[m.name].items() if mask[n]]
                if extra:  # a method's reasons are listed in the order it declares them
                    order = list(m.flags)
                    flags = sorted(flags + extra, key=lambda r: order.index(r) if r in order else len(order))
                    evidence.update(e for reason in extra for e in deferred.get(reason, {}).items())
                reasons += flags
                scores.update(values)
                details.update(evidence)
                texts.update(more)
            rank = None if np.isnan(ranks[n]) else float(ranks[n])
            yield quality_rows.record(self.name, item, reasons, rank, scores), details, texts, source, translation

    @staticmethod
    def _ids(spill: TextIO, wanted: np.ndarray) -> np.ndarray:
        """The UTF-8 IDs of the rows at the sorted positions ``wanted``, read back from the spill."""
        spill.seek(0)
        parts, found, k = [], [], 0
        for n, line in enumerate(spill):
            if k < len(wanted) and n == wanted[k]:
                found.append(json.loads(line)[0].encode())
                k += 1
                if len(found) == 65536:  # bytes objects in bounded batches, the rest as one array
                    parts.append(np.array(found, dtype="S"))
                    found = []
        return np.concatenate(parts + [np.array(found, dtype="S")])

    def _scores(self) -> list[str]:
        return [score for m in self.methods for score in self.seen[m.name]]

    def quality(self, scan: _Scan, flags: dict[str, int], flagged_items: int) -> FieldQuality:
        """Every method's score distributions, flag counts, outcome and card figures on the field."""
        entry = FieldQuality(pairs=self.size, missing=scan.missing_count, empty_sources=scan.empty_sources,
                             flags=dict(sorted(flags.items())), flagged_items=flagged_items, scores=self.distributions,
                             methods=self.outcomes, missing_examples=scan.missing or None)
        for method in self.methods:  # recorded, so a dataset card reads them without knowing the method
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
