"""Run one system on one dataset, language and split: retrieve, evaluate, write the run and results.

This is the single path every evaluation takes (CLI, config grids, tests), so every results file
carries the same provenance.

A system is one of:

- :class:`SystemSpec`: a registered first-stage retriever (``bm25``, ``dense``) and its parameters;
- :class:`RunFileSpec`: a TREC run file used as a first stage;
- :class:`FusionSpec`: two or more systems fused (:mod:`beirx.evaluate.fusion`);
- :class:`RerankSpec`: a registered reranker applied to another system's top ``depth`` documents.

:class:`Stages` computes the run of each system once per (corpus, queries, split) and memoises it, and
the first stages that rerankers rerank are also stored on disk (:mod:`beirx.evaluate.run_cache`), so every
reranker compared on a dataset works on identical candidates, within a command and across commands.
Reranker scores are cached per (query, document) pair by the rerankers themselves
(:mod:`beirx.evaluate.rerankers.score_cache`).

Cross-lingual pairs: ``query_dataset`` supplies the queries (e.g. the Polish version) while ``dataset``
supplies the corpus and qrels (e.g. the English one); the two must share query IDs. Both languages are
recorded in the results.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from beirx import __version__
from beirx.data.dataset import BeirDataset
from beirx.data.records import Query, Qrels
from beirx.errors import BeirxError, DataError
from beirx.evaluate import fusion
from beirx.evaluate.metrics import DEFAULT_K, evaluate
from beirx.evaluate.results import build_results, write_results
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.retrievers.base import cache_key
from beirx.evaluate.runs import Run, drop_identical_ids, read_trec, truncate, write_trec
from beirx.provenance import Timer

log = logging.getLogger(__name__)

_MAX_TAG = 150


def _safe(text: str) -> str:
    """A file-name-safe tag; over-long tags keep a readable head and a hash of the whole."""
    tag = re.sub(r"[^A-Za-z0-9._=-]+", "_", text)
    if len(tag) > _MAX_TAG:
        tag = f"{tag[:_MAX_TAG - 13]}-{hashlib.sha256(tag.encode()).hexdigest()[:12]}"
    return tag


def _param_tag(params: dict[str, Any]) -> list[str]:
    return [f"{k}_{v}" for k, v in sorted(params.items()) if v is not None]


@dataclass
class SystemSpec:
    """A retrieval system: a registered retriever name and its parameters (``name`` labels files)."""

    retriever: str
    params: dict[str, Any] = field(default_factory=dict)
    name: str | None = None

    def tag(self) -> str:
        """A file-name-safe label, e.g. ``bm25-fields_multifield-k1_1.2-b_0.75``."""
        if self.name:
            return _safe(self.name)
        parts = [self.retriever] + _param_tag(self.params)
        return re.sub(r"[^A-Za-z0-9._=-]+", "_", "-".join(parts))


@dataclass
class RunFileSpec:
    """A first stage read from a TREC run file (e.g. produced by another toolkit)."""

    path: Path
    name: str | None = None

    def tag(self) -> str:
        return _safe(self.name or f"run-{Path(self.path).stem}")


@dataclass
class FusionSpec:
    """Two or more systems fused with one of :data:`beirx.evaluate.fusion.METHODS`."""

    inputs: list["System"]
    method: str = "rrf"
    normalization: str = "min_max"
    weights: list[float] | None = None
    rrf_k: int = fusion.RRF_K
    name: str | None = None

    def __post_init__(self) -> None:
        if len(self.inputs) < 2:
            raise BeirxError("fusion needs at least two systems")
        if self.method not in fusion.METHODS:
            raise BeirxError(f"unknown fusion method {self.method!r}; choose one of: {', '.join(fusion.METHODS)}")
        if self.normalization not in fusion.NORMALIZATIONS:
            raise BeirxError(f"unknown normalization {self.normalization!r}; "
                             f"choose one of: {', '.join(fusion.NORMALIZATIONS)}")
        fusion.check_weights(self.weights, len(self.inputs))

    def tag(self) -> str:
        if self.name:
            return _safe(self.name)
        head = self.method if self.method == "rrf" else f"{self.method}-{self.normalization}"
        if self.weights:
            head += "-w" + "_".join(f"{w:g}" for w in self.weights)
        return _safe(f"{head}-" + "+".join(s.tag() for s in self.inputs))


@dataclass
class RerankSpec:
    """A registered reranker rescoring the top ``depth`` documents of ``first_stage``."""

    first_stage: "System"
    reranker: str
    params: dict[str, Any] = field(default_factory=dict)
    depth: int = 100
    name: str | None = None

    def tag(self) -> str:
        if self.name:
            return _safe(self.name)
        parts = [self.first_stage.tag(), f"rerank_{self.reranker}"] + _param_tag(self.params) + [f"depth_{self.depth}"]
        return _safe("-".join(parts))


System = Union[SystemSpec, RunFileSpec, FusionSpec, RerankSpec]


@dataclass
class Stage:
    """A computed run, the system description for the results file, and its timings."""

    run: Run
    description: dict[str, Any]
    timings: dict[str, float]


@dataclass
class Outcome:
    results: dict[str, Any]
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

    def __init__(self, dataset: BeirDataset, pack, split: str, top_k: int = 1000, ignore_identical_ids: bool = False,
                 show_progress: bool = True, use_cache: bool = True, query_dataset: BeirDataset | None = None):
        self.dataset = dataset
        self.query_dataset = query_dataset if query_dataset is not None else dataset
        self.pack = pack
        self.split = split
        self.top_k = top_k
        self.ignore_identical_ids = ignore_identical_ids
        self.show_progress = show_progress
        self.use_cache = use_cache
        self.queries, self.qrels = split_queries(dataset, split, query_dataset)
        self._memo: dict[str, Stage] = {}

    @property
    def cross_lingual(self) -> bool:
        return self.query_dataset.lang != self.dataset.lang or self.query_dataset.root != self.dataset.root

    def _base_key(self) -> list:
        from beirx.evaluate.embeddings_cache import corpus_checksum
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
    def _retriever(self, spec: SystemSpec):
        return RETRIEVERS.get(spec.retriever)(self.pack, show_progress=self.show_progress, use_cache=self.use_cache,
                                              **spec.params)

    def _retrieve(self, spec: SystemSpec) -> Stage:
        timer = Timer()
        retriever = self._retriever(spec)
        with timer.section("index"):
            retriever.index(self.dataset)
        with timer.section("search"):
            # One extra hit per query so that removing the query itself still leaves top_k documents.
            run = retriever.search(self.queries, self.top_k + int(self.ignore_identical_ids))
        if self.ignore_identical_ids:
            run = truncate(drop_identical_ids(run), self.top_k)
        description = retriever.describe()
        if getattr(retriever, "loaded_from_cache", False):
            description["index_from_cache"] = True
        if getattr(retriever, "encode_seconds", None) is not None:
            timer.seconds["encode_corpus"] = retriever.encode_seconds
        return Stage(run, description, timer.seconds)

    def _stored(self, spec: SystemSpec) -> Stage:
        """The first-stage run from the run cache, or computed (once) and stored there."""
        from beirx.evaluate.run_cache import RunCache

        description = self._retriever(spec).describe()
        key = cache_key("first-stage", description, self.pack.describe(), self.top_k, *self._base_key())
        cache = RunCache(self._label(spec.retriever), key)
        timer = Timer()
        with timer.section("load_run"):
            run = cache.get()
        if run is not None:
            log.info("reusing the stored %s first-stage run %s", spec.retriever, cache.path)
            return Stage(run, {**description, "run_from_cache": True}, timer.seconds)
        stage = self.run(spec)
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
        return Stage(run, description, {**timings, **timer.seconds})

    def _rerank(self, spec: RerankSpec) -> Stage:
        first = self.run(spec.first_stage, reuse_runs=True)
        reranker = _reranker(spec.reranker, spec.params, self.pack, self.show_progress, self.use_cache)
        timer = Timer()
        with timer.section("rerank"):
            run = reranker.rerank(self.queries, self.dataset.corpus, first.run, depth=spec.depth)
        description = {"reranker": reranker.describe(), "rerank_depth": spec.depth, "first_stage": first.description}
        timings = {f"first_stage.{name}": s for name, s in first.timings.items()}
        return Stage(run, description, {**timings, **timer.seconds})


_RERANKERS: dict[str, Any] = {}  # loaded rerankers, shared by every system and dataset of a process


def _reranker(name: str, params: dict[str, Any], pack, show_progress: bool, use_cache: bool):
    """The registered reranker ``name``; its model defaults to the language pack's (``models[name]``)."""
    from beirx.evaluate.rerankers import RERANKERS

    params = dict(params)
    model = params.pop("model", None) or (getattr(pack, "models", {}) or {}).get(name.replace("-", "_"))
    if not model:
        raise BeirxError(f"reranker {name!r} needs a model (--reranker-model): the {pack.code!r} language pack "
                         "has no default for it")
    key = repr((name, model, sorted(params.items()), pack.code, show_progress, use_cache))
    if key not in _RERANKERS:
        _RERANKERS[key] = RERANKERS.get(name)(model, lang=pack.code, show_progress=show_progress,
                                               use_cache=use_cache, **params)
    return _RERANKERS[key]


