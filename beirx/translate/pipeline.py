"""Translate a BEIR dataset: segment, deduplicate, serve from the translation memory, translate the misses
in length-sorted batches, reassemble, write atomically, and record what was done in a manifest.

Resume without loss and byte-identical output: every batch is committed to the SQLite memory as soon as
it is translated, and nothing is written to the output folder before all segments are translated. The
batches are planned over *all* unique segments (sorted by length, then text) before any is skipped,
so a rerun of the same command meets the same batches, skips those committed, and sends the others to
the backend exactly as the first run would have: even a backend whose output depends on the batch
(padding in NMT) gives the same bytes. Output files are replaced atomically (beirx.atomic), so a kill
while writing leaves either the old file or the new one.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import (FILENAME, DatasetSide, MemoryRef, TargetSide, TranslationManifest,
                                      TranslationOptions)
from beirx.atomic import atomic_writer
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.provenance import Timer, environment_versions
from beirx.translate.backends.base import Translator
from beirx.translate.memory import TranslationMemory
from beirx.translate.placeholders import resolve_mode
from beirx.translate.plan import Part, Planner, Unit, lost_placeholders, render, units

log = logging.getLogger(__name__)

FIELDS = ("corpus", "queries")
MANIFEST = FILENAME


@dataclass
class Counts:
    """What the run did, for the manifest: every segment is either served from memory or translated."""

    segments_total: int = 0
    segments_unique: int = 0
    from_memory: int = 0
    translated: int = 0
    batches: int = 0
    empty_translations: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        return {"segments_total": self.segments_total, "segments_unique": self.segments_unique,
                "from_memory": self.from_memory, "translated": self.translated, "batches": self.batches,
                "empty_translations": self.empty_translations, **self.extra}


def translate_segments(segments: Iterable[str], translator: Translator, memory: TranslationMemory, system: str,
                       batch_size: int, counts: Counts, progress: bool = True, desc: str = "translating") -> dict[str, str]:
    """``{segment: translation}`` for every segment, translating only what ``memory`` lacks.

    Unique segments are sorted by (length, text) and cut into batches of ``batch_size`` *before* the
    memory is consulted (see the module docstring); each batch's misses are looked up again just before
    translating (another run may have committed them meanwhile) and committed in one transaction.
    """
    from tqdm import tqdm

    order = sorted(set(segments), key=lambda s: (len(s), s))
    known = memory.lookup(system, order)
    counts.segments_unique += len(order)
    counts.from_memory += len(known)
    with tqdm(total=len(order), initial=len(known), unit="seg", desc=desc, disable=not progress,
              dynamic_ncols=True, smoothing=0.1) as bar:
        for start in range(0, len(order), batch_size):
            missing = [s for s in order[start:start + batch_size] if s not in known]
            if not missing:
                continue
            fresh = memory.lookup(system, missing)
            if fresh:
                known.update(fresh)
                counts.from_memory += len(fresh)
                bar.update(len(fresh))
                missing = [s for s in missing if s not in fresh]
                if not missing:
                    continue
            outputs = translator.translate_batch(missing)
            if len(outputs) != len(missing):
                raise BeirxError(f"translator {translator.name} returned {len(outputs)} translations for "
                                 f"{len(missing)} segments")
            memory.add(system, list(zip(missing, outputs)))
            known.update(zip(missing, outputs))
            counts.translated += len(missing)
            counts.batches += 1
            counts.empty_translations += sum(1 for o in outputs if not o.strip())
            bar.update(len(missing))
    return known


@dataclass
class _Record:
    """One query or document with the parts of its title and text."""

    item: Doc | Query
    title: list[Part]
    text: list[Part]


def _load(dataset: BeirDataset, field: str, limit: int | None) -> list[Doc | Query]:
    items = dataset.iter_corpus() if field == "corpus" else beir_io.iter_queries(dataset.queries_path)
    out = []
    for item in items:
        if limit is not None and len(out) >= limit:
            break
        out.append(item)
    return out


def translate_dataset(dataset: BeirDataset, output: Path | str, translator: Translator, memory: TranslationMemory, *,
                      fields: Iterable[str] = FIELDS, limit: int | None = None, batch_size: int | None = None,
                      verbatim: str = "auto", verbatim_kinds: tuple[str, ...] | None = None,
                      max_segment_tokens: int | None = None, progress: bool = True) -> TranslationManifest:
    """Write the translation of ``dataset`` to ``output`` and return its manifest (also in ``translation.json``).

    Args:
        fields: which of ``corpus``/``queries`` to translate; the others are copied unchanged.
        limit: translate and write only the first ``limit`` records of each translated field (a preview).
        batch_size: segments per backend call (default: the backend's ``max_batch_size``).
        verbatim, verbatim_kinds: how URLs/e-mails/numbers/code are kept (:mod:`beirx.translate.placeholders`).
        max_segment_tokens: cut segments to at most this many backend tokens (default: the model's limit;
            a larger value is capped at the model's limit).
    """
    started = time.time()
    output = Path(output)
    if output.resolve() == dataset.root.resolve():
        raise BeirxError(f"the output folder {output} is the source dataset; choose another --output")
    fields = _check_fields(fields, limit)
    batch_size = int(batch_size or translator.max_batch_size)
    planner, (mode, kinds) = _planner(translator, verbatim, verbatim_kinds, max_segment_tokens)
    timer = Timer()
    counts = Counts()

    with timer.section("segment"):
        records = {f: [_plan_record(item, planner) for item in _load(dataset, f, limit)] for f in fields}
    all_units = [u for recs in records.values() for r in recs for u in (*units(r.title), *units(r.text))]
    counts.segments_total = len(all_units)
    description = translator.describe()
    system = memory.register(description, translator.src, translator.tgt, translator.earlier_descriptions)
    with timer.section("translate"):
        translations = translate_segments((u.masked for u in all_units), translator, memory, system, batch_size,
                                          counts, progress)
        failed = {u for u in all_units if lost_placeholders(u, translations)}
        fallbacks = {u: planner.fallback(u) for u in failed}
        extra_units = [u for parts in fallbacks.values() for u in units(parts)]
        if extra_units:
            log.warning("%d segments lost a placeholder in translation; translating the text around their "
                        "protected tokens instead", len(failed))
            counts.segments_total += len(extra_units)
            translations.update(translate_segments((u.masked for u in extra_units), translator, memory, system,
                                                   batch_size, counts, progress, desc="translating (fallback)"))
    counts.extra = {"placeholder_fallbacks": len(failed), "split_long": planner.long_sentences,
                    **{f: len(recs) for f, recs in records.items()}}

    with timer.section("write"):
        files = _write(dataset, output, records, translations, fallbacks, fields)
    manifest = TranslationManifest(
        source=DatasetSide(path=str(dataset.root), name=dataset.name, lang=translator.src,
                           checksum=dataset.checksum()),
        target=TargetSide(path=str(output), lang=translator.tgt, files=files),
        translator=description,
        memory=MemoryRef(path=str(memory.path), system=system),
        options=TranslationOptions(fields=list(fields), limit=limit, batch_size=batch_size, verbatim=mode,
                                   verbatim_kinds=list(kinds), max_segment_tokens=planner.max_tokens,
                                   segmenter=f"beirx rule-based sentences ({translator.src})"),
        partial=limit is not None,
        untranslated_fields=[f for f in FIELDS if f not in fields],
        counts=counts.as_dict(),
        timings={**timer.seconds, "total": round(time.time() - started, 3)},
        versions=environment_versions(),
    )
    manifest.save(output / MANIFEST)
    log.info("translated %s -> %s: %d segments (%d unique, %d from memory, %d translated)", dataset.name, output,
             counts.segments_total, counts.segments_unique, counts.from_memory, counts.translated)
    return manifest


def dry_run(dataset: BeirDataset, translator: Translator, memory: TranslationMemory, *, fields: Iterable[str] = FIELDS,
            limit: int | None = None, verbatim: str = "auto", verbatim_kinds: tuple[str, ...] | None = None,
            max_segment_tokens: int | None = None) -> dict[str, Any]:
    """What :func:`translate_dataset` would send to the backend, without translating or writing anything.

    Counts segments and the characters still missing from the memory and, for paid backends (whose
    ``estimate_cost`` gives one), the list-price estimate. Placeholder fallbacks are unknown before translating.
    """
    fields = _check_fields(fields, limit)
    planner, _ = _planner(translator, verbatim, verbatim_kinds, max_segment_tokens)
    records = [_plan_record(item, planner) for f in fields for item in _load(dataset, f, limit)]
    all_units = [u for r in records for u in (*units(r.title), *units(r.text))]
    unique = sorted({u.masked for u in all_units})
    system = memory.register(translator.describe(), translator.src, translator.tgt, translator.earlier_descriptions)
    known = memory.lookup(system, unique)
    misses = [s for s in unique if s not in known]
    summary = {"segments_total": len(all_units), "segments_unique": len(unique), "from_memory": len(known),
               "to_translate": len(misses), "characters_to_translate": translator.billable_characters(misses),
               "split_long": planner.long_sentences}
    cost = translator.estimate_cost(summary["characters_to_translate"])
    if cost is not None:
        summary["cost"] = cost
    return summary


def _check_fields(fields: Iterable[str], limit: int | None) -> tuple[str, ...]:
    fields = tuple(fields)
    if not fields or set(fields) - set(FIELDS):
        raise BeirxError(f"fields must be among {', '.join(FIELDS)}, got {', '.join(fields) or 'none'}")
    if limit is not None and limit < 1:
        raise BeirxError(f"--limit must be at least 1, got {limit}")
    return fields


def _planner(translator: Translator, verbatim: str, verbatim_kinds: tuple[str, ...] | None,
             max_segment_tokens: int | None) -> tuple[Planner, tuple[str, tuple[str, ...]]]:
    """The planner for ``translator``: the model's token limit (capped by ``max_segment_tokens``)."""
    limits = [x for x in (translator.max_segment_tokens(), max_segment_tokens) if x]
    try:
        mode, kinds = resolve_mode(verbatim, verbatim_kinds, translator.keeps_placeholders)
    except ValueError as exc:
        raise BeirxError(str(exc)) from None
    return Planner(translator.src, mode, kinds, min(limits) if limits else None, translator.count_tokens), (mode, kinds)


def _plan_record(item: Doc | Query, planner: Planner) -> _Record:
    title = planner.plan(item.title) if isinstance(item, Doc) else []
    return _Record(item, title, planner.plan(item.text))


def _write(dataset: BeirDataset, output: Path, records: dict[str, list[_Record]], translations: dict[str, str],
           fallbacks: dict[Unit, list[Part]], fields: tuple[str, ...]) -> dict[str, str]:
    """Write corpus, queries and qrels; return ``{relative path: how it was produced}``."""
    output.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for field_name, source in (("corpus", dataset.corpus_path), ("queries", dataset.queries_path)):
        target = output / source.name
        if field_name not in fields:
            _copy(source, target)
            files[source.name] = "copied"
            continue
        recs = records[field_name]
        if field_name == "corpus":
            beir_io.write_corpus(target, (r.item.with_text(render(r.text, translations, fallbacks),
                                                           render(r.title, translations, fallbacks)) for r in recs))
        else:
            beir_io.write_queries(target, (r.item.with_text(render(r.text, translations, fallbacks)) for r in recs))
        files[source.name] = "translated"
    for split in dataset.splits():
        source = dataset.qrels_path(split)
        _copy(source, output / "qrels" / source.name)
        files[f"qrels/{source.name}"] = "copied"
    return files


def _copy(source: Path, target: Path) -> None:
    """Byte-identical, atomic copy."""
    with open(source, "rb") as src, atomic_writer(target, binary=True) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
