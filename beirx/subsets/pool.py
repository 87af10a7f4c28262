"""Pooling: the top documents of each system for the kept queries, and the depth that fits the budget.

Pooling as in TREC (Spärck Jones & van Rijsbergen 1975; Voorhees & Harman, *TREC*, 2005): the union of the
top ``depth`` documents of every system for every query. MTEB's HardNegatives tasks keep such a pool (the
top 250 of BM25 and dense models), NanoBEIR the judged documents plus the pool of strong systems.

When the judged documents plus the pool would exceed the corpus budget, the depth shrinks, the same for every
query and system (a document enters the pool at the best rank any system gives it for any kept query), to the
largest depth whose pool still fits beside the judged documents; judged documents always stay. A depth
smaller than asked is recorded in the manifest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from beirx.artifacts.subset import PoolSystem
from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.runs import Run, ranked, read_trec
from beirx.evaluate.specs import RunFileSpec, System, SystemSpec
from beirx.language_packs import LanguagePack

log = logging.getLogger(__name__)


@dataclass
class Pooled:
    """A pooling system's description and its ranked lists (top ``depth`` document IDs per query)."""

    system: PoolSystem
    lists: dict[str, list[str]]


def pool_runs(dataset: BeirDataset, pack: LanguagePack, queries: dict[str, Query], systems: dict[str, System],
              depth: int, show_progress: bool = True, use_cache: bool = True) -> list[Pooled]:
    """Each system's top ``depth`` documents for ``queries`` on ``dataset`` (retrievers run here, run files read);
    ``systems`` are keyed by their spelling (:func:`beirx.subsets.system_args.parse_pool`)."""
    pooled = []
    for spec_text, system in systems.items():
        if isinstance(system, RunFileSpec):
            run, description = _read_run(Path(system.path), queries), _file_description(Path(system.path))
        elif isinstance(system, SystemSpec):
            retriever = RETRIEVERS.get(system.retriever)(pack, show_progress=show_progress, use_cache=use_cache,
                                                         **system.params)
            retriever.index(dataset)
            run, description = retriever.search(queries, depth), retriever.describe()
        else:
            raise TypeError(f"a pooling system is a retriever or a run file, not {system!r}")
        lists = {qid: [did for did, _ in ranked(run.get(qid, {}))][:depth] for qid in queries}
        empty = sum(1 for docs in lists.values() if not docs)
        if empty:
            log.warning("pooling system %s retrieved nothing for %d of %d queries", system.label(), empty, len(queries))
        pooled.append(Pooled(PoolSystem(spec=spec_text, label=system.label(), description=description), lists))
    return pooled


def _read_run(path: Path, queries: dict[str, Query]) -> Run:
    run = read_trec(path, queries=queries)
    if not run:
        from beirx.errors import DataError

        raise DataError(path, f"none of the {len(queries)} kept queries is in this run file (e.g. "
                              f"{next(iter(queries))!r})")
    return run


def _file_description(path: Path) -> dict:
    """As the runner describes a run file: its path and the sha256 of its bytes."""
    from beirx.checksums import corpus_checksum  # sha256 of one file, memoised by size and mtime

    return {"retriever": "run_file", "path": str(path), "sha256": corpus_checksum(path).removeprefix("sha256:")}


def entry_depths(pooled: Iterable[Pooled]) -> dict[str, int]:
    """``{doc id: the best (smallest, 1-based) rank any system gives it for any query}``: the pool depth at
    which each document enters the pool."""
    best: dict[str, int] = {}
    for item in pooled:
        for docs in item.lists.values():
            for rank, did in enumerate(docs, 1):
                if rank < best.get(did, rank + 1):
                    best[did] = rank
    return best


def depth_that_fits(entry: dict[str, int], judged: set[str], depth: int, max_docs: int | None) -> int:
    """The largest pool depth ``d <= depth`` with ``|judged ∪ pool(d)| <= max_docs`` (``depth`` without a budget;
    0 when the judged documents alone fill it)."""
    if max_docs is None:
        return depth
    room = max_docs - len(judged)
    if room <= 0:
        return 0
    ranks = sorted(rank for did, rank in entry.items() if did not in judged and rank <= depth)
    if len(ranks) <= room:
        return depth
    # ranks[room] is the entry depth of the first document that does not fit; every document entering at that
    # depth must stay out too, so the pool stops one level above it.
    return ranks[room] - 1
