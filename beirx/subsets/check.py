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

from beirx.artifacts.subset import (DiscriminativePower, PoolBias, PoolSystem, RankingCheck, Resolution, SubsetManifest,
                                   Swap, SystemAgreement)
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.evaluate import defaults
from beirx.evaluate.runner import evaluate_system
from beirx.evaluate.stages import Stages
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, System, SystemSpec
from beirx.language_packs import get_pack
from beirx.subsets import fidelity
from beirx.subsets.fidelity import kendall_tau
from beirx.subsets.recipe import THRESHOLD
from beirx.subsets.restrict import Restrict

log = logging.getLogger(__name__)

METRIC = "NDCG@10"


def _ranks(values: list[float]) -> list[int]:
    """1 = best; equal values share the best rank among them."""
    return [1 + sum(other > value for other in values) for value in values]


def compare(labels: list[str], full: list[float], subset: list[float], *, metric: str, split: str,
            threshold: float, full_checksum: str, subset_checksum: str,
            paths: list[tuple[str | None, str | None]] | None = None,
            per_query: list[tuple[dict[str, float], dict[str, float]]] | None = None,
            pooled: list[bool | None] | None = None, families: list[list[str] | None] | None = None,
            family_pooled: list[bool | None] | None = None, pool_bias: PoolBias | None = None,
            permutations: int = fidelity.PERMUTATIONS, alpha: float = fidelity.ALPHA, seed: int = 0) -> RankingCheck:
    """The check of scores already computed (``full[i]``, ``subset[i]`` of system ``labels[i]``); with
    ``per_query[i]`` (its per-query scores on the full set and on the subset) also tau's and rho's bootstrap
    intervals (unpaired, paired, self-ceiling), the resolutions, the discriminative power kept and the swaps'
    verdicts, a swap judged against ``pool_bias``'s expected bias when the system that gained is one whose
    family did not pool (``family_pooled[i]`` false)."""
    tau, p_value = kendall_tau(full, subset)
    full_ranks, subset_ranks = _ranks(full), _ranks(subset)
    paths = paths or [(None, None)] * len(labels)
    pooled = pooled or [None] * len(labels)
    families = families or [None] * len(labels)
    family_pooled = family_pooled or [None] * len(labels)
    rows = sorted(zip(labels, full, subset, full_ranks, subset_ranks, paths, pooled, families, family_pooled),
                  key=lambda r: (r[3], r[0]))
    systems = [SystemAgreement(label=label, full=f, subset=s, full_rank=fr, subset_rank=sr, full_results=fp,
                               subset_results=sp, pooled=took_part, families=made_of, family_pooled=seen)
               for label, f, s, fr, sr, (fp, sp), took_part, made_of, seen in rows]
    swapped_pairs = [(a, b) for a, b in combinations(systems, 2) if (a.full - b.full) * (a.subset - b.subset) < 0]
    swapped = [f"{a.label} vs {b.label}: {a.full - b.full:+.4f} on the full set, {a.subset - b.subset:+.4f} on the "
               "subset" for a, b in swapped_pairs]
    noise = _noise(labels, full, subset, per_query, swapped_pairs, permutations, alpha, seed, pool_bias) \
        if per_query else {}
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
                        rho=fidelity.spearman_rho(full, subset), pool_bias=pool_bias, **noise)


def _noise(labels, full, subset, per_query, swapped_pairs, permutations, alpha, seed, pool_bias) -> dict:
    """Tau's and rho's intervals (unpaired, paired, self-ceiling), each side's resolution, the discriminative
    power kept, the swaps' verdicts and the one-sentence reading."""
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

    expected = pool_bias.expected if pool_bias is not None else None

    def judged(a: SystemAgreement, b: SystemAgreement) -> str:
        """``a`` leads on the full set; ``b`` gained on the subset."""
        if expected is not None and expected > 0 and a.family_pooled and b.family_pooled is False \
                and b.subset - a.subset <= expected:
            return "within the expected pool bias"
        return fidelity.verdict(p_of("full", a.label, b.label), p_of("subset", a.label, b.label), alpha)

    swaps = [Swap(first=a.label, second=b.label, full_difference=a.full - b.full, subset_difference=a.subset - b.subset,
                  full_p=p_of("full", a.label, b.label), subset_p=p_of("subset", a.label, b.label), verdict=judged(a, b))
             for a, b in swapped_pairs]
    figures = {name: list(value) if isinstance(value, tuple) else value
               for name, value in dataclasses.asdict(found).items()}
    power = fidelity.discriminative_power(dict(zip(labels, full)), dict(zip(labels, subset)), sides["full"][0],
                                          sides["subset"][0], alpha)
    kept = DiscriminativePower(test=test, pairs=power.pairs, full_separated=power.full_separated,
                               same_order=power.same_order, retained=power.retained, reversals=power.reversals,
                               subset_only=power.subset_only)
    return {**figures, "subset_resolution": sides["subset"][1], "full_resolution": sides["full"][1], "swaps": swaps,
            "reading": reading(sides["subset"][1], alpha, pool_bias), "discriminative_power": kept}


