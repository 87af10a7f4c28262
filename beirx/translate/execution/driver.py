"""Translate a planned table of segments batch by batch (step 2 of :mod:`beirx.translate.pipeline`).

Each batch is looked up in the translation memory, claimed (a lease, so runs sharing a memory never
translate the same batch), sent to the executor (this process, Ray replicas, the Batch API) and committed
at once; a batch another live run holds is revisited until it is committed. An assembly of shards uses
:class:`IncompleteShards` as its executor: it translates nothing and names what a shard left undone.
"""

from __future__ import annotations

import logging
import time
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

from beirx.errors import BeirxError
from beirx.progress import postfix, skip
from beirx.progress import progress as progress_bar
from beirx.translate.execution.shards import Shard, batch_key, shard_of
from beirx.translate.planning.dataset_plan import Counts, chunks
from beirx.translate.planning.segment_store import SegmentStore
from beirx.translate.translation_memory import BUSY, CLAIMED, TranslationMemory

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0  # wait between passes while another run holds leases on batches we need


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


class IncompleteShards:
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


def translate_table(store: SegmentStore, table: str, executor, memory: TranslationMemory, system: str,
                    batch_size: int, counts: Counts, progress: bool, desc: str, shard: Shard | None = None) -> None:
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
        exc.args = (f"{said}{'' if said.endswith(('.', '?', '!')) else '.'} {pending} of {total} segments are "
                    "pending (nothing is written for them, and nothing translated is lost): rerun the same command "
                    "to translate only those",)
        raise
    finally:
        bar.close()
