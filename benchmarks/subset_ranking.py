"""Which subset of SciFact ranks systems like the full SciFact, and at what share of the characters?

The grid: queries (``--queries``, 300 = all judged test queries) x document budget (``--budgets``, beirx
subset's ``--max-docs``) x pooling (``--pools``) x seeds. Every subset is cut by ``beirx subset``'s own code
(:func:`beirx.subsets.cut.make_subset`, pool depth 100 shrinking to fit, seeded random fill) and every system
is scored on it by nDCG@10 per query; then, against the full set's scores:

- Kendall's tau-b and Spearman's rho, each with three percentile-bootstrap 95% intervals from the same 1,000
  draws of the subset's queries (:func:`beirx.subsets.fidelity.intervals`, the code of ``beirx subset check``):
  unpaired (against the full set's fixed means), paired (the full set's means over the same drawn queries: the
  document cut's own fidelity) and the self-ceiling (the full set's drawn means against its fixed means);
- the resolution: the smallest nDCG@10 difference the subset separates at 95% with the paired t-test of
  ``beirx report`` (:func:`beirx.significance.t_test`; the grid uses the t-test because the randomization test
  costs ~0.6 s per pair, and ``beirx subset check`` reports the randomization test for the chosen recipe);
- the swapped pairs, each as noise (on the subset or the full set) or a disagreement;
- pool bias: the systems that did not pool, their mean rank gain on the subset;
- the share of characters to translate: titles, texts and query texts kept over the full set's.

Systems: seven BM25 conventions (beirx's default = Elasticsearch multifield, flat, pyserini-flat,
pyserini-multifield, exact length norms for default and flat, flat with k1 1.5 / b 0.9), then every ``--run``
(dense multilingual-e5-small as "e5-small torch", all-MiniLM-L6-v2 as "MiniLM", SPLADE-tiny, e5-small on ONNX
Runtime int8 ...), and the fusions of the runs given: RRF of BM25 flat + e5-small, RRF of BM25 flat + MiniLM and
the arithmetic (min-max) fusion of BM25 flat + e5-small.

Why the neural systems are not run on each subset: a dense or SPLADE score is a function of the query and the
document alone (exact search, a fixed vocabulary), so a system's ranking on a subset is its full-corpus ranking
restricted to the subset's documents. Each neural system is given as its run on the full corpus ranking all
5,183 documents (``beirx eval --top-k 5183``; ``--run LABEL=PATH``), and is restricted to each subset's
documents and cut to ``beirx eval``'s depth (1,000), which is exactly what ``beirx eval`` on the subset would
write (checked once with ``beirx subset check --check dense:MINILM`` on a subset, which encodes it). BM25
depends on the corpus (IDF, average length), so each BM25 variant is indexed again on every subset; the
fusions fuse the subset's BM25 run with the restricted neural run, as the runner does.

Pooling (``--pools``, by name; ``random`` = no pool, judged documents and a random fill):
``bm25+e5`` (beirx's earlier suggestion), ``diverse`` (BM25 flat, e5-small, MiniLM: a lexical system and two
encoders), ``bm25`` (a fixed BM25 top-N candidate set, as HAKARI-Bench builds its nano sets), ``all`` (every
checked system pools, fusions too, SPLADE-tiny excepted); SPLADE-tiny pools only in ``diverse+splade``, so its
rank gain elsewhere measures pool bias (and ``diverse+splade`` the remedy of pooling from it).

Rows go to ``OUTPUT/grid.jsonl`` as they are measured (a rerun skips the cells already there); the table is
printed at the end and written to ``OUTPUT/table.md``.

Run:  nice python benchmarks/subset_ranking.py --run "e5-small torch=E5.trec" --run "e5-small ONNX int8=ONNX.trec" \\
          --run "MiniLM=MINILM.trec" --run "SPLADE-tiny=SPLADE.trec" [--queries 25 50 100 200 300]
          [--budgets 500 1000 1500 3000] [--seeds 0 1 2] [--output /tmp/subset-ranking]
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

sys.path.insert(0, str(REPO))

TOP_K = 1000
BM25 = {"BM25 default (ES multifield)": {}, "BM25 flat": {"fields": "flat"},
        "BM25 pyserini-flat": {"preset": "pyserini-flat"}, "BM25 pyserini-multifield": {"preset": "pyserini-multifield"},
        "BM25 default, exact norms": {"length_norm": "exact"},
        "BM25 flat, exact norms": {"fields": "flat", "length_norm": "exact"},
        "BM25 flat k1 1.5 b 0.9": {"fields": "flat", "k1": 1.5, "b": 0.9}}
FUSIONS = {"RRF(BM25 flat, e5)": ("rrf", "e5-small torch"), "RRF(BM25 flat, MiniLM)": ("rrf", "MiniLM"),
           "arithmetic(BM25 flat, e5)": ("arithmetic", "e5-small torch")}
POOLS = {"bm25+e5": ["BM25 flat", "e5-small torch"],
         "diverse": ["BM25 flat", "e5-small torch", "MiniLM"],
         "bm25": ["BM25 flat"], "random": [], "all": None,
         "diverse+splade": ["BM25 flat", "e5-small torch", "MiniLM", "SPLADE-tiny"]}


class TextMemo:
    """A language pack whose analyzer remembers each text's terms: the same titles and texts are analysed for
    every subset and BM25 variant, and analysing is most of a small index's cost (the terms are the pack's)."""

    def __init__(self, lang: str = "en"):
        from beirx.language_packs import get_pack

        self.pack, self.terms = get_pack(lang), {}
        analyze = self.pack.analyzer()
        self._analyze = analyze

    def analyzer(self):
        def analyze(text: str) -> list[str]:
            found = self.terms.get(text)
            if found is None:
                found = self.terms[text] = self._analyze(text)
            return list(found)
        return analyze

    def __getattr__(self, name):
        return getattr(self.pack, name)


PACKS: dict[str, TextMemo] = {}


def bm25_run(dataset, queries: dict, params: dict, depth: int, lang: str = "en") -> dict:
    from beirx.evaluate.retrievers import RETRIEVERS

    if lang not in PACKS:
        PACKS[lang] = TextMemo(lang)
    retriever = RETRIEVERS.get("bm25")(PACKS[lang], use_cache=False, show_progress=False, **params)
    retriever.index(dataset)
    return retriever.search(queries, depth)


def restrict(run: dict, queries, docs: set[str]) -> tuple[dict, int]:
    """The full-corpus run on the subset: its queries, its documents, cut to TOP_K; and how many queries have
    fewer than 10 subset documents in the run (0 = exact for nDCG@10)."""
    from beirx.evaluate.runs import ranked

    out, short = {}, 0
    for qid in queries:
        kept = [(d, s) for d, s in ranked(run.get(qid, {})) if d in docs][:TOP_K]
        short += len(kept) < min(10, len(docs))
        out[qid] = dict(kept)
    return out, short


def all_runs(dataset, queries: dict, neural: dict, docs: set[str] | None) -> tuple[dict, int]:
    """Every system's run on ``dataset`` (BM25 indexed on it; neural restricted to ``docs`` unless None)."""
    from beirx.evaluate.fusion import fuse

    runs, short = {}, 0
    for label, params in BM25.items():  # nDCG@10 needs the top 10; BM25 flat enters the fusions at full depth
        runs[label] = bm25_run(dataset, queries, params, TOP_K if label == "BM25 flat" else 10)
    for label, run in neural.items():
        if docs is None:
            runs[label] = {q: run.get(q, {}) for q in queries}
        else:
            runs[label], missing = restrict(run, queries, docs)
            short += missing
    for label, (method, other) in FUSIONS.items():  # fusions of the systems given
        if other in runs:
            runs[label] = fuse([runs["BM25 flat"], runs[other]], method)
    return runs, short


