"""The quality report's per-row sidecar, ``rows.jsonl`` beside ``quality.json``: one JSON object a line, one line
per scored row, fields in the report's order and rows in the dataset's::

    {"field": "queries", "id": "q7", "flags": ["lost_numbers"], "rank": 0.125, "scores": {"similarity": 0.91}}

``scores`` holds every method's per-row scores by score name (``null``: the method tried and got no answer; a
score absent: the row was outside the method's sample), ``flags`` the reasons every method flagged the row with,
in method order, and ``rank`` the row's mean percentile rank over its scores, each oriented so that 0 is the
worst value of the field (``null`` without a score). Per-row data grows with the corpus (8.8M MS MARCO passages
times several scores), so it is streamed, never loaded whole: readers take the worst rows with a bounded heap
(:func:`worst`) and pick the rows they need as they pass. The file itself, written with its digest and read
back verified, is :mod:`beirx.artifacts.quality_sidecar`'s.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np

BLOCK = 65536  # rows whose ties and rank positions are computed at a time


def record(field: str, item: str, flags: list[str], rank: float | None, scores: dict[str, float | None]) -> dict:
    """One line of the sidecar."""
    return {"field": field, "id": item, "flags": flags, "rank": rank, "scores": scores}


def mean_percentile_ranks(values: Mapping[str, Mapping[str, float | None]],
                          higher_is_better: Mapping[str, bool]) -> dict[str, float]:
    """``{item id: mean percentile rank}`` over every score in ``values`` (``score -> id -> value``), a row without
    any score absent (:func:`percentile_ranks` on these rows)."""
    ids = list(dict.fromkeys(i for found in values.values() for i in found))
    arrays = {score: np.array([np.nan if found.get(i) is None else found[i] for i in ids], dtype=np.float64)
              for score, found in values.items()}
    ranks = percentile_ranks(len(ids), arrays, higher_is_better,
                             lambda wanted: np.array([ids[n].encode() for n in wanted], dtype="S"))
    return {i: float(rank) for i, rank in zip(ids, ranks) if not np.isnan(rank)}


def percentile_ranks(size: int, values: Mapping[str, np.ndarray], higher_is_better: Mapping[str, bool],
                     ids: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Each of ``size`` rows' mean percentile rank over every score in ``values`` (score -> its values over the
    rows, NaN: none), NaN for a row without any score; ``ids`` gives the UTF-8 IDs (a numpy bytes array) of the
    rows asked for (sorted positions of the rows whose value equals another's: equal values are ordered by ID).

    A score's percentile rank (position among the field's values, over ``n - 1``, each score oriented so that
    0 is its worst value) puts scores of different scales (cosine, chrF, MQM) on one footing, so no method
    dominates the order by its units; a row missing a score is ranked on the others. One score's order is held
    at a time (8 bytes a row; its ties and positions are found :data:`BLOCK` rows at a time) and the IDs of
    equal values as bytes, so a field's ranks take three arrays beside ``values``, not a record per row.
    """
    def order(score: str) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """The rows with a value (None: all), their order from worst to best, the places equal to the next."""
        present = None if not np.isnan(values[score]).any() else np.flatnonzero(~np.isnan(values[score]))
        oriented = values[score] if present is None else values[score][present]
        ranked = np.argsort(oriented if higher_is_better.get(score, True) else -oriented, kind="stable")
        blocks = (oriented[ranked[start:start + BLOCK + 1]] for start in range(0, len(ranked), BLOCK))
        same = [np.flatnonzero(block[1:] == block[:-1]) + n * BLOCK for n, block in enumerate(blocks)]
        return present, ranked, np.concatenate(same) if same else np.zeros(0, dtype=np.int64)

    def rows(present: np.ndarray | None, ranked: np.ndarray) -> np.ndarray:
        return ranked if present is None else present[ranked]

    tied = []
    for score in values:
        present, ranked, same = order(score)
        tied.append(rows(present, ranked[np.union1d(same, same + 1)]))
        del present, ranked
    wanted = np.unique(np.concatenate(tied)) if tied else np.zeros(0, dtype=np.int64)
    names = ids(wanted) if len(wanted) else np.zeros(0, dtype="S1")
    total, count = np.zeros(size), np.zeros(size, dtype=np.uint16)
    for score in values:
        present, ranked, same = order(score)
        for first, last in _runs(same):  # equal values from ranked[first] to ranked[last]: by ID
            run = ranked[first:last + 1]
            keys = names[np.searchsorted(wanted, rows(present, run))]
            ranked[first:last + 1] = run[np.argsort(keys, kind="stable")]
        ranked = rows(present, ranked)
        for start in range(0, len(ranked), BLOCK):
            part = ranked[start:start + BLOCK]
            total[part] += np.arange(start, start + len(part), dtype=np.float64) / max(1, len(ranked) - 1)
            count[part] += 1
        del present, ranked
    with np.errstate(invalid="ignore", divide="ignore"):
        total /= count
    return total


def _runs(same: np.ndarray) -> Iterator[tuple[int, int]]:
    """``(first, last)`` of each run of equal values in a sorted order (``same``: the places whose value equals
    the next one's)."""
    first = None
    for k, j in enumerate(same):
        first = j if first is None else first
        if k + 1 == len(same) or same[k + 1] != j + 1:
            yield int(first), int(j) + 1
            first = None


def badness(row: dict) -> tuple[int, float]:
    """Sorting by it puts the worst rows first: most flag reasons, then the lowest mean percentile rank."""
    return -len(row["flags"]), 1.0 if row["rank"] is None else row["rank"]


def worst(rows: Iterable[dict], n: int) -> list[dict]:
    """The ``n`` worst rows (:func:`badness`, ties by field and ID) of those with a flag or a score (even one
    without an answer), in memory bounded by ``n``."""
    judged = (row for row in rows if row["flags"] or row["scores"])
    return heapq.nsmallest(n, judged, key=lambda row: (badness(row), row["field"], row["id"]))