def reading(resolved: Resolution, alpha: float = fidelity.ALPHA, pool_bias: PoolBias | None = None) -> str:
    """What a user may read from the subset, in one sentence (with the expected pool bias, when measured)."""
    level = f"{1 - alpha:.0%}"
    if resolved.smallest_separated is None:
        sentence = (f"this subset separates no pair of the checked systems at {level} ({resolved.queries} queries): "
                    "read none of their differences from it")
    else:
        sentence = (f"differences below {resolved.smallest_separated:.3f} are not resolved at {level} on this subset "
                    f"({resolved.queries} queries)")
        if resolved.largest_unresolved is not None and resolved.largest_unresolved > resolved.smallest_separated:
            sentence += f", nor is every difference up to {resolved.largest_unresolved:.3f}"
    if pool_bias is not None and pool_bias.expected is not None:
        if pool_bias.families and not pool_bias.families[0].cut:
            sentence += (f"; nobody pooled, so a new system is cut like the checked ones (the cut raises the "
                         f"families' scores unevenly, by up to {pool_bias.expected:+.3f} over the others)")
        else:
            sentence += (f"; a system that did not pool is expected to gain {pool_bias.expected:+.3f} over those that "
                         f"did, so read its lead over a pooled system net of that")
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
                  permutations: int = fidelity.PERMUTATIONS, pool_bias: bool = True) -> RankingCheck:
    """Evaluate ``systems`` on ``full`` and ``subset`` (run and results files under ``output/full`` and
    ``output/subset``), measure the pool bias of a system that did not pool (``pool_bias``:
    :mod:`beirx.subsets.reusability`, under ``output/leave-out``), compare the orderings, and record the check
    in the subset's ``subset.json``."""
    from beirx.data.catalogue import ignore_identical_ids_for
    from beirx.subsets.families import Families
    from beirx.subsets.reusability import Checked, LeaveOneFamilyOut, metric_depth
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
    paths, per_query, descriptions = [], [], []
    restricted = Restrict({doc.id for doc in beir_io.iter_corpus(subset.corpus_path)}, set(manifest.query_ids),
                          output / "subset" / "runs", full_documents=manifest.counts.source_documents,
                          depth=metric_depth(metric))
    for label, system in systems.items():
        found, queries = [], []
        for side, (dataset, stages) in sides.items():
            on_side = system if side == "full" else restricted(system)
            outcome = evaluate_system(stages, on_side, output / side)
            scores[side].append(outcome.results.metrics[metric])
            found.append(str(outcome.results_path))
            queries.append(outcome.results.per_query_metric(metric))
            if side == "full":
                descriptions.append(outcome.results.system.description)
        paths.append(tuple(found))
        per_query.append(tuple(queries))
        log.info("%s: %s %.4f on the full set, %.4f on the subset", label, metric, scores["full"][-1],
                 scores["subset"][-1])
    if restricted.inexact:
        log.warning("%d query x run pairs restricted to the subset hold fewer than %d of its documents while the run "
                    "was cut short: their %s on the subset is not exact (give deeper runs)", restricted.inexact,
                    metric_depth(metric), metric)
    families = Families()
    made_of = [families.of(description) for description in descriptions]
    pooled_union = frozenset().union(*(families.of(entry.description) for entry in manifest.pool))
    bias = None
    if pool_bias:
        checked = {label: Checked(system, parts, whole, sub) for (label, system), parts, (whole, sub)
                   in zip(systems.items(), made_of, per_query)}
        bias = LeaveOneFamilyOut(full, subset, sides["full"][1], output, metric=metric, show_progress=show_progress,
                                 use_cache=use_cache, families=families).measure(checked)
    check = compare(list(systems), scores["full"], scores["subset"], metric=metric, split=split, threshold=threshold,
                    full_checksum=full_checksum, subset_checksum=subset.checksum(), paths=paths, per_query=per_query,
                    pooled=[took_part(system, manifest.pool) for system in systems.values()],
                    families=[sorted(f.label for f in parts) for parts in made_of],
                    family_pooled=[bool(parts) and parts <= pooled_union for parts in made_of], pool_bias=bias,
                    permutations=permutations)
    if save:
        dataclasses.replace(manifest, ranking_check=check).save(SubsetManifest.path_in(subset.root))
    return check