def per_query(qrels, runs: dict) -> dict[str, dict[str, float]]:
    from beirx.evaluate.metrics import evaluate

    return {label: {q: v["NDCG@10"] for q, v in evaluate(qrels, run, k_values=(10,)).per_query.items()}
            for label, run in runs.items()}


def characters(dataset, doc_ids=None, query_ids=None) -> int:
    total = 0
    for doc in dataset.iter_corpus():
        if doc_ids is None or doc.id in doc_ids:
            total += len(doc.title) + len(doc.text)
    for qid, query in dataset.queries.items():
        if query_ids is None or qid in query_ids:
            total += len(query.text)
    return total


def measure(full_scores: dict, sub_scores: dict, full_p: dict, pooled: list[str]) -> dict:
    """One subset's figures against the full set's (``full_scores``: each system's per-query scores there)."""
    import numpy as np

    from beirx.subsets.check import _ranks
    from beirx.subsets.fidelity import intervals, kendall_tau, pair_p_values, resolution, spearman_rho, verdict

    labels = list(full_scores)
    full = [float(np.mean(list(full_scores[s].values()))) for s in labels]
    sub = [float(np.mean(list(sub_scores[s].values()))) for s in labels]
    tau, _ = kendall_tau(full, sub)
    found = intervals(full, [sub_scores[s] for s in labels], [full_scores[s] for s in labels])
    sub_p = pair_p_values(sub_scores, test="t")
    means = dict(zip(labels, sub))
    resolved = resolution(means, sub_p)
    swaps = {}
    for (a, b), p in sub_p.items():
        i, j = labels.index(a), labels.index(b)
        if (full[i] - full[j]) * (sub[i] - sub[j]) < 0:
            kind = verdict(full_p[(a, b)], p)
            swaps[kind] = swaps.get(kind, 0) + 1
    full_ranks, sub_ranks = _ranks(full), _ranks(sub)
    outsiders = [i for i, s in enumerate(labels) if s not in pooled and not _fused_from(s, pooled)]
    gain = (statistics.mean(full_ranks[i] - sub_ranks[i] for i in outsiders) if outsiders and pooled else None)
    tau_pooled = None
    inside = [i for i in range(len(labels)) if i not in outsiders]
    if pooled and len(inside) >= 2:
        tau_pooled, _ = kendall_tau([full[i] for i in inside], [sub[i] for i in inside])
    return {"tau": tau, "tau_ci": found.tau_interval, "rho": spearman_rho(full, sub), "rho_ci": found.rho_interval,
            "paired_tau": found.paired_tau, "paired_tau_ci": found.paired_tau_interval,
            "paired_rho": found.paired_rho, "paired_rho_ci": found.paired_rho_interval,
            "ceiling_tau_ci": found.ceiling_tau_interval, "ceiling_rho_ci": found.ceiling_rho_interval, "tau_pooling_systems": tau_pooled,
            "resolution": resolved.smallest_separated, "largest_unresolved": resolved.largest_unresolved,
            "swaps": swaps, "outsider_rank_gain": gain, "subset_means": means,
            "subset_ranks": dict(zip(labels, sub_ranks)), "full_ranks": dict(zip(labels, full_ranks)),
            "full_means": dict(zip(labels, full))}


