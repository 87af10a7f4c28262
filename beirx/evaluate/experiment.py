"""Run one system on one dataset, language and split: retrieve, evaluate, write the run and results.

This is the single path every evaluation takes (CLI, config grids, tests), so every results file
carries the same provenance.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.data.dataset import BeirDataset
from beirx.evaluate.metrics import DEFAULT_K, evaluate
from beirx.evaluate.results import build_results, write_results
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.runs import drop_identical_ids, truncate, write_trec
from beirx.provenance import Timer

log = logging.getLogger(__name__)


@dataclass
class SystemSpec:
    """A retrieval system: a registered retriever name and its parameters."""

    retriever: str
    params: dict[str, Any] = field(default_factory=dict)

    def tag(self) -> str:
        """A file-name-safe label, e.g. ``bm25-fields_multifield-k1_1.2-b_0.75``."""
        parts = [self.retriever] + [f"{k}_{v}" for k, v in sorted(self.params.items()) if v is not None]
        return re.sub(r"[^A-Za-z0-9._=-]+", "_", "-".join(parts))


@dataclass
class Outcome:
    results: dict[str, Any]
    results_path: Path
    run_path: Path


def run_experiment(dataset: BeirDataset, pack, split: str, system: SystemSpec, output_dir: Path,
                   top_k: int = 1000, k_values=DEFAULT_K, ignore_identical_ids: bool = False,
                   show_progress: bool = True, use_cache: bool = True) -> Outcome:
    """Index, search the split's judged queries, evaluate with pytrec_eval, and write both files."""
    timer = Timer()
    queries, qrels = dataset.queries_for_split(split)
    retriever = RETRIEVERS.get(system.retriever)(pack, show_progress=show_progress, use_cache=use_cache,
                                                   **system.params)
    with timer.section("index"):
        retriever.index(dataset)
    with timer.section("search"):
        # One extra hit per query so that removing the query itself still leaves top_k documents.
        run = retriever.search(queries, top_k + int(ignore_identical_ids))
    if ignore_identical_ids:
        run = truncate(drop_identical_ids(run), top_k)
    with timer.section("evaluate"):
        evaluation = evaluate(qrels, run, k_values=k_values, ignore_identical_ids=ignore_identical_ids)

    stem = f"{dataset.name.replace('/', '_')}-{dataset.lang}-{split}-{system.tag()}"
    output_dir = Path(output_dir)
    run_path = output_dir / f"{stem}.trec"
    results_path = output_dir / f"{stem}.json"
    write_trec(run_path, run, tag=system.tag())
    description = retriever.describe()
    if getattr(retriever, "loaded_from_cache", False):
        description["index_from_cache"] = True
    results = build_results(dataset=dataset, split=split, pack=pack, system=description, evaluation=evaluation,
                            k_values=k_values, ignore_identical_ids=ignore_identical_ids, timings=timer.seconds,
                            run_file=run_path.name, extra={"top_k": top_k})
    write_results(results_path, results)
    log.info("wrote %s and %s", run_path, results_path)
    return Outcome(results=results, results_path=results_path, run_path=run_path)
