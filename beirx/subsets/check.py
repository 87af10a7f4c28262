"""The ranking check: does the subset order systems as the full set does?

Every system is evaluated on the full set and on the subset through the runner (so each side writes the same
run and results files as ``beirx eval``), and the two orderings of the systems by a metric (nDCG@10) are
compared with Kendall's tau-b (``scipy.stats.kendalltau``; Kendall 1938, tie correction of Kendall 1945),
and Spearman's rho with their bootstrap intervals (unpaired, paired and the full set's self-ceiling), the
resolution of each side and a verdict for every swapped pair (:mod:`beirx.subsets.fidelity`).
Tau below the threshold warns: the subset cannot stand in for the full set to compare these systems. The
default threshold 0.9 is Voorhees' (SIGIR 1998; IP&M 2000): system rankings with tau >= 0.9 were taken as
equivalent when judgements changed, and a smaller tau as a real difference.

beirx systems are run again on the subset (BM25's statistics depend on the corpus). A TREC run file only
exists for the full set, so on the subset it is the same run restricted to the subset's queries and
documents, which is what any system whose scores do not depend on the rest of the corpus (dense, SPLADE with
a fixed vocabulary, rerankers) would retrieve there.

Pool bias: a system that did not take part in pooling (itself, every input of a fusion, a reranker's first
stage) may find its own non-relevant top documents missing from the subset, which raises its score there;
such systems are marked (``pooled: false``).
"""

from __future__ import annotations

import dataclasses
import logging
from itertools import combinations
from pathlib import Path

from beirx.artifacts.subset import PoolSystem, RankingCheck, Resolution, SubsetManifest, Swap, SystemAgreement
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError, DataError
from beirx.evaluate import defaults
from beirx.evaluate.runner import evaluate_system
from beirx.evaluate.stages import Stages
from beirx.evaluate.runs import read_trec, write_trec
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, System, SystemSpec
from beirx.language_packs import get_pack
from beirx.subsets import fidelity
from beirx.subsets.fidelity import kendall_tau
from beirx.subsets.recipe import THRESHOLD

log = logging.getLogger(__name__)

METRIC = "NDCG@10"


def _ranks(values: list[float]) -> list[int]:
    """1 = best; equal values share the best rank among them."""
    return [1 + sum(other > value for other in values) for value in values]


def compare(labels: list[str], full: list[float], subset: list[float], *, metric: str, split: str,
            threshold: float, full_checksum: str, subset_checksum: str,
            paths: list[tuple[str | None, str | None]] | None = None,
            per_query: list[tuple[dict[str, float], dict[str, float]]] | None = None,
            pooled: list[bool | None] | None = None, permutations: int = fidelity.PERMUTATIONS,
            alpha: float = fidelity.ALPHA, seed: int = 0) -> RankingCheck:
    """The check of scores already computed (``full[i]``, ``subset[i]`` of system ``labels[i]``); with
    ``per_query[i]`` (its per-query scores on the full set and on the subset) also tau's and rho's bootstrap
    intervals (unpaired, paired, self-ceiling), the resolutions and the swaps' verdicts."""
    tau, p_value = kendall_tau(full, subset)
    full_ranks, subset_ranks = _ranks(full), _ranks(subset)
    paths = paths or [(None, None)] * len(labels)
    pooled = pooled or [None] * len(labels)
    rows = sorted(zip(labels, full, subset, full_ranks, subset_ranks, paths, pooled), key=lambda r: (r[3], r[0]))
    systems = [SystemAgreement(label=label, full=f, subset=s, full_rank=fr, subset_rank=sr, full_results=fp,
                               subset_results=sp, pooled=took_part)
               for label, f, s, fr, sr, (fp, sp), took_part in rows]
    swapped_pairs = [(a, b) for a, b in combinations(systems, 2) if (a.full - b.full) * (a.subset - b.subset) < 0]
    swapped = [f"{a.label} vs {b.label}: {a.full - b.full:+.4f} on the full set, {a.subset - b.subset:+.4f} on the "
               "subset" for a, b in swapped_pairs]
    noise = _noise(labels, full, subset, per_query, swapped_pairs, permutations, alpha, seed) if per_query else {}
    warning = None
    if tau is None or tau < threshold:
        shown = ("is undefined (every system scores the same on one side)" if tau is None
                 else f"{tau:.3f} is below {threshold:g}")
        warning = (f"Kendall's tau {shown}: the subset does not rank these "
                   f"{len(labels)} systems as the full set does ({len(swapped)} of {len(labels) * (len(labels) - 1) // 2}"
                   " pairs swapped); keep more queries, or read only differences larger than the swapped pairs'")
        log.warning("%s", warning)
    return RankingCheck(metric=metric, split=split, systems=systems, tau=tau, p_value=p_value, threshold=threshold,
                        warning=warning, swapped=swapped, full_checksum=full_checksum, subset_checksum=subset_checksum,
                        rho=fidelity.spearman_rho(full, subset), **noise)


