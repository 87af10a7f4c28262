"""Is a subset fair to the systems that come later? The pool bias of a system that did not pool, measured by
leaving one pooling family out.

A subset is published so that systems that do not exist yet can be evaluated on it, and none of them pooled:
the documents they rank high but no pooling system did are mostly missing, which raises their scores. Zobel
(SIGIR 1998) and Buckley, Dimmick, Soboroff & Voorhees (IRJ 2007) measure this reusability by leaving one
group's runs out of the pool. Here, for each family of the pooling systems (:mod:`beirx.subsets.families`):

1. the subset is cut again without that family's pooling systems: the subset's queries, seed, depth and
   budget, by the cut's own code (:func:`beirx.subsets.cut.gather` once, :func:`~beirx.subsets.cut.select` per
   family), from the pooling systems' runs (cached indexes and embeddings: no encoding);
2. the family's checked systems F and the reference systems R (checked systems made only of families that
   still pooled) are evaluated on that cut;
3. ``bias = mean_q [ mean_{s in F} (cut_s(q) - full_s(q)) - mean_{s in R} (cut_s(q) - full_s(q)) ]`` over the
   subset's queries, with a 95% percentile-bootstrap interval (the queries drawn with replacement,
   :func:`beirx.subsets.fidelity.mean_interval`). Without R (a single pooling family) it is F's own change.

The largest bias over the families is what a new system should expect (``expected``). The checked systems one
of whose families did not pool get the same figure measured directly on the subset (``unseen``), against the
systems whose families all pooled. Evaluation on a cut costs no encoding: a dense or SPLADE system is its
full-set run restricted to the cut (:mod:`beirx.subsets.restrict`; the queries where that run is too shallow
to be exact are counted), BM25 is indexed again on the cut's documents, fusions and rerankers are rebuilt
from their inputs (rerankers' pair scores are cached). Before any family is left out, the cut is repeated
with every family: it must give exactly the subset's documents, or the re-cuts are flagged approximate
(``reproduced``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from beirx.artifacts.subset import FamilyBias, PoolBias, SubsetManifest, SystemBias
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.evaluate.runner import evaluate_system
from beirx.evaluate.specs import System
from beirx.evaluate.stages import Stages
from beirx.subsets import fidelity
from beirx.subsets.families import Families, Family
from beirx.subsets.restrict import Restrict

log = logging.getLogger(__name__)

METHOD = ("leave-one-family-out (Zobel 1998; Buckley et al. 2007): the subset cut again without each pooling family "
          "(same queries, seed, depth and budget); bias = mean over queries of the family's systems' change (cut - "
          "full set) minus that of the systems whose families still pooled; 95% percentile bootstrap over queries "
          "({resamples:,} draws, seed {seed})")


@dataclass
class Checked:
    """A checked system: how it is run, what it is made of, and its per-query scores on both sides."""

    system: System
    families: frozenset[Family]
    full: dict[str, float]
    subset: dict[str, float]


def relative_change(full: dict[str, dict[str, float]], cut: dict[str, dict[str, float]], systems: list[str],
                    reference: list[str], *, resamples: int = fidelity.RESAMPLES, seed: int = 0) -> dict:
    """``bias`` (with its ``interval``), ``change`` and ``reference_change`` of the module doc: per-query scores
    ``full[label]`` and ``cut[label]``, compared over the queries every one of them holds on both sides."""
    involved = systems + reference
    queries = sorted(set.intersection(*(set(full[s]) & set(cut[s]) for s in involved)))
    if not queries or not systems:
        return {"bias": None, "interval": None, "change": None, "reference_change": None, "queries": len(queries)}

    def change(labels: list[str], q: str) -> float:
        return sum(cut[s][q] - full[s][q] for s in labels) / len(labels)

    own = [change(systems, q) for q in queries]
    base = [change(reference, q) for q in queries] if reference else [0.0] * len(queries)
    per_query = [a - b for a, b in zip(own, base)]
    interval = fidelity.mean_interval(per_query, resamples=resamples, seed=seed)
    return {"bias": sum(per_query) / len(queries), "interval": list(interval) if interval else None,
            "change": sum(own) / len(queries), "reference_change": sum(base) / len(queries) if reference else None,
            "queries": len(queries)}


def metric_depth(metric: str) -> int:
    """The depth a metric reads (``NDCG@10`` -> 10); a metric without one reads the whole list."""
    found = re.search(r"@(\d+)$", metric)
    return int(found.group(1)) if found else 10 ** 9


class LeaveOneFamilyOut:
    """The measurement of the module doc for one subset and its checked systems."""

    def __init__(self, full: BeirDataset, subset: BeirDataset, full_stages: Stages, output: Path, *,
                 metric: str, show_progress: bool = True, use_cache: bool = True, seed: int = 0,
                 resamples: int = fidelity.RESAMPLES, families: Families | None = None):
        self.full, self.subset, self.full_stages = full, subset, full_stages
        self.manifest: SubsetManifest = subset.subset
        self.output, self.metric = Path(output), metric
        self.show_progress, self.use_cache, self.seed, self.resamples = show_progress, use_cache, seed, resamples
        self.families = families or Families()

    def measure(self, checked: dict[str, Checked]) -> PoolBias:
        method = METHOD.format(resamples=self.resamples, seed=self.seed)
        pool_families = [self.families.of(entry.description) for entry in self.manifest.pool]
        pooled_union = frozenset().union(*pool_families) if pool_families else frozenset()
        unseen = self._unseen(checked, pooled_union)
        if not self.manifest.pool:
            return self._nobody_pooled(checked)
        try:
            cut = self._recut()
        except BeirxError as error:
            return PoolBias(method=method, families=[], expected=None, expected_family=None, expected_interval=None,
                            unseen=unseen, reproduced=None,
                            note=f"not measured: the pooling systems could not be run again ({error})")
        found, pooled, reproduced = cut
        order = list(dict.fromkeys(f for families in pool_families for f in sorted(families, key=lambda f: f.key)))
        results = [self._family(family, found, pooled, pool_families, pooled_union, checked) for family in order]
        measured = [r for r in results if r.bias is not None]
        worst = max(measured, key=lambda r: r.bias, default=None)
        note = None if reproduced else ("the cut repeated with every family does not give the subset's documents "
                                        "(the pooling systems' runs changed since the subset was cut): the re-cuts "
                                        "are approximate")
        return PoolBias(method=method, families=results, expected=worst.bias if worst else None,
                        expected_family=worst.family if worst else None,
                        expected_interval=worst.interval if worst else None, unseen=unseen, reproduced=reproduced,
                        note=note)

    # -- the re-cut --------------------------------------------------------------------------------------------
    def _recut(self):
        """The pooling systems' lists for the subset's queries, one scan of the corpus, and whether the cut with
        every family reproduces the subset."""
        from beirx.language_packs import get_pack
        from beirx.subsets.cut import gather, select
        from beirx.subsets.pool import pool_runs
        from beirx.subsets.system_args import parse_pool

        manifest, method = self.manifest, self.manifest.method
        qrels = self.full.qrels(manifest.split)
        texts = self.full.queries
        kept = {qid: texts[qid] for qid in manifest.query_ids}
        systems = parse_pool([entry.spec for entry in manifest.pool])
        pooled = pool_runs(self.full, get_pack(self.full.lang), kept, systems, method.depth, self.show_progress,
                           self.use_cache) if method.depth > 0 else []
        found = gather(self.full, kept, qrels, pooled, method.max_docs, method.seed, self.show_progress)
        again = select(found, pooled, method.depth, method.max_docs).keep
        reproduced = again == {doc.id for doc in self.subset.iter_corpus()}
        if not reproduced:
            log.warning("the cut repeated with every pooling family does not give the documents of %s: the "
                        "leave-one-family-out cuts are approximate", self.subset.root)
        return found, pooled, reproduced

    def _family(self, family: Family, found, pooled, pool_families, pooled_union, checked) -> FamilyBias:
        from beirx.subsets.cut import select

        method = self.manifest.method
        rest = [p for p, families in zip(pooled, pool_families) if family not in families]
        selection = select(found, rest, method.depth, method.max_docs)
        own = [label for label, c in checked.items() if c.families == {family}]
        others = pooled_union - {family}
        reference = [label for label, c in checked.items() if c.families and c.families <= others]
        shape = {"family": family.label, "systems": own, "reference": reference,
                 "documents": len(selection.keep), "depth_reached": selection.reached}
        if not own:
            return FamilyBias(**shape, bias=None, interval=None, change=None, reference_change=None,
                              queries=len(self.manifest.query_ids), inexact_queries=0,
                              note="no checked system is made of this family alone: check one to measure it")
        cut_scores, inexact = self._evaluate(family, selection.keep, {label: checked[label] for label in own + reference})
        full_scores = {label: checked[label].full for label in own + reference}
        figures = relative_change(full_scores, cut_scores, own, reference, resamples=self.resamples, seed=self.seed)
        note = None
        if not reference:
            note = "no other family pooled: the change is the family's own, not relative to pooled systems"
        if inexact:
            note = ((note + "; ") if note else "") + (f"{inexact} query x system runs restricted to the cut hold "
                                                      f"fewer than {metric_depth(self.metric)} of its documents "
                                                      "(the full-set runs were too shallow): raise --top-k")
        return FamilyBias(**shape, **figures, inexact_queries=inexact, note=note)

    def _evaluate(self, family: Family, keep: set[str], systems: dict[str, Checked]):
        """Per-query scores of ``systems`` on the cut holding ``keep``, written under ``output/leave-out``."""
        from beirx.data.catalogue import ignore_identical_ids_for
        from beirx.subsets.cut import write_records

        folder = self.output / "leave-out" / re.sub(r"[^A-Za-z0-9._-]+", "_", family.label)
        data = folder / "data"
        manifest = self.manifest
        write_records(self.full, data, keep, manifest.query_ids, self.full.qrels(manifest.split), manifest.split)
        cut = BeirDataset(data, name=f"{manifest.name}-without-{folder.name}", lang=self.subset.lang)
        stages = Stages(cut, self.full_stages.pack, manifest.split, self.full_stages.top_k,
                        ignore_identical_ids_for(self.full.name), self.show_progress, self.use_cache)
        restrict = Restrict(keep, set(manifest.query_ids), folder / "restricted", full_runs=self.full_stages,
                            full_documents=manifest.counts.source_documents, depth=metric_depth(self.metric),
                            tag="cut")
        scores = {}
        for label, checked in systems.items():
            outcome = evaluate_system(stages, restrict(checked.system), folder / "results")
            scores[label] = outcome.results.per_query_metric(self.metric)
        log.info("without %s: %d documents, %d systems evaluated", family.label, len(keep), len(systems))
        return scores, restrict.inexact

    def _nobody_pooled(self, checked: dict[str, Checked]) -> PoolBias:
        """Without a pool every system stands where a new one stands: beyond the judged documents the corpus is a
        uniform sample, the same for all. What is left to measure is how unevenly the cut raises the families'
        scores (a weaker system loses more documents above its relevant ones): each family's change on the
        subset itself against the systems of every other family."""
        method = ("nobody pooled: each family's systems' change (subset - full set) minus that of the systems of every "
                  f"other family, on the subset itself; 95% percentile bootstrap over queries ({self.resamples:,} "
                  f"draws, seed {self.seed})")
        families = sorted({f for c in checked.values() for f in c.families}, key=lambda f: f.label)
        results = []
        for family in families:
            own = [label for label, c in checked.items() if c.families == {family}]
            others = [label for label, c in checked.items() if c.families and family not in c.families]
            if not own or not others:
                continue
            figures = relative_change({k: v.full for k, v in checked.items()}, {k: v.subset for k, v in checked.items()},
                                      own, others, resamples=self.resamples, seed=self.seed)
            results.append(FamilyBias(family=family.label, systems=own, reference=others, **figures,
                                      documents=self.manifest.counts.documents, depth_reached=0, inexact_queries=0,
                                      cut=False))
        worst = max((r for r in results if r.bias is not None), key=lambda r: r.bias, default=None)
        return PoolBias(method=method, families=results, expected=worst.bias if worst else None,
                        expected_family=worst.family if worst else None,
                        expected_interval=worst.interval if worst else None, unseen=[], reproduced=None,
                        note="nobody pooled: no system is favoured by how the documents were chosen; the figures "
                             "are how unevenly the cut raises different families' scores")

    # -- systems that did not pool -------------------------------------------------------------------------------
    def _unseen(self, checked: dict[str, Checked], pooled_union: frozenset[Family]) -> list[SystemBias]:
        reference = [label for label, c in checked.items() if c.families and c.families <= pooled_union]
        found = []
        for label, c in checked.items():
            if not c.families or c.families <= pooled_union or not reference:
                continue
            figures = relative_change({k: v.full for k, v in checked.items()},
                                      {k: v.subset for k, v in checked.items()}, [label], reference,
                                      resamples=self.resamples, seed=self.seed)
            if figures["bias"] is not None:
                found.append(SystemBias(system=label, bias=figures["bias"], interval=figures["interval"],
                                        change=figures["change"]))
        return found
