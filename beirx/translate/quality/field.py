"""Scoring one field in memory that does not grow with the corpus (except for a whole-field method).

Every chunk of pairs goes through every method; each row, with every method's findings, waits in a spill file
while what needs the whole field (flags on a field's distribution, percentile ranks, distributions) is decided
on per-row arrays of numbers (8 bytes a row and score); the spill is then streamed once more, each row
complete, into the report's files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

import numpy as np

from beirx.artifacts import quality_rows
from beirx.artifacts.quality import FieldQuality, MethodField
from beirx.progress import progress
from beirx.provenance import Timer
from beirx.translate.quality import base
from beirx.translate.quality.base import FieldPairs, MethodResult, QualityContext, QualityMethod
from beirx.translate.quality.pairs import Scan
from beirx.translate.quality.report_files import Row
from beirx.translate.quality.stats import distribution, low_outlier_mask


class FieldScorer:
    """One field's per-row numbers (a score, or a method's ``method.measure``: an array over the rows, NaN for
    none) and each method's outcome."""

    def __init__(self, name: str, size: int, methods: Sequence[QualityMethod], context: QualityContext, timer: Timer):
        self.name, self.size, self.methods, self.context, self.timer = name, size, methods, context, timer
        self.arrays: dict[str, np.ndarray] = {}
        self.outcomes = {m.name: MethodField(scored=0, missing=0) for m in methods}

    def _score(self, method: QualityMethod, pairs: FieldPairs) -> MethodResult:
        with self.timer.section(f"{self.name}.{method.name}"):
            result = method.score(pairs, self.context)
        outcome = self.outcomes[method.name]
        outcome.scored, outcome.missing = outcome.scored + result.scored, outcome.missing + result.missing
        outcome.summary.update(result.summary)
        return result

    def score(self, chunks: Callable[[int | None], Iterator[FieldPairs]], spill: TextIO) -> None:
        """Score every chunk (``chunks(None)``: the whole field, for :attr:`~QualityMethod.whole_field` methods),
        keeping the numbers and spilling each row with every method's findings."""
        whole: dict[str, MethodResult] = {}
        if any(m.whole_field for m in self.methods):
            pairs = next(chunks(None))
            whole = {m.name: self._score(m, pairs) for m in self.methods if m.whole_field}
            del pairs
        start = 0
        with progress(total=self.size, desc=f"quality {self.name}", unit="row",
                      enabled=self.context.show_progress) as bar:
            for chunk in chunks(base.CHUNK):
                results = [whole[m.name] if m.whole_field else self._score(m, chunk) for m in self.methods]
                for m, result in zip(self.methods, results):
                    for key, found in [*result.values.items(),
                                       *((f"{m.name}.{k}", v) for k, v in result.measures.items())]:
                        if key not in self.arrays:
                            self.arrays[key] = np.full(self.size, np.nan)
                        self.arrays[key][start:start + len(chunk)] = [np.nan if found.get(i) is None else found[i]
                                                                      for i in chunk.ids]
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
        declared = {s.name: s for m in self.methods for s in m.scores}
        self.arrays = {score: self.arrays[score] for score in declared if score in self.arrays}  # the measures are done
        self.distributions = {score: distribution(values[~np.isnan(values)], declared[score].scale)
                              for score, values in self.arrays.items()}
        higher = {name: score.higher_is_better for name, score in declared.items()}
        ranks = quality_rows.percentile_ranks(self.size, self.arrays, higher, lambda wanted: _ids(spill, wanted))
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

    def quality(self, found: Scan, flags: dict[str, int], flagged_items: int) -> FieldQuality:
        """Every method's score distributions, flag counts, outcome and card figures on the field."""
        entry = FieldQuality(pairs=self.size, missing=found.missing_count, empty_sources=found.empty_sources,
                             flags=dict(sorted(flags.items())), flagged_items=flagged_items, scores=self.distributions,
                             methods=self.outcomes, missing_examples=found.missing or None)
        for method in self.methods:  # recorded, so a dataset card reads them without knowing the method
            entry.methods[method.name].figures = type(method).card_figures(entry)
        return entry


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