def _noise(labels, full, subset, per_query, swapped_pairs, permutations, alpha, seed) -> dict:
    """Tau's and rho's intervals (unpaired, paired, self-ceiling), each side's resolution, the swaps' verdicts
    and the one-sentence reading."""
    found = fidelity.intervals(full, [sub for _, sub in per_query], [whole for whole, _ in per_query], seed=seed)
    test = (f"two-sided paired randomization test ({permutations:,} permutations, seed {seed}; exact when 2^n is "
            f"smaller), p < {alpha:g} per pair, uncorrected")
    sides = {}
    for side, means, index in (("full", full, 0), ("subset", subset, 1)):
        scores = {label: pq[index] for label, pq in zip(labels, per_query)}
        p = fidelity.pair_p_values(scores, permutations=permutations, seed=seed)
        resolved = fidelity.resolution(dict(zip(labels, means)), p, alpha)
        queries = len(set.intersection(*(set(s) for s in scores.values())))
        sides[side] = (p, Resolution(test=test, queries=queries, smallest_separated=resolved.smallest_separated,
                                     largest_unresolved=resolved.largest_unresolved))

    def p_of(side: str, a: str, b: str) -> float:
        p = sides[side][0]
        return p[(a, b)] if (a, b) in p else p[(b, a)]

    swaps = [Swap(first=a.label, second=b.label, full_difference=a.full - b.full, subset_difference=a.subset - b.subset,
                  full_p=p_of("full", a.label, b.label), subset_p=p_of("subset", a.label, b.label),
                  verdict=fidelity.verdict(p_of("full", a.label, b.label), p_of("subset", a.label, b.label), alpha))
             for a, b in swapped_pairs]
    figures = {name: list(value) if isinstance(value, tuple) else value
               for name, value in dataclasses.asdict(found).items()}
    return {**figures, "subset_resolution": sides["subset"][1],
            "full_resolution": sides["full"][1], "swaps": swaps, "reading": reading(sides["subset"][1], alpha)}


def reading(resolved: Resolution, alpha: float = fidelity.ALPHA) -> str:
    """What a user may read from the subset, in one sentence."""
    level = f"{1 - alpha:.0%}"
    if resolved.smallest_separated is None:
        return (f"this subset separates no pair of the checked systems at {level} ({resolved.queries} queries): "
                "read none of their differences from it")
    sentence = (f"differences below {resolved.smallest_separated:.3f} are not resolved at {level} on this subset "
                f"({resolved.queries} queries)")
    if resolved.largest_unresolved is not None and resolved.largest_unresolved > resolved.smallest_separated:
        sentence += f", nor is every difference up to {resolved.largest_unresolved:.3f}"
    return sentence


