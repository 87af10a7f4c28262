"""Cut a subset out of a BEIR dataset: sampled queries, their judgements, and a corpus of judged, pooled and
randomly drawn documents, streamed from disk in bounded memory.

The corpus is every document judged for the kept queries (relevant or not; never dropped), the pool of the
systems at the depth that fits ``max_docs`` (:mod:`beirx.subsets.pool`) and a seeded random fill up to
``max_docs``. The fill is a uniform sample of the remaining documents drawn by random priorities: every
document in file order gets ``u ~ U(0, 1)`` from the seeded generator and the ``k`` smallest are kept
(sampling by random sort keys; a bounded heap keeps at most ``max_docs`` of them, so memory does not grow
with the corpus). Records are copied as the source's own lines, so IDs, titles, texts and metadata are
byte-for-byte the source's; the qrels keep every judgement of the kept queries with its score.

Two streaming passes over the corpus (membership and fill, then writing) and one over the queries; memory
holds the kept queries, their judgements, the pooled ranked lists and at most ``max_docs`` fill candidates.
The folder is written beside the target and moved into place when complete (:func:`beirx.atomic.atomic_dir`).
"""

from __future__ import annotations

import heapq
import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from beirx.artifacts.manifest import DatasetSide
from beirx.artifacts.subset import SubsetCounts, SubsetManifest, SubsetMethod, subset_name
from beirx.atomic import atomic_dir, atomic_writer
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.errors import BeirxError, DataError
from beirx.evaluate.specs import System
from beirx.language_packs import get_pack
from beirx.progress import progress
from beirx.provenance import Timer, environment_versions
from beirx.subsets.pool import Pooled, depth_that_fits, entry_depths, pool_runs
from beirx.subsets.query_sample import sample_queries
from beirx.subsets.recipe import QUERY_CAP

log = logging.getLogger(__name__)


def make_subset(dataset: BeirDataset, output: Path | str, *, queries: int | None, pool: dict[str, System],
                depth: int, max_docs: int | None = None, seed: int = 0, stratify: bool = False,
                split: str | None = None, show_progress: bool = True, use_cache: bool = True) -> SubsetManifest:
    """Write the subset of ``dataset`` to ``output`` and return its manifest (also ``output/subset.json``);
    ``queries`` None keeps every judged query up to :data:`beirx.subsets.recipe.QUERY_CAP`."""
    from beirx.data.catalogue import test_split_for

    started = time.time()
    output = Path(output)
    check_output(output, dataset)
    split = split or test_split_for(dataset.name)
    timer = Timer()
    with timer.section("queries"):
        qrels = dataset.qrels(split)
        judged_queries, query_characters = _judged_queries(dataset, qrels)
        chosen = sample_queries(qrels, set(judged_queries), QUERY_CAP if queries is None else queries, seed, stratify,
                                cap=queries is None)
        if not chosen.kept:
            raise DataError(dataset.qrels_path(split), "no judged query has a relevant document and a text")
        kept = {qid: judged_queries[qid] for qid in chosen.kept}
    with timer.section("pool"):
        pooled = pool_runs(dataset, get_pack(dataset.lang), kept, pool, depth, show_progress, use_cache) \
            if depth > 0 else []
    with timer.section("corpus_scan"):
        found = gather(dataset, kept, qrels, pooled, max_docs, seed, show_progress)
    _refuse_foreign_runs(pooled, found.scan.present, dataset.corpus_path)
    selection = select(found, pooled, depth, max_docs)
    judged_present, reached, keep = found.judged, selection.reached, selection.keep
    if max_docs is not None and len(judged_present) > max_docs:
        log.warning("the %d documents judged for the %d kept queries exceed --max-docs %d: all are kept, with no "
                    "pool and no random fill", len(judged_present), len(kept), max_docs)
    elif reached < depth and pooled:
        log.info("pool depth shrank from %d to %d to fit --max-docs %d", depth, reached, max_docs)
    if found.missing:
        log.warning("%d documents judged for the kept queries are not in %s (e.g. %s); they count as unretrievable",
                    len(found.missing), dataset.corpus_path.name, sorted(found.missing)[0])

    name = subset_name(dataset.name)
    manifest = SubsetManifest(
        name=name, language=dataset.lang,
        source=DatasetSide(path=str(dataset.root), name=dataset.name, lang=dataset.lang, checksum=dataset.checksum()),
        split=split,
        method=SubsetMethod(queries=QUERY_CAP if queries is None else queries, stratify=stratify, seed=seed,
                            depth=depth, depth_reached=reached, max_docs=max_docs, queries_cap=queries is None),
        pool=[p.system for p in pooled],
        counts=SubsetCounts(candidate_queries=chosen.candidates, queries=len(kept), strata=chosen.strata,
                            qrels=sum(len(qrels[q]) for q in kept), source_documents=found.scan.total,
                            judged=len(judged_present), judged_missing=len(found.missing),
                            pooled=len(selection.pooled), random=len(selection.fill), documents=len(keep),
                            characters=selection.characters(found) + sum(len(q.text) for q in kept.values()),
                            source_characters=found.scan.characters + query_characters),
        query_ids=list(kept), versions=environment_versions())
    with timer.section("write"):
        with atomic_dir(output) as tmp:
            write_records(dataset, tmp, keep, list(kept), qrels, split, show_progress)
            manifest.timings = {**timer.seconds, "total": round(time.time() - started, 3)}
            manifest.save(SubsetManifest.path_in(tmp))
    log.info("subset %s: %d queries, %d documents (%d judged, %d pooled at depth %d, %d random) -> %s", name,
             len(kept), len(keep), len(judged_present), len(selection.pooled), reached, len(selection.fill), output)
    return manifest


