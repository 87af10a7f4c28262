"""The ranking check: does the subset order systems as the full set does?

Every system is evaluated on the full set and on the subset through the runner (so each side writes the same
run and results files as ``beirx eval``), and the two orderings of the systems by a metric (nDCG@10) are
compared with Kendall's tau-b (``scipy.stats.kendalltau``; Kendall 1938, tie correction of Kendall 1945).
Tau below the threshold warns: the subset cannot stand in for the full set to compare these systems. The
default threshold 0.9 is Voorhees' (SIGIR 1998; IP&M 2000): system rankings with tau >= 0.9 were taken as
equivalent when judgements changed, and a smaller tau as a real difference.

beirx systems are run again on the subset (BM25's statistics depend on the corpus). A TREC run file only
exists for the full set, so on the subset it is the same run restricted to the subset's queries and
documents, which is what any system whose scores do not depend on the rest of the corpus (dense, SPLADE with
a fixed vocabulary, rerankers) would retrieve there.
"""

from __future__ import annotations

import dataclasses
import logging
from itertools import combinations
from pathlib import Path

from beirx.artifacts.subset import RankingCheck, SubsetManifest, SystemAgreement
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.evaluate import defaults
from beirx.evaluate.runner import run_experiment
from beirx.evaluate.stages import Stages
from beirx.evaluate.runs import read_trec, write_trec
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, System
from beirx.language_packs import get_pack

log = logging.getLogger(__name__)

THRESHOLD = 0.9
METRIC = "NDCG@10"


def kendall_tau(full: list[float], subset: list[float]) -> tuple[float | None, float | None]:
    """``(tau-b, two-sided p-value)`` of scipy; ``(None, None)`` where tau is undefined."""
    from scipy.stats import kendalltau

    if len(full) < 2:
        return None, None
    result = kendalltau(full, subset)
    tau, p = float(result.statistic), float(result.pvalue)
    return (None, None) if tau != tau else (tau, None if p != p else p)


def _ranks(values: list[float]) -> list[int]:
    """1 = best; equal values share the best rank among them."""
    return [1 + sum(other > value for other in values) for value in values]


def compare(labels: list[str], full: list[float], subset: list[float], *, metric: str, split: str,
            threshold: float, full_checksum: str, subset_checksum: str,
            paths: list[tuple[str | None, str | None]] | None = None) -> RankingCheck:
    """The check of scores already computed (``full[i]``, ``subset[i]`` of system ``labels[i]``)."""
    tau, p_value = kendall_tau(full, subset)
    full_ranks, subset_ranks = _ranks(full), _ranks(subset)
    paths = paths or [(None, None)] * len(labels)
    rows = sorted(zip(labels, full, subset, full_ranks, subset_ranks, paths), key=lambda r: (r[3], r[0]))
    systems = [SystemAgreement(label=label, full=f, subset=s, full_rank=fr, subset_rank=sr, full_results=fp,
                               subset_results=sp) for label, f, s, fr, sr, (fp, sp) in rows]
    swapped = [f"{a.label} vs {b.label}: {a.full - b.full:+.4f} on the full set, {a.subset - b.subset:+.4f} on the "
               "subset" for a, b in combinations(systems, 2) if (a.full - b.full) * (a.subset - b.subset) < 0]
    warning = None
    if tau is None or tau < threshold:
        shown = ("is undefined (every system scores the same on one side)" if tau is None
                 else f"{tau:.3f} is below {threshold:g}")
        warning = (f"Kendall's tau {shown}: the subset does not rank these "
                   f"{len(labels)} systems as the full set does ({len(swapped)} of {len(labels) * (len(labels) - 1) // 2}"
                   " pairs swapped); keep more queries, or read only differences larger than the swapped pairs'")
        log.warning("%s", warning)
    return RankingCheck(metric=metric, split=split, systems=systems, tau=tau, p_value=p_value, threshold=threshold,
                        warning=warning, swapped=swapped, full_checksum=full_checksum, subset_checksum=subset_checksum)


def check_ranking(full: BeirDataset, subset: BeirDataset, systems: dict[str, System], output: Path | str, *,
                  metric: str = METRIC, threshold: float = THRESHOLD, top_k: int = defaults.TOP_K,
                  show_progress: bool = True, use_cache: bool = True, save: bool = True) -> RankingCheck:
    """Evaluate ``systems`` on ``full`` and ``subset`` (run and results files under ``output/full`` and
    ``output/subset``), compare the orderings, and record the check in the subset's ``subset.json``."""
    from beirx.data.catalogue import ignore_identical_ids_for

    manifest = subset.subset
    if manifest is None:
        raise BeirxError(f"{subset.root} is not a beirx subset (no subset.json); make one with  beirx subset")
    if len(systems) < 2:
        raise BeirxError("the ranking check compares at least two systems (four or more make tau meaningful)")
    full_checksum = full.checksum()
    if full_checksum != manifest.source.checksum:
        raise BeirxError(f"{full.root} is not the dataset {subset.root} was cut from (checksum {full_checksum}, "
                         f"subset.json records {manifest.source.checksum})")
    output = Path(output)
    split, pack = manifest.split, get_pack(subset.lang)
    ignore = ignore_identical_ids_for(full.name)
    sides = {"full": (full, Stages(full, pack, split, top_k, ignore, show_progress, use_cache)),
             "subset": (subset, Stages(subset, pack, split, top_k, ignore, show_progress, use_cache))}
    scores: dict[str, list[float]] = {"full": [], "subset": []}
    paths = []
    restricted = _Restrict(subset, output / "subset" / "runs")
    for label, system in systems.items():
        found = []
        for side, (dataset, stages) in sides.items():
            on_side = system if side == "full" else restricted(system)
            outcome = run_experiment(dataset, pack, split, on_side, output / side, top_k=top_k, ignore_identical_ids=ignore,
                                     show_progress=show_progress, use_cache=use_cache, stages=stages)
            scores[side].append(outcome.results.metrics[metric])
            found.append(str(outcome.results_path))
        paths.append(tuple(found))
        log.info("%s: %s %.4f on the full set, %.4f on the subset", label, metric, scores["full"][-1],
                 scores["subset"][-1])
    check = compare(list(systems), scores["full"], scores["subset"], metric=metric, split=split, threshold=threshold,
                    full_checksum=full_checksum, subset_checksum=subset.checksum(), paths=paths)
    if save:
        dataclasses.replace(manifest, ranking_check=check).save(SubsetManifest.path_in(subset.root))
    return check


class _Restrict:
    """A system as it exists on the subset: run files restricted to the subset's queries and documents."""

    def __init__(self, subset: BeirDataset, folder: Path):
        self.subset, self.folder = subset, folder
        self._docs: set[str] | None = None

    def __call__(self, system: System) -> System:
        if isinstance(system, RunFileSpec):
            return dataclasses.replace(system, path=self._restricted(Path(system.path)),
                                       name=system.name or system.label())
        if isinstance(system, FusionSpec):
            return dataclasses.replace(system, inputs=[self(s) for s in system.inputs])
        if isinstance(system, RerankSpec):
            return dataclasses.replace(system, first_stage=self(system.first_stage))
        return system

    def _restricted(self, path: Path) -> Path:
        if self._docs is None:
            self._docs = {doc.id for doc in beir_io.iter_corpus(self.subset.corpus_path)}
        queries = set(self.subset.subset.query_ids)
        run = read_trec(path, queries=queries)
        target = self.folder / path.name
        write_trec(target, {qid: {d: s for d, s in docs.items() if d in self._docs} for qid, docs in run.items()},
                   tag=f"{path.stem}-subset")
        return target