def result_stem(dataset: BeirDataset, split: str, tag: str, query_lang: str | None = None) -> str:
    """``<dataset>-<lang>-<split>-<system>``; a cross-lingual pair's language part is ``<query>2<corpus>``."""
    langs = dataset.lang if query_lang in (None, dataset.lang) else f"{query_lang}2{dataset.lang}"
    return f"{dataset.name.replace('/', '_')}-{langs}-{split}-{tag}"


def run_experiment(dataset: BeirDataset, pack, split: str, system: System, output_dir: Path,
                   top_k: int = 1000, k_values=DEFAULT_K, ignore_identical_ids: bool = False,
                   show_progress: bool = True, use_cache: bool = True, query_dataset: BeirDataset | None = None,
                   stages: Stages | None = None) -> Outcome:
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
    stem = result_stem(dataset, split, system.tag(), query_lang)
    output_dir = Path(output_dir)
    run_path = output_dir / f"{stem}.trec"
    results_path = output_dir / f"{stem}.json"
    write_trec(run_path, stage.run, tag=system.tag())
    extra: dict[str, Any] = {"top_k": top_k}
    if stages.cross_lingual:
        qd = stages.query_dataset
        extra["query_dataset"] = {"name": qd.name, "source": qd.source, "language": qd.lang,
                                  "checksum": qd.checksum()}
    results = build_results(dataset=dataset, split=split, pack=pack, system=stage.description, evaluation=evaluation,
                            k_values=k_values, ignore_identical_ids=ignore_identical_ids,
                            timings={**stage.timings, **timer.seconds}, run_file=run_path.name,
                            query_lang=query_lang, extra=extra)
    write_results(results_path, results)
    log.info("wrote %s and %s", run_path, results_path)
    return Outcome(results=results, results_path=results_path, run_path=run_path)
