"""Translate a BEIR dataset in bounded memory: plan the unique segments onto disk, translate the misses in
length-sorted batches, reassemble and write by streaming, and record what was done in a manifest.

Steps (each streams; memory does not grow with the corpus):

1. *plan*: read the records, segment them, and put each segment to translate into a
   :class:`~beirx.translate.segment_store.SegmentStore` (on disk, deduplicated, kept sorted by length
   then text);
2. *translate*: cut that order into batches of ``batch_size``, look each batch up in the SQLite memory,
   claim the batch (a lease in the memory, so runs sharing a memory never translate the same batch), send
   its misses to the executor (this process or Ray replicas) and commit them in one transaction;
3. *fallbacks*: segments whose translation lost a placeholder are found from the memory, and the text
   around their protected tokens is planned and translated the same way;
4. *write*: read the records again, render each from the memory, and stream the output files; then the
   manifest.

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

import contextlib
import json
import logging
import shutil
import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import (FILENAME, DatasetSide, MemoryRef, TargetSide, TranslationManifest,
                                      TranslationOptions)
from beirx.atomic import atomic_dir, atomic_writer, carry_over
from beirx.data import beir_io
from beirx.progress import progress as progress_bar
from beirx.progress import postfix, skip
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.provenance import Timer, environment_versions
from beirx.translate.backends.base import Translator
from beirx.translate.executors import make_executor
from beirx.translate.llm.estimate import Estimate
from beirx.translate.llm.outcome import FLAGS_FILE, Tally, flag_rows, summarise
from beirx.translate.llm.units import DOCUMENT, QUERY
from beirx.translate.memory import BUSY, CLAIMED, TranslationMemory
from beirx.translate.placeholders import resolve_mode, unmask
from beirx.translate.plan import Part, Planner, Unit, lost_placeholders, render, units
from beirx.translate.segment_store import SegmentStore
from beirx.translate.shards import Shard, batch_key, shard_of

log = logging.getLogger(__name__)

FIELDS = ("corpus", "queries")
MANIFEST = FILENAME
RECORDS_PER_CHUNK = 256  # records rendered per memory lookup when writing
POLL_SECONDS = 1.0  # wait between passes while another run holds leases on batches we need


@dataclass
class Counts:
    """What the run did, for the manifest: every segment is either served from memory or translated."""

    segments_total: int = 0
    segments_unique: int = 0
    from_memory: int = 0
    translated: int = 0
    characters: int = 0
    """Billable characters (``Translator.billable_characters``; source code points for most backends) of the
    batches this run had translated, counted in this process whatever the executor."""
    batches: int = 0
    empty_translations: int = 0
    extra: dict[str, int] = field(default_factory=dict)
    billable: Callable[[list[str]], int] = field(default=lambda segments: sum(map(len, segments)), repr=False,
                                                 compare=False)  # the translator's billable_characters
    llm: Tally = field(default_factory=Tally, repr=False, compare=False)  # validated backends' outcomes and tokens

    def as_dict(self) -> dict[str, int]:
        return {"segments_total": self.segments_total, "segments_unique": self.segments_unique,
                "from_memory": self.from_memory, "translated": self.translated, "characters": self.characters,
                "batches": self.batches, "empty_translations": self.empty_translations, **self.extra}


def chunks(items: Iterable, size: int) -> Iterator[list]:
    """Consecutive lists of ``size`` items (the last one shorter)."""
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def translate_batches(plan: Callable[[], Iterator[list[str]]], executor, memory: TranslationMemory, system: str,
                      counts: Counts, progress) -> None:
    """Translate every segment of the batches ``plan()`` yields that ``memory`` lacks, batch by batch.

    Each batch is looked up, then claimed (which re-reads the memory in a write transaction), sent to the
    executor and committed with its lease released. An executor may hand a batch back in parts (the LLM
    executor, unit by unit): each part is committed at once, and the lease is released with the last one.
    A batch leased by another live run is skipped and its index kept; further passes revisit only those
    batches until they are committed (or their lease lapses and this run takes them over).
    """
    waiting: array | None = None  # indices of batches another run was translating, in order
    started = time.monotonic()
    try:
        while True:
            busy = array("q")

            def work() -> Iterator[tuple[str, list[str]]]:
                todo = iter(waiting) if waiting is not None else None
                want = next(todo, -1) if todo is not None else None
                for index, batch in enumerate(plan()):
                    if want is not None:
                        if want == -1:
                            break  # every waiting batch has been revisited
                        if index != want:
                            continue
                        want = next(todo, -1)
                    known = memory.lookup(system, batch)
                    state, missing, key = None, [], ""
                    if len(known) < len(batch):
                        key = batch_key(batch)
                        state, missing = memory.claim(system, key, [s for s in batch if s not in known])
                        if state == BUSY:
                            busy.append(index)
                            continue
                    counts.from_memory += len(batch) - len(missing)
                    skip(progress, len(batch) - len(missing))
                    if state == CLAIMED:
                        remaining[key] = len(missing)
                        yield key, missing

            remaining: dict[str, int] = {}
            for key, segments, outputs in executor.map(work()):
                if len(outputs) != len(segments):
                    raise BeirxError(f"the translator returned {len(outputs)} translations for {len(segments)} "
                                     "segments")
                remaining[key] -= len(segments)
                done = remaining[key] <= 0
                notes = {s: o.note for s, o in zip(segments, outputs) if getattr(o, "note", None)}
                memory.add(system, [(s, str(o)) for s, o in zip(segments, outputs)], lease=key if done else None,
                           notes=notes)
                counts.llm.add(outputs)
                counts.translated += len(segments)
                counts.characters += counts.billable(segments)
                counts.batches += done
                counts.empty_translations += sum(1 for o in outputs if not o.strip())
                if counts.llm:
                    tokens = counts.llm.prompt_tokens + counts.llm.completion_tokens
                    postfix(progress, f"{tokens / max(time.monotonic() - started, 1e-9):,.0f} tokens/s")
                progress.update(len(segments))
            if not busy:
                return
            (log.info if waiting is None else log.debug)(
                "%d batches are being translated by another run on %s; waiting for them", len(busy), memory.path)
            waiting = busy
            time.sleep(POLL_SECONDS)
    finally:
        memory.release()


class _Incomplete:
    """The executor of an assembly: translates nothing, counts what each shard left untranslated."""

    def __init__(self, count: int):
        self.count = count
        self.missing: dict[int, list[int]] = {}  # shard -> [segments, batches]

    def map(self, work):
        for key, segments in work:
            seen = self.missing.setdefault(shard_of(key, self.count), [0, 0])
            seen[0] += len(segments)
            seen[1] += 1
        yield from ()

    def check(self, memories: list[Path]) -> None:
        if self.missing:
            problems = "; ".join(f"shard {i}/{self.count} is incomplete: {segs} segments in {n} of its batches are "
                                 f"not in {memories[i - 1]}" for i, (segs, n) in sorted(self.missing.items()))
            again = " and ".join(f"--shard {i}/{self.count}" for i in sorted(self.missing))
            raise BeirxError(f"cannot assemble, nothing was written: {problems}. Rerun the same command with {again} "
                             "to finish it")


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
        verbatim, verbatim_kinds: how URLs/e-mails/numbers/code are kept (:mod:`beirx.translate.placeholders`).
        max_segment_tokens: cut segments to at most this many backend tokens (default: the model's limit;
            a larger value is capped at the model's limit).
        executor: who translates the batches (default: ``translator`` in this process; see
            :mod:`beirx.translate.executors`).
        assemble: merge the memories of shards 1..``assemble`` (:func:`translate_shard`) into ``memory``
            first and translate none of the main segments: a shard that left some untranslated (or whose
            memory file is missing) fails the run, naming it, before anything is written. The placeholder
            fallbacks, known only once every shard is done, are translated here.
    """
    started = time.time()
    output = Path(output)
    if output.resolve() == dataset.root.resolve():
        raise BeirxError(f"the output folder {output} is the source dataset; choose another --output")
    fields = _check_fields(fields, limit)
    batch_size = int(batch_size or translator.max_batch_size)
    planner, (mode, kinds) = _planner(translator, verbatim, verbatim_kinds, max_segment_tokens)
    executor = executor or make_executor("local", translator)
    timer = Timer()
    counts = Counts(billable=translator.billable_characters)
    description = translator.describe()
    system = memory.register(description, translator.src, translator.tgt, translator.earlier_descriptions)
    shard_memories = _merge_shards(memory, system, assemble) if assemble else []

    with SegmentStore(memory.path.parent) as store:
        with timer.section("segment"):
            sizes = _plan(dataset, fields, limit, planner, store, counts)
            split_long = planner.long_sentences
        with timer.section("translate"):
            main = _Incomplete(assemble) if assemble else executor
            _translate(store, "main", main, memory, system, batch_size, counts, progress, "translating")
            if assemble:
                main.check(shard_memories)
            failed, extra = _find_fallbacks(dataset, fields, limit, planner, store, memory, system)
            if failed:
                log.warning("%d segments lost a placeholder in translation; translating the text around their "
                            "protected tokens instead", failed)
                counts.segments_total += extra
                _translate(store, "fallback", executor, memory, system, batch_size, counts, progress,
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
        files, flags = _write(dataset, staging, fields, limit, planner, memory, system, validated)
        carry_over(output, staging)
        manifest = _manifest(dataset, output, translator, description, memory, system, counts, timer, started,
                             options, files, fields, limit)
        if validated:
            manifest.llm = {**translator.run_report(counts.llm.as_dict()), "output": flags}
        manifest.save(staging / MANIFEST)
    log.info("translated %s -> %s: %d segments (%d unique, %d from memory, %d translated)", dataset.name, output,
             counts.segments_total, counts.segments_unique, counts.from_memory, counts.translated)
    return manifest


def _manifest(dataset: BeirDataset, output: Path, translator: Translator, description: dict[str, Any],
              memory: TranslationMemory, system: str, counts: Counts, timer: Timer, started: float,
              options: TranslationOptions, files: dict[str, str], fields: tuple[str, ...],
              limit: int | None) -> TranslationManifest:
    """The ``translation.json`` record of a finished run."""
    return TranslationManifest(
        source=DatasetSide(path=str(dataset.root), name=dataset.name, lang=translator.src,
                           checksum=dataset.checksum()),
        target=TargetSide(path=str(output), lang=translator.tgt, files=files),
        translator=description,
        memory=MemoryRef(path=str(memory.path), system=system),
        options=options,
        partial=limit is not None,
        untranslated_fields=[f for f in FIELDS if f not in fields],
        counts=counts.as_dict(),
        timings={**timer.seconds, "total": round(time.time() - started, 3)},
        versions=environment_versions(),
    )


def translate_shard(dataset: BeirDataset, translator: Translator, memory: TranslationMemory, shard: Shard, *,
                    fields: Iterable[str] = FIELDS, limit: int | None = None, batch_size: int | None = None,
                    verbatim: str = "auto", verbatim_kinds: tuple[str, ...] | None = None,
                    max_segment_tokens: int | None = None, progress: bool = True, executor=None) -> dict[str, Any]:
    """Translate the batches ``shard`` owns (:mod:`beirx.translate.shards`) into ``memory``, the shard's own
    file; write no dataset. Rerunning resumes. Returns what was done."""
    started = time.time()
    fields = _check_fields(fields, limit)
    batch_size = int(batch_size or translator.max_batch_size)
    planner, _ = _planner(translator, verbatim, verbatim_kinds, max_segment_tokens)
    counts = Counts(billable=translator.billable_characters)
    system = memory.register(translator.describe(), translator.src, translator.tgt, translator.earlier_descriptions)
    with SegmentStore(memory.path.parent) as store:
        sizes = _plan(dataset, fields, limit, planner, store, counts)
        _translate(store, "main", executor or make_executor("local", translator), memory, system, batch_size, counts,
                   progress, f"shard {shard}", shard)
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
    fields = _check_fields(fields, limit)
    planner, _ = _planner(translator, verbatim, verbatim_kinds, max_segment_tokens)
    counts = Counts(billable=translator.billable_characters)
    system = memory.register(translator.describe(), translator.src, translator.tgt, translator.earlier_descriptions)
    unique = known = characters = characters_total = tokens_total = 0
    tokens = Estimate(translator) if planner.unit_tokens else None
    with SegmentStore(memory.path.parent) as store:
        _plan(dataset, fields, limit, planner, store, counts)
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


def _check_fields(fields: Iterable[str], limit: int | None) -> tuple[str, ...]:
    fields = tuple(fields)
    if not fields or set(fields) - set(FIELDS):
        raise BeirxError(f"fields must be among {', '.join(FIELDS)}, got {', '.join(fields) or 'none'}")
    if limit is not None and limit < 1:
        raise BeirxError(f"--limit must be at least 1, got {limit}")
    return fields


def _planner(translator: Translator, verbatim: str, verbatim_kinds: tuple[str, ...] | None,
             max_segment_tokens: int | None) -> tuple[Planner, tuple[str, tuple[str, ...]]]:
    """The planner for ``translator``: the model's token limit (capped by ``max_segment_tokens``); document
    units within the backend's budget for LLM backends, which keep URLs and numbers themselves (checked by
    their validation), so ``auto`` means ``off`` for them and ``split`` (cutting documents) is refused."""
    limits = [x for x in (translator.max_segment_tokens(), max_segment_tokens) if x]
    unit_tokens = translator.unit_token_budget()
    if unit_tokens and verbatim == "split":
        raise BeirxError(f"--verbatim split cuts documents apart; the {translator.name} translator translates whole "
                         "documents: use --verbatim off (its validation checks URLs and numbers) or placeholders")
    try:
        mode, kinds = resolve_mode("off" if unit_tokens and verbatim == "auto" else verbatim, verbatim_kinds,
                                   translator.keeps_placeholders)
    except ValueError as exc:
        raise BeirxError(str(exc)) from None
    planner = Planner(translator.src, mode, kinds, min(limits) if limits else None, translator.count_tokens,
                      unit_tokens=unit_tokens, one_line_units=translator.one_line_units)
    return planner, (mode, kinds)


def _records(dataset: BeirDataset, fields: tuple[str, ...], limit: int | None) -> Iterator[tuple[str, Doc | Query]]:
    """``(field, record)`` for the first ``limit`` records of each field, streamed from disk."""
    for name in fields:
        items = dataset.iter_corpus() if name == "corpus" else beir_io.iter_queries(dataset.queries_path)
        yield from ((name, item) for item in islice(items, limit))


def _parts(item: Doc | Query, planner: Planner) -> tuple[list[Part], list[Part]]:
    """The parts of a record's title and text."""
    if isinstance(item, Doc):
        title, text = planner.plan_fields([item.title, item.text], DOCUMENT)
        return title, text
    return [], planner.plan_fields([item.text], QUERY)[0]


def _plan(dataset: BeirDataset, fields: tuple[str, ...], limit: int | None, planner: Planner, store: SegmentStore,
          counts: Counts) -> dict[str, int]:
    """Put every segment to translate into ``store`` (``n``: its number of placeholders); records per field."""
    sizes = dict.fromkeys(fields, 0)
    for name, item in _records(dataset, fields, limit):
        sizes[name] += 1
        for parts in _parts(item, planner):
            for unit in units(parts):
                counts.segments_total += 1
                store.add("main", unit.masked, len(unit.tokens))
    return sizes


def _translate(store: SegmentStore, table: str, executor, memory: TranslationMemory, system: str, batch_size: int,
               counts: Counts, progress: bool, desc: str, shard: Shard | None = None) -> None:
    """Translate the segments of ``table`` (those of the batches ``shard`` owns, if given)."""
    def plan() -> Iterator[list[str]]:
        every = chunks(store.ordered(table), batch_size)
        return every if shard is None else (b for b in every if shard.owns(batch_key(b)))

    total = store.count(table) if shard is None else sum(len(b) for b in plan())
    counts.segments_unique += total
    bar = progress_bar(total=total, desc=desc, unit="seg", enabled=progress, dynamic_ncols=True, smoothing=0.1)
    try:
        translate_batches(plan, executor, memory, system, counts, bar)
    except BeirxError as exc:  # the translator stopped the run: say what is left and that a rerun resumes
        pending = sum(len(batch) - len(memory.lookup(system, batch)) for batch in plan())
        said = str(exc)
        exc.args = (f"{said}{'' if said.endswith(('.', '?', '!')) else '.'} {pending} of {total} segments are pending (nothing is written for them, and nothing "
                    f"translated is lost): rerun the same command to translate only those",)
        raise
    finally:
        bar.close()


def _find_fallbacks(dataset: BeirDataset, fields: tuple[str, ...], limit: int | None, planner: Planner,
                    store: SegmentStore, memory: TranslationMemory, system: str) -> tuple[int, int]:
    """Plan the fallbacks of units whose translation lost a placeholder (table ``fallback``).

    The memory tells which masked segments lost one; only then are the records read again, since the
    fallback splits the *source* of each unit around its tokens. Returns (distinct units that fell back,
    segments their fallbacks add).
    """
    for chunk in chunks(store.flagged("main"), 2000):
        found = memory.lookup(system, [s for s, _ in chunk])
        for segment, n in chunk:
            if segment in found and unmask(found[segment], ("",) * n) is None:
                store.add("failed", segment)
    if not store.count("failed"):
        return 0, 0
    for chunk in chunks(_records(dataset, fields, limit), RECORDS_PER_CHUNK):
        candidates = [u for _, item in chunk for parts in _parts(item, planner) for u in units(parts) if u.tokens]
        failed = store.contains("failed", (u.masked for u in candidates))
        candidates = [u for u in candidates if u.masked in failed]
        found = memory.lookup(system, {u.masked for u in candidates})
        for unit in candidates:
            if lost_placeholders(unit, found):
                extra = [x.masked for x in units(planner.fallback(unit))]
                store.add("fallback_units", json.dumps([unit.source, unit.masked, unit.tokens], ensure_ascii=False),
                          len(extra))
                for segment in extra:
                    store.add("fallback", segment)
    return store.count("fallback_units"), store.total("fallback_units")


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


def _write(dataset: BeirDataset, output: Path, fields: tuple[str, ...], limit: int | None, planner: Planner,
           memory: TranslationMemory, system: str, validated: bool = False) -> tuple[dict[str, str], dict | None]:
    """Write corpus, queries and qrels by streaming; return ``{relative path: how it was produced}`` and, for a
    ``validated`` (LLM) backend, the summary of ``translation_flags.jsonl`` (written beside them)."""
    output.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    summary = None
    with contextlib.ExitStack() as stack:
        flags = stack.enter_context(atomic_writer(output / FLAGS_FILE)) if validated else None
        rows: list[dict] = []
        for field_name, source in (("corpus", dataset.corpus_path), ("queries", dataset.queries_path)):
            target = output / source.name
            if field_name not in fields:
                _copy(source, target)
                files[source.name] = "copied"
                continue

            def flag(row: dict) -> None:
                flags.write(json.dumps(row, ensure_ascii=False) + "\n")
                rows.append({"field": row["field"], "outcome": row["outcome"], "reasons": row["reasons"]})

            rendered = _rendered(dataset, field_name, limit, planner, memory, system, flag if validated else None)
            (beir_io.write_corpus if field_name == "corpus" else beir_io.write_queries)(target, rendered)
            files[source.name] = "translated"
        if validated:
            files[FLAGS_FILE] = "flags"
            summary = summarise(rows)
    for split in dataset.splits():
        source = dataset.qrels_path(split)
        _copy(source, output / "qrels" / source.name)
        files[f"qrels/{source.name}"] = "copied"
    return files, summary


def _rendered(dataset: BeirDataset, field_name: str, limit: int | None, planner: Planner, memory: TranslationMemory,
              system: str, flag: Callable[[dict], None] | None = None) -> Iterator[Doc | Query]:
    """The translated records of one field, in source order, a chunk of records per memory lookup; ``flag``
    receives the flag row of each record whose units fell back or were flagged (LLM backends)."""
    for chunk in chunks(_records(dataset, (field_name,), limit), RECORDS_PER_CHUNK):
        planned = [(item, *_parts(item, planner)) for _, item in chunk]
        every = [u for _, title, text in planned for u in (*units(title), *units(text))]
        translations = memory.lookup(system, {u.masked for u in every})
        fallbacks: dict[Unit, list[Part]] = {u: planner.fallback(u) for u in every if lost_placeholders(u, translations)}
        if fallbacks:
            translations.update(memory.lookup(system, {x.masked for p in fallbacks.values() for x in units(p)}))
        notes = memory.notes(system, {u.masked for u in every}) if flag else {}
        for item, title, text in planned:
            row = notes and flag_rows(field_name, item.id, [(u.source, notes[u.masked]) for u in
                                                            (*units(title), *units(text)) if u.masked in notes])
            if row:
                flag(row)
            if isinstance(item, Doc):
                yield item.with_text(render(text, translations, fallbacks), render(title, translations, fallbacks))
            else:
                yield item.with_text(render(text, translations, fallbacks))


def _copy(source: Path, target: Path) -> None:
    """Byte-identical, atomic copy."""
    with open(source, "rb") as src, atomic_writer(target, binary=True) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
