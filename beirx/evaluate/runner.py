"""Run a :class:`~beirx.evaluate.plan.Plan`: every system on every dataset and language pair, evaluated with
pytrec_eval, its run and results files written.

This is the single path every evaluation takes (flags, grid files, tests), so every results document
carries the same provenance. It orchestrates only: the runs come from :class:`~beirx.evaluate.stages.Stages`
(retrieve, fuse, rerank), the metrics from :mod:`beirx.evaluate.metrics`, the file names, results documents
and grid summary from :mod:`beirx.evaluate.outputs`. Every dataset, language and model a plan needs is
checked before any work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from beirx.artifacts.results import ResultsDocument
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.evaluate import defaults
from beirx.evaluate.metrics import DEFAULT_K, evaluate
from beirx.evaluate.outputs import Row, build_results, output_paths, result_stem, write_summary
from beirx.evaluate.plan import DatasetTarget, Plan
from beirx.evaluate.runs import write_trec
from beirx.evaluate.specs import System, models_needed
from beirx.evaluate.stages import Stages
from beirx.language_packs import LanguagePack, get_pack
from beirx.models.default_models import check_available
from beirx.provenance import Timer

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    results: ResultsDocument
    """The results document written to ``results_path``."""
    results_path: Path
    run_path: Path


def run_experiment(dataset: BeirDataset, pack: LanguagePack, split: str, system: System, output_dir: Path,
                   top_k: int = defaults.TOP_K, k_values=DEFAULT_K, ignore_identical_ids: bool = False,
                   show_progress: bool = True, use_cache: bool = True, query_dataset: BeirDataset | None = None,
                   language_source: str | None = None) -> Outcome:
    """Evaluate one system on its own (:func:`evaluate_system` on new :class:`~beirx.evaluate.stages.Stages`)."""
    stages = Stages(dataset, pack, split, top_k, ignore_identical_ids, show_progress, use_cache, query_dataset)
    return evaluate_system(stages, system, output_dir, k_values, language_source)


def evaluate_system(stages: Stages, system: System, output_dir: Path, k_values=DEFAULT_K,
                    language_source: str | None = None) -> Outcome:
    """Compute ``system``'s run with ``stages`` (their corpus, queries, split, top k and settings; runs that
    other systems share are computed once), evaluate it with pytrec_eval, and write both files."""
    dataset, pack, split, top_k = stages.dataset, stages.pack, stages.split, stages.top_k
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
        stages.load_run_files(plan.systems.values())
        for name, system in plan.systems.items():
            log.info("%s [%s/%s] %s", corpus.name, pair.label, split, name)
            outcome = evaluate_system(stages, system, output, language_source=lang_source)
            if on_result:
                on_result(outcome)
            rows.append(Row(corpus.name, pair.label, split, system.label(), outcome.results.metrics,
                            outcome.results_path, outcome.run_path))
    if plan.summary:
        write_summary(rows, output)
    return rows
