"""A field's (source, translation) pairs, streamed from disk in the source's order.

The translation is read alongside the source while its rows follow the source's (as ``beirx translate``
writes them); otherwise its texts are held in a dict. Only the first walk checks for duplicate IDs (8 bytes a
row, freed when the walk ends): the source's reader checks them itself, and a translation repeating an ID
cannot follow a source without repeats, so it is then read into the dict with the check; the later walks,
which run beside the per-row arrays, skip it. Documents are compared as ``(title + " " + text).strip()``, as
dense retrievers see them.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.translate.quality.base import FieldPairs

log = logging.getLogger(__name__)

FIELDS = ("queries", "corpus")
ROLES = {"queries": "query", "corpus": "passage"}


def field_texts(dataset: BeirDataset, name: str, unique: bool = False) -> Iterator[tuple[str, str]]:
    """``(id, text)`` of one field, queries or corpus, in file order (the corpus streamed; ``unique``: check its
    IDs)."""
    if name == "queries":
        return ((qid, q.text) for qid, q in dataset.queries.items())
    return ((d.id, f"{d.title} {d.text}".strip()) for d in beir_io.iter_corpus(dataset.corpus_path, unique=unique))


class _Unaligned(Exception):
    """The translation's rows do not follow the source's."""


def _walk(source: BeirDataset, translated: BeirDataset, name: str, lookup: dict[str, str] | None,
          check_ids: bool = False) -> Iterator[tuple[str, str, str | None]]:
    """``(id, source text, translation or None when missing)`` in the source's order: the translation read
    alongside (:class:`_Unaligned` at the end when its rows did not follow), or from ``lookup``."""
    others = field_texts(translated, name) if lookup is None else None
    pending = next(others, None) if others is not None else None
    for item, text in field_texts(source, name, unique=check_ids):
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
class Scan:
    """One field's counts, and how to pair it (``lookup``: the translation's texts when out of order)."""

    lookup: dict[str, str] | None = None
    pairs: int = 0
    missing: list[str] = field(default_factory=list)  # the first 10
    missing_count: int = 0
    empty_sources: int = 0


def scan(source: BeirDataset, translated: BeirDataset, name: str) -> Scan:
    """The first walk over a field: its counts, the duplicate-ID check, whether the translation is aligned."""
    found = Scan()
    while True:
        try:
            for item, text, out in _walk(source, translated, name, found.lookup, check_ids=True):
                found.empty_sources += not text.strip()
                if out is None:
                    found.missing_count += 1
                    found.missing += [item] if len(found.missing) < 10 else []
                elif text.strip():
                    found.pairs += 1
            return found
        except _Unaligned:
            log.info("%s %s: the translation's rows are not in the source's order; holding its texts in memory",
                     translated.name, name)
            found = Scan(lookup=dict(field_texts(translated, name, unique=True)))


def chunks(source: BeirDataset, translated: BeirDataset, name: str, found: Scan, keep: set[int] | None,
           size: int | None) -> Iterator[FieldPairs]:
    """The field's pairs (those at the positions ``keep``, all when None) in chunks of ``size`` (None: the whole
    field as one chunk, even an empty one)."""
    rows = (row for row in _walk(source, translated, name, found.lookup) if row[2] is not None and row[1].strip())
    kept = (row for position, row in enumerate(rows) if keep is None or position in keep)
    while True:
        chunk = FieldPairs(name, ROLES[name], [], [], [])
        for item, text, out in itertools.islice(kept, size):
            chunk.ids.append(item), chunk.sources.append(text), chunk.translations.append(out)
        if not len(chunk) and size is not None:
            return
        yield chunk
        if size is None:
            return
