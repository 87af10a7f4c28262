"""Translate a BEIR dataset in bounded memory: plan the unique segments onto disk, translate the misses in
length-sorted batches, reassemble and write by streaming, and record what was done in a manifest.

Steps (each streams; memory does not grow with the corpus), each in its own module; this one sequences them:

1. *plan* (:mod:`beirx.translate.planning.dataset_plan`): read the records, segment them, and put each segment to
   translate into a :class:`~beirx.translate.planning.segment_store.SegmentStore` (on disk, deduplicated, kept sorted
   by length then text);
2. *translate* (:mod:`beirx.translate.execution.driver`): cut that order into batches of ``batch_size``, look each
   batch up in the SQLite memory, claim the batch (a lease in the memory, so runs sharing a memory never
   translate the same batch), send its misses to the executor (this process or Ray replicas) and commit
   them in one transaction;
3. *fallbacks* (:mod:`beirx.translate.planning.dataset_plan`): segments whose translation lost a placeholder are found
   from the memory, and the text around their protected tokens is planned and translated the same way;
4. *write* (:mod:`beirx.translate.output.writer`): read the records again, render each from the memory, and stream
   the output files; then the manifest.

Resume without loss and byte-identical output: every batch is committed to the memory as soon as it is
translated (an LLM backend's executor commits every unit as soon as it is validated), and nothing is
written to the output folder before all segments are translated; the output folder is then written whole beside
the old one and swapped in at once (:func:`beirx.atomic.atomic_dir`), so a kill during the write (or an
``--assemble``) leaves the old output or the complete new one. The batches
are planned over *all* unique segments before any is skipped, so a rerun of the same command (or a shard,
or a Ray replica) meets the same batches, skips those committed, and sends the others to the backend
exactly as one uninterrupted run would: even a backend whose output depends on the batch (Apertium's
tagger, padding in NMT) gives the same bytes. Output files are replaced atomically (beirx.atomic).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import FILENAME, TranslationManifest, TranslationOptions
from beirx.atomic import atomic_dir, carry_over
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.provenance import Timer
from beirx.translate.backends.base import Translator
from beirx.translate.execution.driver import IncompleteShards, translate_table
from beirx.translate.execution.executors import make_executor
from beirx.translate.execution.shards import Shard
from beirx.translate.output.writer import build_manifest, write_dataset
from beirx.translate.planning.cost_estimate import Estimate
from beirx.translate.planning.dataset_plan import (FIELDS, Counts, check_fields, chunks, make_planner, plan_fallbacks,
                                                   plan_segments)
from beirx.translate.planning.segment_store import SegmentStore
from beirx.translate.translation_memory import TranslationMemory

log = logging.getLogger(__name__)

MANIFEST = FILENAME


def translate_dataset(dataset: BeirDataset, output: Path | str, translator: Translator, memory: TranslationMemory, *,
                      fields: Iterable[str] = FIELDS, limit: int | None = None, batch_size: int | None = None,
                      verbatim: str = "auto", verbatim_kinds: tuple[str, ...] | None = None,
                      max_segment_tokens: int | None = None, progress: bool = True, executor=None,
                      assemble: int | None = None) -> TranslationManifest:
    """Write the translation of ``dataset`` to ``output`` and return its manifest (also in ``translation.json``).

    Args:
        fields: which of ``corpus``/``queries`` to translate; the others are copied unchanged.
        limit: translate and write only the first ``limit`` records of each translated field (a preview).
        batch_size: segments per backend call (default: the backend's ``max_batch_size``).
        verbatim, verbatim_kinds: how URLs/e-mails/numbers/code are kept (:mod:`beirx.translate.planning.placeholders`).
        max_segment_tokens: cut segments to at most this many backend tokens (default: the model's limit;
            a larger value is capped at the model's limit).
        executor: who translates the batches (default: ``translator`` in this process; see
            :mod:`beirx.translate.execution.executors`).
        assemble: merge the memories of shards 1..``assemble`` (:func:`translate_shard`) into ``memory``
            first and translate none of the main segments: a shard that left some untranslated (or whose
            memory file is missing) fails the run, naming it, before anything is written. The placeholder
            fallbacks, known only once every shard is done, are translated here.
    """
    started = time.time()
    output = Path(output)
    if output.resolve() == dataset.root.resolve():
        raise BeirxError(f"the output folder {output} is the source dataset; choose another --output")
    fields = check_fields(fields, limit)
    batch_size = int(batch_size or translator.max_batch_size)
    planner, (mode, kinds) = make_planner(translator, verbatim, verbatim_kinds, max_segment_tokens)
    executor = executor or make_executor("local", translator)
    timer = Timer()
    counts = Counts(billable=translator.billable_characters)
    description = translator.describe()
    system = memory.register(description, translator.src, translator.tgt, translator.earlier_descriptions)
    shard_memories = _merge_shards(memory, system, assemble) if assemble else []

    with SegmentStore(memory.path.parent) as store:
        with timer.section("segment"):
            sizes = plan_segments(dataset, fields, limit, planner, store, counts)
            split_long = planner.long_sentences
        with timer.section("translate"):
            main = IncompleteShards(assemble) if assemble else executor
            translate_table(store, "main", main, memory, system, batch_size, counts, progress, "translating")
            if assemble:
                main.check(shard_memories)
            failed, extra = plan_fallbacks(dataset, fields, limit, planner, store, memory, system)
            if failed:
                log.warning("%d segments lost a placeholder in translation; translating the text around their "
                            "protected tokens instead", failed)
                counts.segments_total += extra
                translate_table(store, "fallback", executor, memory, system, batch_size, counts, progress,
                                "translating (fallback)")
    counts.extra = {"placeholder_fallbacks": failed, "split_long": split_long, **sizes}

    validated = planner.unit_tokens is not None
    segmenter = f"beirx rule-based sentences ({translator.src})"
    if validated:
        segmenter = (f"beirx document units of at most {planner.unit_tokens} tokens, split at paragraphs then "
                     f"sentences ({translator.src})")
    options = TranslationOptions(fields=list(fields), limit=limit, batch_size=batch_size, verbatim=mode,
                                 verbatim_kinds=list(kinds), max_segment_tokens=planner.max_tokens,
                                 segmenter=segmenter, shards=assemble)
    # The whole folder is written beside the old one and swapped in at once: a kill (or a full disk) leaves
    # the previous output or the complete new one, never new files beside old ones under an old manifest.
    with timer.section("write"), atomic_dir(output) as staging:
        files, flags = write_dataset(dataset, staging, fields, limit, planner, memory, system, validated)
        carry_over(output, staging)
        manifest = build_manifest(dataset, output, translator, description, memory, system, counts, timer,
                                  started, options, files, fields, limit)
        if validated:
            manifest.llm = {**translator.run_report(counts.llm.as_dict()), "output": flags}
        manifest.save(staging / MANIFEST)
    log.info("translated %s -> %s: %d segments (%d unique, %d from memory, %d translated)", dataset.name, output,
             counts.segments_total, counts.segments_unique, counts.from_memory, counts.translated)
    return manifest


def translate_shard(dataset: BeirDataset, translator: Translator, memory: TranslationMemory, shard: Shard, *,
                    fields: Iterable[str] = FIELDS, limit: int | None = None, batch_size: int | None = None,
                    verbatim: str = "auto", verbatim_kinds: tuple[str, ...] | None = None,
                    max_segment_tokens: int | None = None, progress: bool = True, executor=None) -> dict[str, Any]:
    """Translate the batches ``shard`` owns (:mod:`beirx.translate.execution.shards`) into ``memory``, the shard's own
    file; write no dataset. Rerunning resumes. Returns what was done."""
    started = time.time()
    fields = check_fields(fields, limit)
    batch_size = int(batch_size or translator.max_batch_size)
    planner, _ = make_planner(translator, verbatim, verbatim_kinds, max_segment_tokens)
    counts = Counts(billable=translator.billable_characters)
    system = memory.register(translator.describe(), translator.src, translator.tgt, translator.earlier_descriptions)
    with SegmentStore(memory.path.parent) as store:
        sizes = plan_segments(dataset, fields, limit, planner, store, counts)
        translate_table(store, "main", executor or make_executor("local", translator), memory, system, batch_size,
                        counts, progress, f"shard {shard}", shard)
    counts.extra = dict(sizes)
    done = {"shard": str(shard), "memory": str(memory.path), "system": system, "counts": counts.as_dict(),
            "seconds": round(time.time() - started, 3)}
    if counts.llm:
        done["llm"] = counts.llm.as_dict()
    return done


def dry_run(dataset: BeirDataset, translator: Translator, memory: TranslationMemory, *, fields: Iterable[str] = FIELDS,
            limit: int | None = None, verbatim: str = "auto", verbatim_kinds: tuple[str, ...] | None = None,
            max_segment_tokens: int | None = None) -> dict[str, Any]:
    """What :func:`translate_dataset` would send to the backend, without translating or writing anything.

    Counts segments and the characters still missing from the memory and, for paid backends (whose
    ``estimate_cost`` gives one), the list-price estimate. ``characters_total`` and ``tokens_total`` (the
    backend's units) count every unique segment, translated or not: what the dataset costs from scratch, e.g.
    to compare a subset with its full dataset. Placeholder fallbacks are unknown before translating.
    """
    fields = check_fields(fields, limit)
    planner, _ = make_planner(translator, verbatim, verbatim_kinds, max_segment_tokens)
    counts = Counts(billable=translator.billable_characters)
    system = memory.register(translator.describe(), translator.src, translator.tgt, translator.earlier_descriptions)
    unique = known = characters = characters_total = tokens_total = 0
    tokens = Estimate(translator) if planner.unit_tokens else None
    with SegmentStore(memory.path.parent) as store:
        plan_segments(dataset, fields, limit, planner, store, counts)
        for chunk in chunks(store.ordered("main"), 2000):
            found = memory.lookup(system, chunk)
            unique, known = unique + len(chunk), known + len(found)
            missing = [s for s in chunk if s not in found]
            characters += translator.billable_characters(missing)
            characters_total += translator.billable_characters(chunk)
            tokens_total += sum(map(translator.count_tokens, chunk))
            if tokens is not None:
                tokens.add(missing)
    summary = {"segments_total": counts.segments_total, "segments_unique": unique, "from_memory": known,
               "to_translate": unique - known, "characters_to_translate": characters,
               "characters_total": characters_total, "tokens_total": tokens_total,
               "split_long": planner.long_sentences}
    cost = translator.estimate_cost(summary["characters_to_translate"])
    if cost is not None:
        summary["cost"] = cost
    if tokens is not None:
        summary["llm"] = tokens.as_dict()
    return summary


def _merge_shards(memory: TranslationMemory, system: str, count: int) -> list[Path]:
    """Merge the memories of shards 1..``count`` into ``memory``; fail naming any shard whose file is missing."""
    paths = [Shard(i, count).memory_path(memory.path) for i in range(1, count + 1)]
    absent = [f"shard {i}/{count} ({path} does not exist)" for i, path in enumerate(paths, 1) if not path.is_file()]
    if absent:
        raise BeirxError(f"cannot assemble, nothing was written: missing {'; '.join(absent)}. Run the same command "
                         f"with --shard I/{count} for each")
    for i, path in enumerate(paths, 1):
        added = memory.merge(path, system)
        log.info("shard %d/%d: %d segments merged from %s", i, count, added, path)
    return paths