def _refuse_foreign_runs(pooled, present: set[str], corpus: Path) -> None:
    """A pooling run file none of whose ranked documents is in the corpus is a run on another corpus (or another
    ID scheme): pooling it would silently add nothing."""
    for item in pooled:
        ranked_ids = {did for docs in item.lists.values() for did in docs}
        if item.system.description.get("retriever") == "run_file" and ranked_ids and not ranked_ids & present:
            raise DataError(Path(item.system.description["path"]),
                            f"none of the {len(ranked_ids)} document IDs this run file ranks for the kept queries "
                            f"is in {corpus} (e.g. {min(ranked_ids)!r}); is it a run on another corpus?")


def check_output(output: Path, dataset: BeirDataset) -> None:
    """Never overwrite the source or a folder that is not a subset (a previous subset is replaced whole)."""
    if output.resolve() == dataset.root.resolve():
        raise BeirxError(f"the output folder {output} is the source dataset; choose another --output")
    if output.exists() and (not output.is_dir() or (any(output.iterdir())
                                                    and not SubsetManifest.path_in(output).is_file())):
        raise BeirxError(f"{output} exists and is not a beirx subset; choose an empty or new --output")


def _judged_queries(dataset: BeirDataset, qrels) -> tuple[dict[str, Query], int]:
    """The judged queries of the split that have a text, streamed from the queries file, and the characters of
    every query's text (what translating the whole queries file reads)."""
    found, characters = {}, 0
    for query in beir_io.iter_queries(dataset.queries_path):
        characters += len(query.text)
        if query.id in qrels and query.text.strip():
            found[query.id] = query
    return found, characters


class _Scan:
    """What one pass over the corpus learns: which wanted IDs exist, the corpus size and characters, and fill
    candidates (with the characters of every document that may be kept)."""

    def __init__(self, limit: int):
        self.present: set[str] = set()
        self.total = 0
        self.characters = 0
        self.length: dict[str, int] = {}  # wanted documents and fill candidates only: bounded like the heap
        self.limit = limit
        self.heap: list[tuple[float, str]] = []  # (-priority, id): the `limit` smallest priorities
        self.priority: dict[str, float] = {}  # of the pooled (not judged) documents, which may end up as fill

    def offer(self, priority: float, doc_id: str, length: int) -> None:
        if len(self.heap) < self.limit:
            heapq.heappush(self.heap, (-priority, doc_id))
        elif self.heap and priority < -self.heap[0][0]:
            del self.length[heapq.heapreplace(self.heap, (-priority, doc_id))[1]]
        else:
            return
        self.length[doc_id] = length


def _scan(dataset: BeirDataset, wanted: set[str], judged: set[str], limit: int, seed: int, show: bool) -> _Scan:
    rng = random.Random(f"{seed}:fill")
    scan = _Scan(limit)
    docs = progress(beir_io.iter_corpus(dataset.corpus_path), desc="subset: reading the corpus", unit="docs",
                    enabled=show)
    for doc in docs:
        scan.total += 1
        length = len(doc.title) + len(doc.text)
        scan.characters += length
        priority = rng.random()  # drawn for every document, so the fill depends only on the seed and the file
        if doc.id in wanted:
            scan.present.add(doc.id)
            scan.length[doc.id] = length
            if doc.id not in judged:
                scan.priority[doc.id] = priority
        else:
            scan.offer(priority, doc.id, length)
    return scan


