"""Is a subset fair to the systems that did not pool, and which recipe makes it so?

For each recipe (pooling systems, corpus budget, pool depth, a depth floor that trades queries for depth, or a
larger random fill) and seed, a subset is cut by ``beirx subset``'s own code (the query sample of
:func:`beirx.subsets.query_sample.sample_queries`, then :func:`beirx.subsets.cut.gather` and
:func:`~beirx.subsets.cut.select`: judged + pooled at the depth that fits + seeded random fill), every system is
scored on it by nDCG@10 per query, and against the full set's scores:

- fidelity: Kendall's tau with its unpaired, paired and self-ceiling bootstrap intervals, Spearman's rho, the
  resolution (smallest difference separated at 95%), and discriminative power (Sakai 2006): of the pairs the
  full set separates at 95%, the share the subset separates in the same order and the count it reverses;
  the paired test is ``--test`` (``permutation``: ``beirx subset check``'s randomization test, 10,000 sign
  flips; ``t``: the paired t-test, ~100x faster);
- pool bias by leave-one-family-out (:mod:`beirx.subsets.reusability`, the code of ``beirx subset check``):
  for each pooling family, the subset cut again without it (same queries, seed, depth and budget), and the
  family's systems' nDCG@10 change against the systems whose families still pooled, with a bootstrap interval;
  the checked systems of families that never pooled are measured on the subset itself ("unseen");
- the estimate of full-corpus nDCG@10 from the random fill (:mod:`beirx.subsets.estimate`): for every system
  whose family was left out, its estimate against its true full-corpus nDCG@10 over the same queries;
- the share of characters to translate (titles, texts and query texts kept over the full set's).

Systems: the seven BM25 conventions of ``benchmarks/subset_ranking.py`` (indexed again on every cut: BM25
depends on the corpus), every ``--run LABEL=PATH`` (a run on the full corpus ranking every document; on a cut
it is restricted to the cut's documents, which is exact for a dense or SPLADE score), the fusions of
:data:`FUSIONS` whose inputs are given, and dense rerankers of BM25 flat's top 100 (:data:`RERANKERS`: the
candidates re-ordered by an encoder's score, a bi-encoder reranker, not trained on SciFact). Families
(:mod:`beirx.subsets.families`): lexical for BM25, and each run's from the ``beirx eval`` results document
beside it; a fusion or reranker is made of its inputs' families.

Recipes (:data:`RECIPES`) name their pooling systems by label; rows go to ``OUTPUT/rows.jsonl`` as they are
measured (a rerun skips the (setting, recipe, seed) cells already there), and the tables to
``OUTPUT/table.md``.

Run:  nice python benchmarks/subset_reusability.py --dataset ../shared/data/beir/scifact --lang en --split test \\
          --run "e5-small=RUNS/en-test/e5-small.trec" --run "MiniLM=RUNS/en-test/minilm.trec" ... \\
          --recipes bm25+e5 bm25+e5+use ... [--seeds 0 1 2] [--test permutation] [--output /tmp/subset-reusability]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import REPO, SCIFACT  # noqa: E402
from subset_ranking import BM25, bm25_run, characters, per_query  # noqa: E402

sys.path.insert(0, str(REPO))

TOP_K = 1000
RERANK_DEPTH = 100
LADDER = [1000, 800, 600, 400, 300, 250, 200, 150, 100, 75, 50, 25]
"""Query counts a depth floor tries, largest first (capped at the split's judged queries)."""
FUSIONS = [("RRF(BM25 flat, e5-small)", "rrf", ["BM25 flat", "e5-small"]),
           ("arithmetic(BM25 flat, e5-small)", "arithmetic", ["BM25 flat", "e5-small"]),
           ("RRF(BM25 flat, MiniLM)", "rrf", ["BM25 flat", "MiniLM"]),
           ("RRF(BM25 flat, USE)", "rrf", ["BM25 flat", "USE"]),
           ("RRF(BM25 flat, SPLADE-tiny)", "rrf", ["BM25 flat", "SPLADE-tiny"]),
           ("RRF(e5-small, USE)", "rrf", ["e5-small", "USE"])]
RERANKERS = [("BM25 flat >> MiniLM", "MiniLM"), ("BM25 flat >> e5-small", "e5-small"), ("BM25 flat >> USE", "USE")]
MULTILINGUAL = ["BM25 flat", "e5-small", "USE"]
RECIPES = {
    "bm25+e5": {"pool": ["BM25 flat", "e5-small"]},
    "bm25+use": {"pool": ["BM25 flat", "USE"]},
    "bm25+e5+use": {"pool": MULTILINGUAL},
    "bm25x2+e5+use": {"pool": ["BM25 flat", "BM25 default (ES multifield)", "e5-small", "USE"]},
    "bm25+e5+use+splade": {"pool": MULTILINGUAL + ["SPLADE-tiny"]},
    "bm25+e5+use+splade+minilm": {"pool": MULTILINGUAL + ["SPLADE-tiny", "MiniLM"]},
    "bm25+e5+use@1000": {"pool": MULTILINGUAL, "docs": 1000},
    "bm25+e5+use@3000": {"pool": MULTILINGUAL, "docs": 3000},
    "bm25+e5+use floor5": {"pool": MULTILINGUAL, "floor": 5},
    "bm25+e5+use floor10": {"pool": MULTILINGUAL, "floor": 10},
    "bm25+e5+use depth2+fill": {"pool": MULTILINGUAL, "depth": 2},  # the pool at most 2 deep, a larger fill
    "bm25+e5+use depth1+fill": {"pool": MULTILINGUAL, "depth": 1},
    "bm25+e5 depth1+fill": {"pool": ["BM25 flat", "e5-small"], "depth": 1},
    "bm25+e5 depth2+fill": {"pool": ["BM25 flat", "e5-small"], "depth": 2},
    "bm25+e5+splade": {"pool": ["BM25 flat", "e5-small", "SPLADE-tiny"]},
    "bm25+e5+minilm": {"pool": ["BM25 flat", "e5-small", "MiniLM"]},
    "bm25+e5+minilm+splade": {"pool": ["BM25 flat", "e5-small", "MiniLM", "SPLADE-tiny"]},
    "bm25+e5+minilm+splade depth1+fill": {"pool": ["BM25 flat", "e5-small", "MiniLM", "SPLADE-tiny"], "depth": 1},
    "bm25+e5 floor10": {"pool": ["BM25 flat", "e5-small"], "floor": 10},
    "random": {"pool": []},
    "random@1000": {"pool": [], "docs": 1000},
}
"""Defaults: 1,500 documents, pool depth 100 shrinking to fit, every judged query up to 1,000."""


# -- systems -------------------------------------------------------------------------------------------------------

class ScoreMatrix:
    """A run ranking every document, as a (queries x documents) score matrix (-inf: not ranked): a few MB where
    the same run as nested dicts would take hundreds, and restricting it to a cut is a column mask."""

    def __init__(self, path: Path, doc_index: dict[str, int]):
        import numpy as np
        import pandas as pd

        table = pd.read_csv(path, sep=r"\s+", header=None, usecols=[0, 2, 4], names=["q", "d", "s"],
                            dtype={"q": str, "d": str, "s": np.float64}, engine="c")
        self.qids = list(dict.fromkeys(table["q"]))
        row = {q: i for i, q in enumerate(self.qids)}
        self.row = row
        self.doc_ids = list(doc_index)
        self.scores = np.full((len(self.qids), len(doc_index)), -np.inf)
        self.scores[table["q"].map(row).to_numpy(), table["d"].map(doc_index).to_numpy()] = table["s"].to_numpy()

    def run(self, queries, columns, depth: int = TOP_K) -> dict:
        """The top ``depth`` of ``columns`` (document indices) for ``queries``, as a beirx run."""
        import numpy as np

        found = {}
        ids = [self.doc_ids[c] for c in columns]
        for q in queries:
            row = self.scores[self.row[q], columns] if q in self.row else np.full(len(columns), -np.inf)
            top = np.argsort(-row, kind="stable")[:depth]
            found[q] = {ids[i]: float(row[i]) for i in top if row[i] > -np.inf}
        return found

    def score(self, q: str, doc: int) -> float:
        return float(self.scores[self.row[q], doc]) if q in self.row else float("-inf")


class Systems:
    """Every system's run on a corpus (the full one or a cut) and what families it is made of."""

    def __init__(self, full, lang: str, split: str, runs: dict[str, Path]):
        from beirx.subsets.families import Families, Family

        self.full, self.lang, self.split = full, lang, split
        self.doc_index = {doc.id: i for i, doc in enumerate(full.iter_corpus())}
        self.neural = {label: ScoreMatrix(path, self.doc_index) for label, path in runs.items()}
        families = Families()
        lexical = frozenset({Family("lexical", "lexical")})
        self.families = {label: lexical for label in BM25}
        named: dict[str, Family] = {}  # a model family shown by the first run's label (a folder may be "model")
        for label, path in runs.items():
            (found,) = families.of({"retriever": "run_file", "path": str(path)})
            kind = found.label.rsplit(" ", 1)[0]
            named.setdefault(found.key, Family(found.key, f"{kind} {label}"))
            self.families[label] = frozenset({named[found.key]})
        for label, _, inputs in FUSIONS:
            if all(i in self.families for i in inputs):
                self.families[label] = frozenset().union(*(self.families[i] for i in inputs))
        for label, scorer in RERANKERS:
            if scorer in self.families:
                self.families[label] = lexical | self.families[scorer]
        self.labels = list(self.families)

    def runs(self, dataset, queries: dict, docs: set[str] | None, only: list[str] | None = None) -> dict:
        """The runs of ``only`` (default every system) on ``dataset`` (``docs``: its documents, None for the
        full corpus); a run file is restricted to the documents and cut to beirx eval's depth (1,000)."""
        from beirx.evaluate.fusion import fuse
        from beirx.evaluate.runs import ranked

        wanted = set(only or self.labels)
        needed = set(wanted)
        for label, _, inputs in FUSIONS:
            if label in wanted:
                needed |= set(inputs)
        if any(label in wanted for label, _ in RERANKERS):
            needed.add("BM25 flat")
        columns = sorted(self.doc_index.values()) if docs is None else sorted(self.doc_index[d] for d in docs)
        runs = {}
        for label, params in BM25.items():
            if label in needed:
                runs[label] = bm25_run(dataset, queries, params, TOP_K if label == "BM25 flat" else 10, self.lang)
        for label, matrix in self.neural.items():
            if label in needed:
                runs[label] = matrix.run(queries, columns)
        for label, method, inputs in FUSIONS:
            if label in wanted:
                runs[label] = fuse([runs[i] for i in inputs], method)
        for label, scorer in RERANKERS:
            if label in wanted:  # the first stage's top 100, ordered by the encoder's own scores
                matrix = self.neural[scorer]
                runs[label] = {q: {d: matrix.score(q, self.doc_index[d])
                                   for d, _ in ranked(runs["BM25 flat"].get(q, {}))[:RERANK_DEPTH]} for q in queries}
        return {label: runs[label] for label in self.labels if label in wanted}


# -- one cut -------------------------------------------------------------------------------------------------------

def pooled_lists(members: list[str], full_runs: dict, queries: dict, depth: int):
    from beirx.artifacts.subset import PoolSystem
    from beirx.evaluate.runs import ranked
    from beirx.subsets.pool import Pooled

    return [Pooled(PoolSystem(spec=m, label=m, description={}),
                   {q: [d for d, _ in ranked(full_runs[m].get(q, {}))][:depth] for q in queries}) for m in members]


def choose_queries(qrels, split_queries: dict, n: int | None, seed: int) -> dict:
    from beirx.subsets.query_sample import sample_queries
    from beirx.subsets.recipe import QUERY_CAP

    chosen = sample_queries(qrels, set(split_queries), QUERY_CAP if n is None else n, seed, cap=n is None)
    return {q: split_queries[q] for q in chosen.kept}


def cut(systems: Systems, recipe: dict, full_runs: dict, split_queries: dict, qrels, seed: int):
    """The recipe's queries, pooled lists, corpus scan and selection (a depth floor tries fewer queries until
    the depth reached is at least the floor)."""
    from beirx.subsets.cut import gather, select

    depth, budget = recipe.get("depth", 100), recipe.get("docs", 1500)
    ladder = [None] + [n for n in LADDER if n < len(split_queries)] if recipe.get("floor") else [recipe.get("queries")]
    for n in ladder:
        kept = choose_queries(qrels, split_queries, n, seed)
        pooled = pooled_lists(recipe["pool"], full_runs, kept, depth)
        found = gather(systems.full, kept, qrels, pooled, budget, seed)
        selection = select(found, pooled, depth, budget)
        if not recipe.get("floor") or selection.reached >= recipe["floor"]:
            break
    return kept, pooled, found, selection


def write_cut(full, folder: Path, keep: set[str], kept: dict, qrels, split: str):
    from beirx.data.dataset import BeirDataset
    from beirx.subsets.cut import write_records

    write_records(full, folder, keep, list(kept), qrels, split)
    return BeirDataset(folder, lang=full.lang)


# -- figures ------------------------------------------------------------------------------------------------------

def fidelity_figures(full_scores: dict, sub_scores: dict, full_p: dict, test: str) -> dict:
    import numpy as np

    from beirx.subsets.fidelity import (discriminative_power, intervals, kendall_tau, pair_p_values, resolution,
                                        spearman_rho, verdict)

    labels = list(sub_scores)
    full = [float(np.mean(list(full_scores[s].values()))) for s in labels]
    sub = [float(np.mean(list(sub_scores[s].values()))) for s in labels]
    tau, _ = kendall_tau(full, sub)
    found = intervals(full, [sub_scores[s] for s in labels], [full_scores[s] for s in labels])
    sub_p = pair_p_values(sub_scores, test=test)
    resolved = resolution(dict(zip(labels, sub)), sub_p)
    power = discriminative_power(dict(zip(labels, full)), dict(zip(labels, sub)), full_p, sub_p)
    swaps: dict[str, int] = {}
    for (a, b), p in sub_p.items():
        i, j = labels.index(a), labels.index(b)
        if (full[i] - full[j]) * (sub[i] - sub[j]) < 0:
            kind = verdict(full_p[(a, b)], p)
            swaps[kind] = swaps.get(kind, 0) + 1
    return {"tau": tau, "tau_ci": found.tau_interval, "paired_tau": found.paired_tau,
            "paired_tau_ci": found.paired_tau_interval, "ceiling_tau_ci": found.ceiling_tau_interval,
            "rho": spearman_rho(full, sub), "paired_rho_ci": found.paired_rho_interval,
            "resolution": resolved.smallest_separated, "largest_unresolved": resolved.largest_unresolved,
            "power": {"full_separated": power.full_separated, "same_order": power.same_order,
                      "retained": power.retained, "reversals": power.reversals, "subset_only": power.subset_only,
                      "pairs": power.pairs},
            "swaps": swaps, "full_means": dict(zip(labels, full)), "subset_means": dict(zip(labels, sub))}


def estimates(systems_runs: dict, qrels, full_scores: dict, fill: set[str], probability: float | None,
              unpooled: int) -> dict:
    """Per system: the estimates of its full-corpus nDCG@10 (plug-in ranks and empirical Bayes), each minus the
    true full-corpus nDCG@10 over the same queries, with their bootstrap intervals and whether they cover it."""
    from beirx.subsets.estimate import empirical_bayes_ndcg, estimated_ndcg
    from beirx.subsets.fidelity import mean_interval

    found = {}
    if probability is None:
        return found
    for label, run in systems_runs.items():
        truth = statistics.mean(full_scores[label][q] for q in qrels)
        entry = {"truth": truth}
        for name, per_query_estimate in (("plugin", estimated_ndcg(qrels, run, fill, probability)),
                                         ("eb", empirical_bayes_ndcg(qrels, run, fill, probability, unpooled))):
            values = [per_query_estimate[q] for q in qrels if q in per_query_estimate]
            interval = mean_interval(values)
            entry[name] = {"error": statistics.mean(values) - truth, "interval": list(interval) if interval else None,
                           "covers": bool(interval and interval[0] <= truth <= interval[1])}
        entry["estimate_error"], entry["covers"] = entry["eb"]["error"], entry["eb"]["covers"]
        found[label] = entry
    return found


def measure_cell(systems: Systems, setting: str, name: str, recipe: dict, seed: int, full_runs: dict,
                 full_scores: dict, full_p: dict, split_queries: dict, qrels, whole_chars: int, work: Path,
                 test: str) -> dict:
    from beirx.subsets.estimate import fill_probability
    from beirx.subsets.reusability import relative_change

    started = time.time()
    kept, pooled, found, selection = cut(systems, recipe, full_runs, split_queries, qrels, seed)
    folder = work / f"{setting}-{name}-s{seed}".replace(" ", "_").replace("+", "-")
    sub = write_cut(systems.full, folder / "subset", selection.keep, kept, qrels, systems.split)
    sub_qrels = {q: qrels[q] for q in kept}
    sub_runs = systems.runs(sub, kept, selection.keep)
    sub_scores = per_query(sub_qrels, sub_runs)
    full_on_kept = {label: {q: scores[q] for q in kept} for label, scores in full_scores.items()}
    row = {"setting": setting, "recipe": name, "seed": seed, "queries": len(kept), "documents": len(selection.keep),
           "judged": len(found.judged), "pooled": len(selection.pooled), "random": len(selection.fill),
           "depth_reached": selection.reached if recipe["pool"] else 0,
           "characters_share": characters(systems.full, selection.keep, set(kept)) / whole_chars,
           **fidelity_figures(full_scores, sub_scores, full_p, test)}
    total = sum(1 for _ in systems.full.iter_corpus())
    probability = fill_probability(total, len(found.judged), len(selection.pooled), len(selection.fill))
    row["fill_probability"] = probability
    pool_families = frozenset().union(*(systems.families[m] for m in recipe["pool"])) if recipe["pool"] else frozenset()
    seen = [s for s in systems.labels if systems.families[s] <= pool_families] if pool_families else []
    unseen = [s for s in systems.labels if not systems.families[s] <= pool_families]
    row["unseen"] = {}
    for label in unseen:
        if seen:
            figures = relative_change(full_on_kept, sub_scores, [label], seen)
            row["unseen"][label] = {k: figures[k] for k in ("bias", "interval", "change", "reference_change")}
    row["estimates"] = estimates({s: sub_runs[s] for s in unseen}, sub_qrels, full_scores, selection.fill,
                                 probability, total - len(found.judged) - len(selection.pooled))
    if not pool_families:  # nobody pooled: each family's change against every other family's systems
        row["by_family"] = []
        for family in sorted({f for s in systems.labels for f in systems.families[s]}, key=lambda f: f.label):
            own = [s for s in systems.labels if systems.families[s] == {family}]
            others = [s for s in systems.labels if family not in systems.families[s]]
            figures = relative_change(full_on_kept, sub_scores, own, others)
            row["by_family"].append({"family": family.label, "own": own, "reference": others,
                                     **{k: figures[k] for k in ("bias", "interval", "change", "reference_change")}})
    row["lofo"] = []
    from beirx.subsets.cut import select

    for family in sorted(pool_families, key=lambda f: f.label):
        rest = [p for p, m in zip(pooled, recipe["pool"]) if family not in systems.families[m]]
        left = select(found, rest, recipe.get("depth", 100), recipe.get("docs", 1500))
        own = [s for s in systems.labels if systems.families[s] == {family}]
        reference = [s for s in systems.labels if systems.families[s] and systems.families[s] <= pool_families - {family}]
        if not own:
            continue
        data = write_cut(systems.full, folder / f"without-{family.label}".replace(" ", "_"), left.keep, kept, qrels,
                         systems.split)
        cut_runs = systems.runs(data, kept, left.keep, own + reference)
        cut_scores = per_query(sub_qrels, cut_runs)
        figures = relative_change(full_on_kept, cut_scores, own, reference)
        p_left = fill_probability(total, len(found.judged), len(left.pooled), len(left.fill))
        row["lofo"].append({"family": family.label, "own": own, "reference": reference,
                            "documents": len(left.keep), "depth_reached": left.reached if rest else 0,
                            **{k: figures[k] for k in ("bias", "interval", "change", "reference_change")},
                            "own_changes": {s: statistics.mean(cut_scores[s][q] - full_scores[s][q] for q in kept)
                                            for s in own},
                            "estimates": estimates({s: cut_runs[s] for s in own}, sub_qrels, full_scores, left.fill,
                                                   p_left, total - len(found.judged) - len(left.pooled))})
    row["seconds"] = round(time.time() - started, 1)
    return row


# -- tables -------------------------------------------------------------------------------------------------------

def estimate_cell(errors: list[dict]) -> str:
    """Mean error of the plug-in and empirical-Bayes estimates, and how often the latter's interval covers the
    truth."""
    if not errors or "eb" not in errors[0]:
        return "-"
    plugin = statistics.mean(e["plugin"]["error"] for e in errors)
    eb = statistics.mean(e["eb"]["error"] for e in errors)
    width = statistics.mean(e["eb"]["interval"][1] - e["eb"]["interval"][0] for e in errors)
    return f"{plugin:+.4f} / {eb:+.4f} ({sum(e['eb']['covers'] for e in errors)}/{len(errors)}, width {width:.3f})"


def tables(rows: list[dict]) -> str:
    """Per (setting, recipe): means over seeds."""
    cells: dict[tuple, list[dict]] = {}
    for row in rows:
        cells.setdefault((row["setting"], row["recipe"]), []).append(row)

    def mean(values):
        values = [v for v in values if v is not None]
        return statistics.mean(values) if values else None

    def show(value, fmt="{:.3f}"):
        return "-" if value is None else fmt.format(value)

    def ci(bounds_list):
        bounds_list = [b for b in bounds_list if b]
        if not bounds_list:
            return "-"
        return f"[{mean(b[0] for b in bounds_list):+.4f}, {mean(b[1] for b in bounds_list):+.4f}]"

    lines = ["| setting | recipe | seeds | queries | docs | depth | random | chars | tau | tau CI paired | resolution | "
             "power retained | reversals | worst LOFO bias (family) | LOFO bias, mean of families | unseen bias "
             "(systems) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (setting, recipe), group in cells.items():
        families = sorted({f["family"] for r in group for f in r["lofo"]})
        per_family = {f: mean(x["bias"] for r in group for x in r["lofo"] if x["family"] == f) for f in families}
        worst = max(per_family.items(), key=lambda kv: kv[1] if kv[1] is not None else -1, default=(None, None))
        unseen = sorted({s for r in group for s in r["unseen"]})
        unseen_bias = mean(r["unseen"][s]["bias"] for r in group for s in r["unseen"])
        power = mean(r["power"]["retained"] for r in group)
        lines.append(
            f"| {setting} | {recipe} | {len(group)} | {show(mean(r['queries'] for r in group), '{:.0f}')} | "
            f"{show(mean(r['documents'] for r in group), '{:.0f}')} | "
            f"{show(mean(r['depth_reached'] for r in group), '{:.1f}')} | "
            f"{show(mean(r['random'] for r in group), '{:.0f}')} | {mean(r['characters_share'] for r in group):.1%} | "
            f"{show(mean(r['tau'] for r in group))} | "
            f"{ci([r['paired_tau_ci'] for r in group]).replace('+', '')} | "
            f"{show(mean(r['resolution'] for r in group), '{:.4f}')} | {show(power, '{:.0%}')} | "
            f"{show(mean(r['power']['reversals'] for r in group), '{:.1f}')} | "
            f"{show(worst[1], '{:+.4f}')} ({worst[0]}) | {show(mean(per_family.values()), '{:+.4f}')} | "
            f"{show(unseen_bias, '{:+.4f}')} ({len(unseen)}) |")
    lines += ["", "| setting | recipe | family left out | systems | reference | bias [95% CI] | own change | "
                  "reference change | depth | docs | estimate error: plug-in / EB (EB covers, width) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (setting, recipe), group in cells.items():
        families = sorted({f["family"] for r in group for f in r["lofo"]})
        for family in families:
            entries = [x for r in group for x in r["lofo"] if x["family"] == family]
            errors = [e for x in entries for e in x["estimates"].values()]
            estimate = estimate_cell(errors)
            lines.append(f"| {setting} | {recipe} | {family} | {len(entries[0]['own'])} | "
                         f"{len(entries[0]['reference'])} | {show(mean(x['bias'] for x in entries), '{:+.4f}')} "
                         f"{ci([x['interval'] for x in entries])} | "
                         f"{show(mean(x['change'] for x in entries), '{:+.4f}')} | "
                         f"{show(mean(x['reference_change'] for x in entries), '{:+.4f}')} | "
                         f"{show(mean(x['depth_reached'] for x in entries), '{:.1f}')} | "
                         f"{show(mean(x['documents'] for x in entries), '{:.0f}')} | {estimate} |")
        for family in sorted({f["family"] for r in group for f in r.get("by_family", [])}):
            entries = [x for r in group for x in r.get("by_family", []) if x["family"] == family]
            errors = [r["estimates"][s] for r in group for x in r.get("by_family", []) if x["family"] == family
                      for s in x["own"] if s in r["estimates"]]
            estimate = estimate_cell(errors)
            lines.append(f"| {setting} | {recipe} | {family} (nobody pooled: against every other family) | "
                         f"{len(entries[0]['own'])} | {len(entries[0]['reference'])} | "
                         f"{show(mean(x['bias'] for x in entries), '{:+.4f}')} {ci([x['interval'] for x in entries])} | "
                         f"{show(mean(x['change'] for x in entries), '{:+.4f}')} | "
                         f"{show(mean(x['reference_change'] for x in entries), '{:+.4f}')} | - | - | {estimate} |")
        unseen = sorted({s for r in group for s in r["unseen"]})
        for system in unseen:
            entries = [r["unseen"][system] for r in group if system in r["unseen"]]
            errors = [r["estimates"][system] for r in group if system in r.get("estimates", {})]
            estimate = estimate_cell(errors)
            lines.append(f"| {setting} | {recipe} | {system} (did not pool) | 1 | - | "
                         f"{show(mean(x['bias'] for x in entries), '{:+.4f}')} {ci([x['interval'] for x in entries])} | "
                         f"{show(mean(x['change'] for x in entries), '{:+.4f}')} | "
                         f"{show(mean(x['reference_change'] for x in entries), '{:+.4f}')} | - | - | {estimate} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--lang", default="en")
    parser.add_argument("--split", default="test")
    parser.add_argument("--run", action="append", default=[], metavar="LABEL=PATH",
                        help="a system's run on the full corpus, ranking every document")
    parser.add_argument("--recipes", nargs="+", default=["bm25+e5", "bm25+e5+use"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--test", choices=("permutation", "t"), default="permutation")
    parser.add_argument("--output", type=Path, default=Path("/tmp/subset-reusability"))
    parser.add_argument("--table-only", action="store_true", help="print the tables of the rows measured so far")
    args = parser.parse_args()
    rows_path = args.output / "rows.jsonl"
    if args.table_only:
        print(tables([json.loads(line) for line in rows_path.open()]))
        return 0
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from beirx.data.dataset import BeirDataset
    from beirx.subsets.fidelity import pair_p_values

    setting = f"{args.lang}-{args.split}"
    full = BeirDataset(args.dataset, lang=args.lang)
    qrels = full.qrels(args.split)
    split_queries = {q: full.queries[q] for q in qrels if q in full.queries}
    systems = Systems(full, args.lang, args.split, {label: Path(path) for label, path in
                                                    (r.split("=", 1) for r in args.run)})
    args.output.mkdir(parents=True, exist_ok=True)
    done = {(r["setting"], r["recipe"], r["seed"]) for r in map(json.loads, rows_path.open())} \
        if rows_path.is_file() else set()
    cells = [(name, seed) for seed in args.seeds for name in args.recipes if (setting, name, seed) not in done]
    for name, _ in cells:
        missing = [m for m in RECIPES[name]["pool"] if m not in systems.families]
        if missing:
            raise SystemExit(f"recipe {name} pools {missing}: give their runs (--run LABEL=PATH)")
    if not cells:
        print(tables([json.loads(line) for line in rows_path.open()]))
        return 0
    full_runs = systems.runs(full, split_queries, None)
    full_scores = per_query(qrels, full_runs)
    print(f"{setting} full set nDCG@10 ({len(full_scores)} systems, families "
          f"{sorted({f.label for fs in systems.families.values() for f in fs})}): "
          + ", ".join(f"{s} {statistics.mean(v.values()):.4f}" for s, v in full_scores.items()), flush=True)
    full_p = pair_p_values(full_scores, test=args.test)
    whole_chars = characters(full)
    for name, seed in cells:
        row = measure_cell(systems, setting, name, RECIPES[name], seed, full_runs, full_scores, full_p, split_queries,
                           qrels, whole_chars, args.output / "cuts", args.test)
        with rows_path.open("a") as out:
            out.write(json.dumps(row) + "\n")
        worst = max((x for x in row["lofo"] if x["bias"] is not None), key=lambda x: x["bias"], default=None)
        print(f"{setting} {name} s{seed}: {row['queries']} q, {row['documents']} docs, depth {row['depth_reached']}, "
              f"chars {row['characters_share']:.1%}, tau {row['tau']:.3f}, resolution {row['resolution']}, power "
              f"{row['power']['retained']}, reversals {row['power']['reversals']}, worst LOFO "
              f"{worst and (worst['family'], round(worst['bias'], 4))}, {row['seconds']} s", flush=True)
    text = tables([json.loads(line) for line in rows_path.open()])
    (args.output / "table.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
