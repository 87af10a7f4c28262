"""Plan a BEIR dataset's segments onto disk (step 1 of :mod:`beirx.translate.pipeline`), and find the units
whose translation lost a placeholder (step 3).

Records are streamed from disk and cut into segments by the backend's
:class:`~beirx.translate.planning.text_plan.Planner` (sentences, or document units for LLM backends); each segment to
translate goes into a :class:`~beirx.translate.planning.segment_store.SegmentStore`, deduplicated and kept sorted by
length then text, so the batches cut from it are the same on every run. The run's :class:`Counts` start here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.translate.backends.base import Translator
from beirx.translate.output.outcome import Tally
from beirx.translate.planning.document_units import DOCUMENT, QUERY
from beirx.translate.planning.placeholders import resolve_mode, unmask
from beirx.translate.planning.segment_store import SegmentStore
from beirx.translate.planning.text_plan import Part, Planner, lost_placeholders, units
from beirx.translate.translation_memory import TranslationMemory

FIELDS = ("corpus", "queries")
RECORDS_PER_CHUNK = 256  # records planned (or rendered) per memory lookup when reading the dataset again


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


def check_fields(fields: Iterable[str], limit: int | None) -> tuple[str, ...]:
    fields = tuple(fields)
    if not fields or set(fields) - set(FIELDS):
        raise BeirxError(f"fields must be among {', '.join(FIELDS)}, got {', '.join(fields) or 'none'}")
    if limit is not None and limit < 1:
        raise BeirxError(f"--limit must be at least 1, got {limit}")
    return fields


def make_planner(translator: Translator, verbatim: str, verbatim_kinds: tuple[str, ...] | None,
                 max_segment_tokens: int | None) -> tuple[Planner, tuple[str, tuple[str, ...]]]:
    """The planner for ``translator``: the model's token limit (capped by ``max_segment_tokens``); document
    units within the backend's budget for LLM backends, which keep URLs and numbers themselves (checked by
    their validation), so ``auto`` means ``off`` for them and ``split`` (cutting documents) is refused."""
    limits = [x for x in (translator.max_segment_tokens(), max_segment_tokens) if x]
    unit_tokens = translator.unit_tokens if translator.document_units else None
    if unit_tokens and verbatim == "split":
        raise BeirxError(f"--verbatim split cuts documents apart; the {translator.name} translator translates whole "
                         "documents: use --verbatim off (its validation checks URLs and numbers) or placeholders")
    try:
        mode, kinds = resolve_mode("off" if unit_tokens and verbatim == "auto" else verbatim, verbatim_kinds,
                                   translator.keeps_placeholders)
    except ValueError as exc:
        raise BeirxError(str(exc)) from None
    planner = Planner(translator.src, mode, kinds, min(limits) if limits else None, translator.count_tokens,
                      unit_tokens=unit_tokens, one_line_units=bool(unit_tokens) and translator.one_line_units)
    return planner, (mode, kinds)


def read_records(dataset: BeirDataset, fields: tuple[str, ...],
                 limit: int | None) -> Iterator[tuple[str, Doc | Query]]:
    """``(field, record)`` for the first ``limit`` records of each field, streamed from disk."""
    for name in fields:
        items = dataset.iter_corpus() if name == "corpus" else beir_io.iter_queries(dataset.queries_path)
        yield from ((name, item) for item in islice(items, limit))


def record_parts(item: Doc | Query, planner: Planner) -> tuple[list[Part], list[Part]]:
    """The parts of a record's title and text."""
    if isinstance(item, Doc):
        title, text = planner.plan_fields([item.title, item.text], DOCUMENT)
        return title, text
    return [], planner.plan_fields([item.text], QUERY)[0]


def plan_segments(dataset: BeirDataset, fields: tuple[str, ...], limit: int | None, planner: Planner,
                  store: SegmentStore, counts: Counts) -> dict[str, int]:
    """Put every segment to translate into ``store`` (``n``: its number of placeholders); records per field."""
    sizes = dict.fromkeys(fields, 0)
    for name, item in read_records(dataset, fields, limit):
        sizes[name] += 1
        for parts in record_parts(item, planner):
            for unit in units(parts):
                counts.segments_total += 1
                store.add("main", unit.masked, len(unit.tokens))
    return sizes


def plan_fallbacks(dataset: BeirDataset, fields: tuple[str, ...], limit: int | None, planner: Planner,
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
    for chunk in chunks(read_records(dataset, fields, limit), RECORDS_PER_CHUNK):
        candidates = [u for _, item in chunk for parts in record_parts(item, planner) for u in units(parts) if u.tokens]
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
