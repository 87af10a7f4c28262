"""Run a :class:`~beirx.evaluate.plan.Plan`: retrieve, fuse, rerank, evaluate, write runs and results.

This is the single path every evaluation takes (flags, grid files, tests), so every results document
carries the same provenance.

:class:`Stages` computes the run of each system once per (corpus, queries, split) and memoises it, and the
first stages that rerankers rerank are also stored on disk (:mod:`beirx.evaluate.run_cache`), so every
reranker compared on a dataset works on identical candidates, within a command and across commands.
Reranker scores are cached per (query, document) pair by the rerankers themselves.

Cross-lingual pairs: ``query_dataset`` supplies the queries (e.g. the Polish version) while ``dataset``
supplies the corpus and qrels (e.g. the English one); the two must share query IDs.

Efficiency: each stage fills a typed :class:`~beirx.artifacts.efficiency.Efficiency` (how, and what a
fusion or a reranker records, is said there); a retriever's latency sample is
:data:`~beirx.evaluate.defaults.LATENCY_SAMPLE` queries. Models are loaded through the models layer's
cache, so every dataset and system of a process shares one copy of each. File names and the grid summary
are :mod:`beirx.evaluate.outputs`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx import __version__
from beirx.artifacts.efficiency import Efficiency, latencies_ms
from beirx.artifacts.results import ResultsDocument
from beirx.checksums import cache_key
from beirx.data.dataset import BeirDataset
from beirx.data.doc_store import DocStore
from beirx.data.records import Qrels, Query
from beirx.errors import BeirxError, DataError
from beirx.evaluate import defaults, fusion
from beirx.evaluate.metrics import DEFAULT_K, evaluate
from beirx.evaluate.outputs import Row, build_results, output_paths, result_stem, write_summary
from beirx.evaluate.plan import DatasetTarget, Plan
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.retrievers.base import Retriever
from beirx.evaluate.runs import Run, drop_identical_ids, read_trec, truncate, write_trec
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, System, SystemSpec, models_needed
from beirx.language_packs import LanguagePack, get_pack
from beirx.models.default_models import check_available
from beirx.provenance import Timer

log = logging.getLogger(__name__)


@dataclass
class Stage:
    """A computed run, the system description for the results file, its timings and efficiency figures."""

    run: Run
    description: dict[str, Any]
    timings: dict[str, float]
    efficiency: Efficiency | None = None


@dataclass
class Outcome:
    results: ResultsDocument
    """The results document written to ``results_path``."""
    results_path: Path
    run_path: Path


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
        key = f"{reuse_runs}:{system!r}"
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
        own = f"False:{spec!r}"  # the same system run on its own earlier in this plan, else now (and memoised)
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
        run = {qid: run.get(qid, {}) for qid in self.queries}
        if self.ignore_identical_ids:
            run = drop_identical_ids(run)
        run = truncate(run, self.top_k)
        return Stage(run, {"retriever": "run_file", "path": str(path), "sha256": digest}, timer.seconds)

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
        description = {"reranker": reranker.describe(), "rerank_depth": spec.depth, "first_stage": first.description}
        timings = {f"first_stage.{name}": s for name, s in first.timings.items()}
        efficiency = Efficiency.of_rerank(timer.seconds["rerank"], len(self.queries), reranker.device_name)
        return Stage(run, description, {**timings, **timer.seconds}, efficiency)


def run_experiment(dataset: BeirDataset, pack: LanguagePack, split: str, system: System, output_dir: Path,
                   top_k: int = defaults.TOP_K, k_values=DEFAULT_K, ignore_identical_ids: bool = False,
                   show_progress: bool = True, use_cache: bool = True, query_dataset: BeirDataset | None = None,
                   stages: Stages | None = None, language_source: str | None = None) -> Outcome:
    """Compute ``system``'s run (reusing ``stages``), evaluate it with pytrec_eval, and write both files."""
    if stages is None:
        stages = Stages(dataset, pack, split, top_k, ignore_identical_ids, show_progress, use_cache, query_dataset)
    elif (stages.dataset, stages.split, stages.top_k) != (dataset, split, top_k):
        raise ValueError("run_experiment: dataset, split and top_k must be those of the given stages")
    ignore_identical_ids = stages.ignore_identical_ids
    stage = stages.run(system)
    timer = Timer()
    with timer.section("evaluate"):
        evaluation = evaluate(stages.qrels, stage.run, k_values=k_values, ignore_identical_ids=ignore_identical_ids)

    query_lang = stages.query_dataset.lang
    run_path, results_path = output_paths(output_dir, result_stem(dataset, split, system.tag(), query_lang))
    write_trec(run_path, stage.run, tag=system.tag())
    results = build_results(dataset=dataset, split=split, pack=pack, system=stage.description, evaluation=evaluation,
                            k_values=k_values, ignore_identical_ids=ignore_identical_ids,
                            timings={**stage.timings, **timer.seconds}, run_file=run_path.name,
                            query_lang=query_lang, top_k=top_k,
                            query_dataset=stages.query_dataset if stages.cross_lingual else None,
                            system_label=system.label(),
                            system_tag=system.tag(), system_kind=system.kind, efficiency=stage.efficiency,
                            language_source=language_source)
    results.save(results_path)
    log.info("wrote %s and %s", run_path, results_path)
    return Outcome(results=results, results_path=results_path, run_path=run_path)