def _fused_from(label: str, pooled: list[str]) -> bool:
    """A fusion counts as pooled when every input pooled."""
    return label in FUSIONS and {"BM25 flat", FUSIONS[label][1]} <= set(pooled)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--run", action="append", default=[], metavar="LABEL=PATH",
                        help="a neural system's run on the full corpus, ranking every document")
    parser.add_argument("--queries", type=int, nargs="+", default=[25, 50, 100, 200, 300])
    parser.add_argument("--budgets", type=int, nargs="+", default=[500, 1000, 1500, 3000])
    parser.add_argument("--pools", nargs="+", default=list(POOLS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--output", type=Path, default=Path("/tmp/subset-ranking"))
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from beirx.data.dataset import BeirDataset
    from beirx.evaluate.runs import read_trec, write_trec
    from beirx.evaluate.specs import RunFileSpec
    from beirx.subsets.cut import make_subset
    from beirx.subsets.fidelity import pair_p_values

    full = BeirDataset(args.scifact)
    qrels = full.qrels("test")
    queries = {q: full.queries[q] for q in qrels if q in full.queries}
    args.output.mkdir(parents=True, exist_ok=True)
    neural = {label: read_trec(path) for label, path in (r.split("=", 1) for r in args.run)}
    runs, _ = all_runs(full, queries, neural, None)
    full_scores = per_query(qrels, runs)
    full_p = pair_p_values(full_scores, test="t")
    print("full set nDCG@10: " + ", ".join(f"{s} {statistics.mean(v.values()):.4f}" for s, v in full_scores.items()),
          flush=True)
    pool_files = {}
    for label, run in runs.items():
        path = args.output / "pool-runs" / f"{label.replace(' ', '_').replace('/', '_')}.trec"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_trec(path, {q: _top(d, args.depth) for q, d in run.items()})
        pool_files[label] = path
    whole_chars = characters(full)
    grid = args.output / "grid.jsonl"
    done = {(r["pool"], r["queries"], r["budget"], r["seed"]) for r in map(json.loads, grid.open())} \
        if grid.is_file() else set()
    cells = [(seed, pool_name, n, budget) for seed in args.seeds for pool_name in args.pools for n in args.queries
             for budget in args.budgets]  # seed outermost: a stopped run leaves whole grids of the first seeds
    for seed, pool_name, n, budget in cells:
        members = POOLS[pool_name] if POOLS[pool_name] is not None else [s for s in runs if s != "SPLADE-tiny"]
        if (pool_name, n, budget, seed) in done:
            continue
        started = time.time()
        folder = args.output / "subsets" / f"{pool_name}-q{n}-d{budget}-s{seed}"
        pool = {str(pool_files[m]): RunFileSpec(pool_files[m]) for m in members}
        manifest = make_subset(full, folder, queries=n, pool=pool, depth=args.depth if pool else 0,
                               max_docs=budget, seed=seed, show_progress=False)
        sub = BeirDataset(folder)
        docs = {d.id for d in sub.iter_corpus()}
        kept = {q: full.queries[q] for q in manifest.query_ids}
        sub_runs, short = all_runs(sub, kept, neural, docs)
        sub_scores = per_query(sub.qrels("test"), sub_runs)
        row = {"pool": pool_name, "queries": n, "budget": budget, "seed": seed,
               "documents": manifest.counts.documents, "judged": manifest.counts.judged,
               "pooled": manifest.counts.pooled, "random": manifest.counts.random,
               "depth_reached": manifest.method.depth_reached, "inexact_queries": short,
               "characters_share": characters(full, docs, set(kept)) / whole_chars,
               **measure(full_scores, sub_scores, full_p, members),
               "seconds": round(time.time() - started, 1)}
        with grid.open("a") as out:
            out.write(json.dumps(row) + "\n")
        print(f"{pool_name} q{n} d{budget} s{seed}: tau {row['tau']:.3f} unpaired {row['tau_ci']} paired "
              f"{row['paired_tau_ci']} ceiling {row['ceiling_tau_ci']} rho {row['rho']:.3f} resolution "
              f"{row['resolution']} chars {row['characters_share']:.1%} {row['seconds']} s", flush=True)
    table(args.output, whole_chars)
    return 0


def _top(docs: dict, depth: int) -> dict:
    from beirx.evaluate.runs import ranked

    return dict(ranked(docs)[:depth])


def table(output: Path, whole: int) -> None:
    """Mean over seeds per cell: tau (sample standard deviation and min-max over seeds), the mean bounds of its
    unpaired, paired and self-ceiling intervals, rho and its unpaired and paired intervals, resolution, the
    share of characters and what that many of the full set's ``whole`` characters cost at DeepL's list price
    (the translator's own ``estimate_cost``; ``beirx subset --cost deepl`` plans the exact billed characters of
    one subset)."""
    rows = {(r["pool"], r["queries"], r["budget"], r["seed"]): r
            for r in map(json.loads, (output / "grid.jsonl").open())}  # a cell measured twice is the same
    cells: dict[tuple, list[dict]] = {}
    for row in rows.values():
        cells.setdefault((row["pool"], row["queries"], row["budget"]), []).append(row)
    from beirx.translate.backends.deepl import DeepLTranslator

    lines = ["| pool | queries | docs | seeds | depth | chars | DeepL USD | tau mean ± sd (seeds min-max) | tau CI "
             "unpaired | tau CI paired | tau CI self-ceiling | rho | rho CI unpaired | rho CI paired | tau pooling "
             "systems | resolution | swaps: noise / disagreement |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def ci(key, group):
        found = [r[key] for r in group if r.get(key)]
        if not found:
            return "-"
        return f"[{statistics.mean(b[0] for b in found):.3f}, {statistics.mean(b[1] for b in found):.3f}]"

    def mean(key, group):
        values = [r[key] for r in group if r[key] is not None]
        return statistics.mean(values) if values else None

    def show(value, fmt="{:.3f}"):
        return "-" if value is None else fmt.format(value)

    for (pool, n, budget), group in sorted(cells.items(), key=lambda kv: (list(POOLS).index(kv[0][0]), kv[0][1],
                                                                          kv[0][2])):
        taus = [r["tau"] for r in group]
        noise = sum(v for r in group for k, v in r["swaps"].items() if k != "disagreement") / len(group)
        real = sum(r["swaps"].get("disagreement", 0) for r in group) / len(group)
        usd = DeepLTranslator.estimate_cost(round(mean("characters_share", group) * whole))["estimated_cost_usd"]
        spread = f" ± {statistics.stdev(taus):.3f}" if len(taus) > 1 else ""
        lines.append(f"| {pool} | {n} | {budget:,} | {len(group)} | {show(mean('depth_reached', group), '{:.0f}')} | "
                     f"{mean('characters_share', group):.1%} | {usd:.2f} | {statistics.mean(taus):.3f}{spread} "
                     f"({min(taus):.3f}-{max(taus):.3f}) | {ci('tau_ci', group)} | {ci('paired_tau_ci', group)} | "
                     f"{ci('ceiling_tau_ci', group)} | {show(mean('rho', group))} | {ci('rho_ci', group)} | "
                     f"{ci('paired_rho_ci', group)} | {show(mean('tau_pooling_systems', group))} | "
                     f"{show(mean('resolution', group), '{:.4f}')} | {noise:.1f} / {real:.1f} |")
    text = "\n".join(lines) + "\n\n" + bias(rows.values())
    (output / "table.md").write_text(text + "\n", encoding="utf-8")
    print(text)


def bias(rows) -> str:
    """Pool bias: per pool, each neural system's mean rank gain (full rank - subset rank) and mean nDCG@10 change
    on the subset minus the pooling systems' mean change, split by whether it pooled."""
    lines = ["| pool | system | pooled | rank gain | nDCG@10 change vs pooling systems' | subsets |", "|---|---|---|---|---|---|"]
    by_pool: dict[str, list[dict]] = {}
    for row in rows:
        if "full_ranks" in row and row["pool"] != "random":
            by_pool.setdefault(row["pool"], []).append(row)
    for pool, group in sorted(by_pool.items(), key=lambda kv: list(POOLS).index(kv[0])):
        members = POOLS[pool] or [s for s in group[0]["full_ranks"] if s != "SPLADE-tiny"]
        for system in ("SPLADE-tiny", "MiniLM", "e5-small torch", "e5-small ONNX int8", "RRF(BM25 flat, MiniLM)"):
            if system not in group[0]["full_ranks"]:
                continue
            gains = [r["full_ranks"][system] - r["subset_ranks"][system] for r in group]
            shifts = []
            for r in group:
                inside = [m for m in members if m != system]
                base = statistics.mean(r["subset_means"][m] - r["full_means"][m] for m in inside)
                shifts.append(r["subset_means"][system] - r["full_means"][system] - base)
            pooled = "yes" if system in members or _fused_from(system, members) else "no"
            lines.append(f"| {pool} | {system} | {pooled} | {statistics.mean(gains):+.2f} | "
                         f"{statistics.mean(shifts):+.4f} | {len(group)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
