"""The runs of a plan's systems on one corpus, query set and split: retrieve, fuse, rerank.

:class:`Stages` computes the run of each system once per (corpus, queries, split) and memoises it, and the
first stages that rerankers rerank are also stored on disk (:mod:`beirx.evaluate.run_cache`), so every
reranker compared on a dataset works on identical candidates, within a command and across commands.
Reranker scores are cached per (query, document) pair by the rerankers themselves, and models are loaded
through the models layer's cache, so every dataset and system of a process shares one copy of each.

Cross-lingual pairs: ``query_dataset`` supplies the queries (e.g. the Polish version) while ``dataset``
supplies the corpus and qrels (e.g. the English one); the two must share query IDs.

Efficiency: each stage fills a typed :class:`~beirx.artifacts.efficiency.Efficiency` (how, and what a
fusion or a reranker records, is said there); a retriever's latency sample is
:data:`~beirx.evaluate.defaults.LATENCY_SAMPLE` queries.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx import __version__
from beirx.artifacts.efficiency import Efficiency, latencies_ms
from beirx.checksums import cache_key
from beirx.data.dataset import BeirDataset
from beirx.data.doc_store import DocStore
from beirx.data.records import Qrels, Query
from beirx.errors import DataError
from beirx.evaluate import defaults, fusion
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.retrievers.base import Retriever
from beirx.evaluate.runs import Run, drop_identical_ids, read_trec, run_checksum, truncate
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, System, SystemSpec
from beirx.language_packs import LanguagePack
from beirx.provenance import Timer

log = logging.getLogger(__name__)


@dataclass
class Stage:
    """A computed run, the system description for the results file, its timings and efficiency figures."""

    run: Run
    description: dict[str, Any]
    timings: dict[str, float]
    efficiency: Efficiency | None = None


def split_queries(dataset: BeirDataset, split: str, query_dataset: BeirDataset | None = None
                  ) -> tuple[dict[str, Query], Qrels]:
    """The judged queries of ``split`` and their qrels; queries come from ``query_dataset`` when given."""
    if query_dataset is None or query_dataset.root == dataset.root:
        return dataset.queries_for_split(split)
    qrels = dataset.qrels(split)
    texts = query_dataset.queries
    queries = {qid: texts[qid] for qid in qrels if qid in texts}
    if not queries:
        raise DataError(query_dataset.queries_path,
                        f"none of the {len(qrels)} query IDs judged in {dataset.qrels_path(split)} is in this file: "
                        "a cross-lingual pair needs two versions of the same dataset with the same IDs")
    missing = [qid for qid in qrels if qid not in texts]
    if missing:
        log.warning("%d judged queries of %s have no %s text in %s (e.g. %s); they score 0", len(missing),
                    dataset.name, query_dataset.lang, query_dataset.queries_path, missing[0])
    return queries, qrels


class Stages:
    """Computes and memoises the run of every system for one corpus, query set and split."""

    def __init__(self, dataset: BeirDataset, pack: LanguagePack, split: str, top_k: int = defaults.TOP_K,
                 ignore_identical_ids: bool = False, show_progress: bool = True, use_cache: bool = True,
                 query_dataset: BeirDataset | None = None, latency_sample: int = defaults.LATENCY_SAMPLE):
        self.dataset = dataset
        self.query_dataset = query_dataset if query_dataset is not None else dataset
        self.pack = pack
        self.split = split
        self.top_k = top_k
        self.ignore_identical_ids = ignore_identical_ids
        self.show_progress = show_progress
        self.use_cache = use_cache
        self.latency_sample = latency_sample
        self.queries, self.qrels = split_queries(dataset, split, query_dataset)
        self._memo: dict[str, Stage] = {}

    @property
    def cross_lingual(self) -> bool:
        return self.query_dataset.lang != self.dataset.lang or self.query_dataset.root != self.dataset.root

    def _base_key(self) -> list:
        from beirx.checksums import corpus_checksum
        from beirx.evaluate.run_cache import queries_digest

        return [__version__, corpus_checksum(self.dataset.corpus_path), queries_digest(self.queries),
                self.ignore_identical_ids]

    def _label(self, kind: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{kind}-{self.dataset.name}-{self.query_dataset.lang}")

    def run(self, system: System, reuse_runs: bool = False) -> Stage:
        """The run of ``system``, computed once per :class:`Stages`.

        With ``reuse_runs`` (used for what rerankers rerank) a first-stage run stored on disk by an earlier
        command is used as is, and a newly computed one is stored, so rerankers compared across commands
        see identical candidates. Systems evaluated on their own are always recomputed (from cached
        indexes and embeddings), so their timings and flags mean what they say.
        """
        reuse_runs = reuse_runs and self.use_cache and isinstance(system, (SystemSpec, FusionSpec))
        key = _memo_key(system, reuse_runs)
        if key not in self._memo:
            if isinstance(system, SystemSpec):
                stage = self._stored(system) if reuse_runs else self._retrieve(system)
            elif isinstance(system, RunFileSpec):
                stage = self._run_file(system)
            elif isinstance(system, FusionSpec):
                stage = self._fuse(system, reuse_runs)
            elif isinstance(system, RerankSpec):
                stage = self._rerank(system)
            else:
                raise TypeError(f"not a system: {system!r}")
            self._memo[key] = stage
        return self._memo[key]

    def load_run_files(self, systems) -> None:
        """Read and check every run file ``systems`` use (themselves, fusion inputs, first stages) now, so one that
        is malformed or of another dataset stops a command before any retrieval."""
        for system in systems:
            if isinstance(system, RunFileSpec):
                self.run(system)
            elif isinstance(system, FusionSpec):
                self.load_run_files(system.inputs)
            elif isinstance(system, RerankSpec):
                self.load_run_files([system.first_stage])

    # -- stages ----------------------------------------------------------------------------------
    def _retriever(self, spec: SystemSpec) -> Retriever:
        return RETRIEVERS.get(spec.retriever)(self.pack, show_progress=self.show_progress, use_cache=self.use_cache,
                                              **spec.params)

    def _retrieve(self, spec: SystemSpec, retriever: Retriever | None = None) -> Stage:
        timer = Timer()
        retriever = retriever or self._retriever(spec)
        with timer.section("index"):
            retriever.index(self.dataset)
        k = self.top_k + int(self.ignore_identical_ids)  # one extra hit so dropping the query itself leaves top_k
        with timer.section("search"):
            run = retriever.search(self.queries, k)
        if self.ignore_identical_ids:
            run = truncate(drop_identical_ids(run), self.top_k)
        description = retriever.describe()
        if retriever.loaded_from_cache:
            description["index_from_cache"] = True
        if retriever.encode_seconds is not None:
            timer.seconds["encode_corpus"] = retriever.encode_seconds
        latencies = latencies_ms(lambda qid: retriever.search({qid: self.queries[qid]}, k), self.queries,
                                 self.latency_sample)
        efficiency = Efficiency.of_retrieval(timer.seconds, len(self.queries), latencies, retriever.index_location,
                                             retriever.device_name)
        return Stage(run, description, timer.seconds, efficiency)

    def _stored(self, spec: SystemSpec) -> Stage:
        """The first-stage run from the run cache, or computed (once) and stored there."""
        from beirx.evaluate.run_cache import RunCache

        retriever = self._retriever(spec)
        description = retriever.describe()
        key = cache_key("first-stage", description, self.pack.describe(), self.top_k, *self._base_key())
        cache = RunCache(self._label(spec.retriever), key)
        timer = Timer()
        with timer.section("load_run"):
            run = cache.get()
        if run is not None:
            log.info("reusing the stored %s first-stage run %s", spec.retriever, cache.path)
            return Stage(run, {**description, "run_from_cache": True}, timer.seconds)
        own = _memo_key(spec, reuse_runs=False)  # the same system run on its own earlier in this plan, else now
        stage = self._memo[own] if own in self._memo else self._memo.setdefault(own, self._retrieve(spec, retriever))
        cache.put(stage.run, {"system": stage.description})
        return stage

    def _run_file(self, spec: RunFileSpec) -> Stage:
        timer = Timer()
        with timer.section("load_run"):
            path = Path(spec.path)
            run = read_trec(path)
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        unknown = [qid for qid in run if qid not in self.queries]
        if len(unknown) == len(run):
            raise DataError(path, f"none of its query IDs is a judged query of {self.dataset.name} "
                                  f"[{self.split}] (e.g. {unknown[0]!r})")
        if unknown:
            log.warning("%s: %d query IDs are not judged in %s and are ignored", path, len(unknown), self.split)
        self._check_documents(path, run)
        run = {qid: run.get(qid, {}) for qid in self.queries}
        if self.ignore_identical_ids:
            run = drop_identical_ids(run)
        run = truncate(run, self.top_k)
        return Stage(run, {"retriever": "run_file", "path": str(path), "sha256": digest}, timer.seconds)

    def _check_documents(self, path: Path, run: Run) -> None:
        """Refuse a run none of whose documents is in the corpus (a run of another dataset): it would score 0
        without a word. A judged document answers at once; otherwise the corpus's ID index does."""
        judged = {did for docs in self.qrels.values() for did in docs}
        if any(did in judged for docs in run.values() for did in docs):
            return
        with DocStore.for_dataset(self.dataset) as corpus:
            if any(did in corpus for docs in run.values() for did in docs):
                return
        example = next((did for docs in run.values() for did in docs), None)
        if example is not None:
            raise DataError(path, f"none of its document IDs is in the corpus of {self.dataset.name} (e.g. "
                                  f"{example!r}): a run of another dataset?")

    def _fuse(self, spec: FusionSpec, reuse_runs: bool) -> Stage:
        parts = [self.run(s, reuse_runs) for s in spec.inputs]
        timer = Timer()
        with timer.section("fuse"):
            fused = fusion.fuse([p.run for p in parts], spec.method, spec.normalization, spec.weights, spec.rrf_k)
            run = truncate(fused, self.top_k)
        description = {**fusion.describe(spec.method, spec.normalization, spec.weights, len(parts), spec.rrf_k),
                       "systems": [p.description for p in parts]}
        timings = {f"{i}.{name}": s for i, p in enumerate(parts) for name, s in p.timings.items()}
        efficiency = Efficiency.of_fusion([p.efficiency for p in parts], timer.seconds["fuse"])
        return Stage(run, description, {**timings, **timer.seconds}, efficiency)

    def _rerank(self, spec: RerankSpec) -> Stage:
        from beirx.evaluate.rerankers import RERANKERS

        first = self.run(spec.first_stage, reuse_runs=True)
        params = {k: v for k, v in spec.params.items() if k != "model"}  # the model is the first argument
        reranker = RERANKERS.get(spec.reranker)(spec.model(self.pack.code), lang=self.pack.code,
                                                show_progress=self.show_progress, use_cache=self.use_cache, **params)
        timer = Timer()
        with timer.section("rerank"):
            with DocStore.for_dataset(self.dataset) as corpus:  # documents read from disk by ID
                run = reranker.rerank(self.queries, corpus, first.run, depth=spec.depth)
        interpolation = {}
        if spec.interpolation is not None:
            with timer.section("interpolate"):
                run, interpolation = interpolate(first.run, run, spec.depth, spec.interpolation)
        # a reranker's number depends on its candidates: which system, how deep, and exactly which run
        candidates = {"retriever": getattr(spec.first_stage, "retriever", spec.first_stage.kind),
                      "system": spec.first_stage.label(), "depth": spec.depth,
                      "top_k": self.top_k, "run_checksum": run_checksum(first.run)}
        description = {"reranker": reranker.describe(), "rerank_depth": spec.depth, "first_stage": first.description,
                       "first_stage_run": candidates, **interpolation}
        timings = {f"first_stage.{name}": s for name, s in first.timings.items()}
        efficiency = Efficiency.of_rerank(timer.seconds["rerank"], len(self.queries), reranker.device_name)
        return Stage(run, description, {**timings, **timer.seconds}, efficiency)


def interpolate(first: Run, reranked: Run, depth: int, weight: float) -> tuple[Run, dict]:
    """The reranked documents scored ``weight * reranker + (1 - weight) * first stage``, both min-max normalised
    per query (:mod:`~beirx.evaluate.fusion`'s weighted CombSUM). A neural score interpolated with BM25's
    often ranks better than either alone (Wang, Zhuang & Zuccon, "BERT-based Dense Retrievers Require
    Interpolation with BM25", ICTIR 2021), the more so for a reranker trained on little data."""
    weights = [1.0 - weight, weight]
    fused = fusion.fuse([truncate(first, depth), reranked], "linear", defaults.NORMALIZATION, weights)
    return fused, {"interpolation": {"reranker_weight": weight,
                                     **fusion.describe("linear", defaults.NORMALIZATION, weights, 2)}}


def _memo_key(system: System, reuse_runs: bool) -> str:
    """The key of ``system``'s run in :class:`Stages`' memo: a run stored for rerankers (``reuse_runs``) and
    one computed on its own are kept apart, since only the latter's timings mean what they say."""
    return f"{reuse_runs}:{system!r}"