# -- whole plans ----------------------------------------------------------------------------------------------

def resolve_target(target: DatasetTarget, lang: str) -> BeirDataset:
    """The ``lang`` version of a dataset: its folder from ``paths``, the folder ``spec`` itself for its own
    language, else resolved by name (catalogue, cache of translations, Hub)."""
    from beirx.data.resolve import resolve_dataset

    spec = target.paths.get(lang)
    if spec is None and lang != target.base_lang and Path(target.spec).expanduser().is_dir():
        raise BeirxError(f"dataset {target.spec} is a folder: give the {lang!r} version's folder in "
                         f"paths = {{ {lang} = \"...\" }}")
    dataset = resolve_dataset(spec or target.spec, lang=lang)
    name = target.label or (dataset.name if spec is None else Path(target.spec).name)
    return BeirDataset(dataset.root, name=name, lang=lang, source=dataset.source)


def run_plan(plan: Plan, show_progress: bool = True, use_cache: bool = True,
             on_result: Callable[[Outcome], None] | None = None) -> list[Row]:
    """Run every system on every dataset and language pair; write per-system files (and, for grids,
    ``summary.tsv``/``summary.json``). Every dataset and language is resolved before anything runs,
    so a missing translation fails in seconds rather than after hours of encoding."""
    from beirx.data.catalogue import ignore_identical_ids_for, test_split_for

    output = Path(plan.output or defaults.OUTPUT)
    resolved = []
    for target in plan.datasets:
        for pair in target.pairs:
            corpus = resolve_target(target, pair.corpus)
            queries = resolve_target(target, pair.query) if pair.cross_lingual else None
            resolved.append((corpus, queries, pair, target.lang_source))
    for lang in sorted({pair.corpus for _, _, pair, _ in resolved}):  # models too, before any work
        check_available(models_needed(plan.systems.values(), get_pack(lang).code))
    rows: list[Row] = []
    for corpus, queries, pair, lang_source in resolved:
        split = plan.split or test_split_for(corpus.name)
        ignore = plan.ignore_identical_ids
        if ignore is None:
            ignore = ignore_identical_ids_for(corpus.name)
        pack = get_pack(pair.corpus)
        stages = Stages(corpus, pack, split, plan.top_k, ignore, show_progress, use_cache, query_dataset=queries)
        for name, system in plan.systems.items():
            log.info("%s [%s/%s] %s", corpus.name, pair.label, split, name)
            outcome = run_experiment(corpus, pack, split, system, output, top_k=plan.top_k,
                                     ignore_identical_ids=ignore, show_progress=show_progress, use_cache=use_cache,
                                     query_dataset=queries, stages=stages, language_source=lang_source)
            if on_result:
                on_result(outcome)
            rows.append(Row(corpus.name, pair.label, split, system.label(), outcome.results.metrics,
                            outcome.results_path, outcome.run_path))
    if plan.summary:
        write_summary(rows, output)
    return rows