def took_part(system: System, pool: list[PoolSystem]) -> bool:
    """Whether ``system`` pooled: itself, every input of a fusion, or a reranker's first stage."""
    from beirx.subsets.system_args import parse_system

    if isinstance(system, FusionSpec):
        return all(took_part(s, pool) for s in system.inputs)
    if isinstance(system, RerankSpec):
        return took_part(system.first_stage, pool)
    for entry in pool:
        if isinstance(system, RunFileSpec):
            if entry.description.get("retriever") == "run_file" and entry.description.get("sha256") == _sha256(system):
                return True
        elif entry.description.get("retriever") != "run_file":
            spelled = parse_system(entry.spec)
            if isinstance(spelled, SystemSpec) and (spelled.retriever, spelled.params) == (system.retriever,
                                                                                          system.params):
                return True
    return False


def _sha256(system: RunFileSpec) -> str:
    from beirx.checksums import corpus_checksum

    return corpus_checksum(Path(system.path)).removeprefix("sha256:")


def check_ranking(full: BeirDataset, subset: BeirDataset, systems: dict[str, System], output: Path | str, *,
                  metric: str = METRIC, threshold: float = THRESHOLD, top_k: int = defaults.TOP_K,
                  show_progress: bool = True, use_cache: bool = True, save: bool = True,
                  permutations: int = fidelity.PERMUTATIONS) -> RankingCheck:
    """Evaluate ``systems`` on ``full`` and ``subset`` (run and results files under ``output/full`` and
    ``output/subset``), compare the orderings, and record the check in the subset's ``subset.json``."""
    from beirx.data.catalogue import ignore_identical_ids_for
    from beirx.subsets.system_args import refuse_repeats

    manifest = subset.subset
    if manifest is None:
        raise BeirxError(f"{subset.root} is not a beirx subset (no subset.json); make one with  beirx subset")
    if len(systems) < 2:
        raise BeirxError("the ranking check compares at least two systems (four or more make tau meaningful)")
    refuse_repeats(systems)
    full_checksum = full.checksum()
    if full_checksum != manifest.source.checksum:
        raise BeirxError(f"{full.root} is not the dataset {subset.root} was cut from (checksum {full_checksum}, "
                         f"subset.json records {manifest.source.checksum})")
    output = Path(output)
    split, pack = manifest.split, get_pack(subset.lang)
    ignore = ignore_identical_ids_for(full.name)
    sides = {"full": (full, Stages(full, pack, split, top_k, ignore, show_progress, use_cache)),
             "subset": (subset, Stages(subset, pack, split, top_k, ignore, show_progress, use_cache))}
    sides["full"][1].load_run_files(systems.values())  # a run of another dataset stops here, before any work
    scores: dict[str, list[float]] = {"full": [], "subset": []}
    paths, per_query = [], []
    restricted = _Restrict(subset, output / "subset" / "runs")
    for label, system in systems.items():
        found, queries = [], []
        for side, (dataset, stages) in sides.items():
            on_side = system if side == "full" else restricted(system)
            outcome = evaluate_system(stages, on_side, output / side)
            scores[side].append(outcome.results.metrics[metric])
            found.append(str(outcome.results_path))
            queries.append(outcome.results.per_query_metric(metric))
        paths.append(tuple(found))
        per_query.append(tuple(queries))
        log.info("%s: %s %.4f on the full set, %.4f on the subset", label, metric, scores["full"][-1],
                 scores["subset"][-1])
    check = compare(list(systems), scores["full"], scores["subset"], metric=metric, split=split, threshold=threshold,
                    full_checksum=full_checksum, subset_checksum=subset.checksum(), paths=paths, per_query=per_query,
                    pooled=[took_part(system, manifest.pool) for system in systems.values()], permutations=permutations)
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
        kept = {qid: {d: s for d, s in docs.items() if d in self._docs} for qid, docs in run.items()}
        if not any(kept.values()):
            raise DataError(path, f"none of the documents it retrieves for the subset's {len(queries)} queries is in "
                                  f"the subset's corpus ({self.subset.root}): the subset cannot rank this run")
        target = self.folder / path.name
        write_trec(target, kept, tag=f"{path.stem}-subset")
        return target
