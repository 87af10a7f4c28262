"""SciFact end to end with the embedded BM25: analyse, index, search top-1000, metrics; cold and cached.

Usage: python benchmarks/scifact_bm25.py [--scifact ../shared/data/beir/scifact] [--lang en]

Prints nDCG@10 / Recall@100 for the flat and multifield modes with beirx's defaults and for the two
Pyserini presets (published: flat 0.6789 / 0.9253, multifield 0.6647 / 0.9076; docs/bm25.md), and
per-stage wall times for a cold run (empty cache) against a second run that loads the cached index.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--lang", default="en")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as home:
        os.environ["BEIRX_HOME"] = home
        from beirx.data.dataset import BeirDataset
        from beirx.evaluate.runner import run_experiment
        from beirx.evaluate.specs import SystemSpec
        from beirx.language_packs import get_pack

        pack = get_pack(args.lang)
        print(f"dataset {args.scifact}  pack {args.lang}")
        print(f"{'system':<21}{'run':<8}{'index s':>9}{'search s':>10}{'eval s':>8}{'total s':>9}{'nDCG@10':>9}"
              f"{'R@100':>8}")
        systems = {"flat": {"fields": "flat"}, "multifield": {"fields": "multifield"},
                   "pyserini-flat": {"preset": "pyserini-flat"}, "pyserini-multifield": {"preset": "pyserini-multifield"}}
        for name, params in systems.items():
            for label in ("cold", "cached"):
                dataset = BeirDataset(args.scifact, name="scifact", lang=args.lang)
                start = time.perf_counter()
                out = run_experiment(dataset, pack, "test", SystemSpec("bm25", params),
                                     Path(home) / "results", top_k=1000, show_progress=False)
                total = time.perf_counter() - start
                t, m = out.results.timings_seconds, out.results.metrics
                print(f"{name:<21}{label:<8}{t['index']:>9.2f}{t['search']:>10.2f}{t['evaluate']:>8.2f}"
                      f"{total:>9.2f}{m['NDCG@10']:>9.4f}{m['Recall@100']:>8.4f}")


if __name__ == "__main__":
    main()