@dataclass
class Candidates:
    """What a cut chooses from: the kept queries' judged documents present in the corpus (and those missing),
    and one scan of the corpus for every document any pooling system ranks (:func:`gather`)."""

    judged: set[str]
    missing: set[str]
    scan: _Scan


@dataclass
class Selection:
    """The documents a cut keeps (:func:`select`)."""

    keep: set[str]
    pooled: set[str]
    """Pooled at ``reached`` and not judged."""
    fill: set[str]
    reached: int

    def characters(self, found: Candidates) -> int:
        """Of the kept titles and texts."""
        return sum(found.scan.length[d] for d in self.keep)


def gather(dataset: BeirDataset, kept: dict[str, Query], qrels, pooled: list[Pooled], max_docs: int | None,
           seed: int, show_progress: bool = False) -> Candidates:
    """One streamed pass over the corpus for the kept queries and the pooled lists: which judged and pooled
    documents exist, the corpus's size and characters, and the fill's candidates. Any part of ``pooled`` can
    then be selected from it (:func:`select`) as a fresh cut with only that part would select."""
    judged = {did for qid in kept for did in qrels[qid]}
    scan = _scan(dataset, judged | set(entry_depths(pooled)), judged, max_docs or 0, seed, show_progress)
    return Candidates(judged=judged & scan.present, missing=judged - scan.present, scan=scan)


def select(found: Candidates, pooled: list[Pooled], depth: int, max_docs: int | None) -> Selection:
    """The judged documents, the pool of ``pooled`` at the largest depth that fits ``max_docs``, and the seeded
    fill: the documents with the smallest priorities among all the others. ``pooled`` may be any part of the
    lists :func:`gather` scanned for; the fill's candidates then include what the other lists ranked, at the
    priority every document drew, so the selection is the one a cut pooling only ``pooled`` makes."""
    entry = {did: rank for did, rank in entry_depths(pooled).items()
             if did in found.scan.present and did not in found.judged}
    reached = depth_that_fits(entry, found.judged, depth, max_docs) if pooled else 0
    pooled_ids = {did for did, rank in entry.items() if rank <= reached}
    selected = found.judged | pooled_ids
    fill = _fill(found.scan, selected, max(0, (max_docs or 0) - len(selected)))
    return Selection(keep=selected | fill, pooled=pooled_ids, fill=fill, reached=reached)


def _fill(scan: _Scan, selected: set[str], k: int) -> set[str]:
    """The ``k`` documents with the smallest priorities among those not ``selected`` (the heap holds the smallest
    of the documents no system ranks; every ranked, unjudged document has its priority)."""
    if k <= 0:
        return set()
    eligible = [(-neg, did) for neg, did in scan.heap]
    eligible += [(priority, did) for did, priority in scan.priority.items() if did not in selected]
    return {did for _, did in heapq.nsmallest(k, eligible)}


def write_records(dataset: BeirDataset, folder: Path, keep: set[str], query_ids: list[str], qrels, split: str,
                  show_progress: bool = False) -> None:
    """The kept documents and queries as the source's own lines, and every judgement of the kept queries."""
    written = _copy_records(dataset.corpus_path, folder / "corpus.jsonl", keep, show_progress, "documents")
    _copy_records(dataset.queries_path, folder / "queries.jsonl", set(query_ids), show_progress, "queries")
    beir_io.write_qrels(folder / "qrels" / f"{split}.tsv", {qid: qrels[qid] for qid in query_ids})
    if written != len(keep):  # pragma: no cover - the scan and the copy read the same file
        raise BeirxError(f"{dataset.corpus_path} changed while the subset was cut; run again")


def _copy_records(source: Path, target: Path, keep: set[str], show: bool, unit: str) -> int:
    """Copy the lines of ``source`` whose ``_id`` is in ``keep``, unchanged and in order; return how many."""
    count = 0
    with atomic_writer(target) as out:
        for line in progress(_record_lines(source), desc=f"subset: writing {unit}", unit="lines", enabled=show):
            doc_id, text = line
            if doc_id in keep:
                out.write(text if text.endswith("\n") else text + "\n")
                count += 1
    return count


def _record_lines(path: Path) -> Iterator[tuple[str, str]]:
    """``(_id, raw line)`` of every record (the file was checked by the first pass's reader)."""
    for line_no, line in beir_io.read_lines(path):
        if not line.strip():
            continue
        record, problem = beir_io.parse_record(line, require_text=False)
        if problem:
            raise DataError(path, problem, line_no)
        yield record["_id"], line
