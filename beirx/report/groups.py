"""Grouping results: by dataset family, language pair, split and system; which result is the source side
of a translation; which system is the baseline.

A translated dataset joins its source by family name (``dataset.name``, e.g. "scifact" for the Spanish
SciFact too) and split: for one system, the source side is the monolingual result in the source
language and every other language pair of the same family and split is a target side.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from beirx.errors import BeirxError
from beirx.report.load import Result

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Column:
    """One dataset column of the systems table: a family in one language pair and split."""

    family: str
    pair: str
    split: str

    @property
    def label(self) -> str:
        return f"{self.family} [{self.pair}]" if self.split == "test" else f"{self.family} [{self.pair}/{self.split}]"


def source_language(results: list[Result], family: str, wanted: str | None = None) -> str | None:
    """The source language of ``family``: ``wanted``, else what its translations were made from, else the
    language of its only untranslated monolingual results."""
    if wanted:
        return wanted
    rows = [r for r in results if r.family == family]
    recorded = Counter(r.translated_from for r in rows if r.translated_from and r.translated_from != "?")
    if recorded:
        return recorded.most_common(1)[0][0]
    plain = {r.corpus_language for r in rows if r.monolingual and not r.translated_from}
    return plain.pop() if len(plain) == 1 else None


def language_pairs(results: list[Result], wanted_source: str | None = None, baseline: str | None = None
                   ) -> list[tuple[Result, Result]]:
    """(source, target) results of the same family, split and system; targets in a stable order
    (monolingual translations first, then cross-lingual pairs)."""
    pairs: list[tuple[Result, Result]] = []
    for family in sorted({r.family for r in results}):
        src_lang = source_language(results, family, wanted_source)
        if src_lang is None:
            log.info("%s: no source language (no translation recorded); no languages table rows", family)
            continue
        rows = [r for r in results if r.family == family]
        for split in sorted({r.split for r in rows}):
            for label in system_order(rows, baseline):
                mine = [r for r in rows if r.split == split and r.label == label]
                source = next((r for r in mine if r.monolingual and r.corpus_language == src_lang
                               and not r.translated_from), None)
                if source is None:
                    continue
                targets = sorted((r for r in mine if r is not source), key=lambda r: (not r.monolingual, r.pair))
                pairs += [(source, t) for t in targets]
    return pairs


def columns(results: list[Result]) -> list[Column]:
    """Dataset columns in a stable order: family, then the source-language pair first, then the others."""
    cols = {Column(r.family, r.pair, r.split) for r in results}

    def key(c: Column):
        src = source_language(results, c.family)
        return c.family, c.split, c.pair != src, "2" in c.pair, c.pair

    return sorted(cols, key=key)


def system_order(results: list[Result], baseline: str | None = None) -> list[str]:
    """System labels: the baseline first, then alphabetically."""
    labels = sorted({r.label for r in results})
    if baseline in labels:
        labels.remove(baseline)
        labels.insert(0, baseline)
    return labels


def baseline_label(results: list[Result], wanted: str | None = "bm25") -> str:
    """The baseline system: the label ``wanted`` (any case); for the default, else the first BM25 retriever."""
    labels = list(dict.fromkeys(r.label for r in results))
    for label in labels:
        if wanted and label.lower() == wanted.lower():
            return label
    if wanted and wanted.lower() != "bm25":
        raise BeirxError(f"baseline system {wanted!r} is not among the results (systems: {', '.join(labels)})")
    bm25 = [r.label for r in results if r.description.get("retriever") == "bm25"]
    chosen = bm25[0] if bm25 else labels[0]
    log.info("baseline system: %s", chosen)
    return chosen
