"""Peak memory of ``beirx subset`` against the corpus size: the corpus is streamed, so memory must not grow with it.

The synthetic corpus of ``benchmarks/translate_memory.py`` (documents of ~100 words, 50 judged queries) is
generated once at the smallest ``--docs`` size; larger sizes repeat its documents under new IDs (the corpus is
streamed, so only its size matters, and copying is minutes faster than generating). Each corpus gets
``--pools`` pooling run files (top 100 of 50 queries each, drawn seeded from the whole corpus: one per pooling
family of the recipe); each measurement is a fresh child process cutting a 50-query subset pooled from those
runs with ``--max-docs`` documents (judged + pool + random fill; default: the default recipe's budget) and then,
as ``beirx subset check`` does for its pool bias, scanning the corpus once more for every pooling list
(:func:`beirx.subsets.cut.gather`) and selecting the cut without each family in turn
(:func:`~beirx.subsets.cut.select`). Its peak RSS (``wait4`` ru_maxrss) and CPU seconds are reported. Target:
the ratio of the largest to the smallest corpus's peak <= 1.2 (memory holds the pool and at most ``--max-docs``
fill candidates, never the corpus).

Run:  nice python benchmarks/subset_memory.py [--docs 200000 1000000] [--max-docs 1500] [--pools 3]
      [--work /tmp/beirx-translate-memory]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from translate_memory import ROOT, generate  # noqa: E402  (the same corpora, generated once)


def replicate(small: Path, root: Path, docs: int) -> Path:
    """``docs`` documents: those of ``small`` repeated under new IDs (``d{i + k * len(small)}``), same queries and
    qrels; written once, streamed (the children are forked from this process, and a child's peak RSS counts what
    it shares with its parent before it execs, so the parent must stay small)."""
    if (root / "qrels" / "test.tsv").is_file():
        return root
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    written = 0
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        while written < docs:
            with open(small / "corpus.jsonl", encoding="utf-8") as source:
                for line in source:
                    if written == docs:
                        break
                    record = json.loads(line)
                    record["_id"] = f"d{written}"
                    fh.write(json.dumps(record) + "\n")
                    written += 1
    for name in ("queries.jsonl", "qrels/test.tsv"):
        (root / name).write_bytes((small / name).read_bytes())
    return root


def pool_run(data: Path, docs: int, index: int, depth: int = 100) -> Path:
    path = data / ("pool.trec" if index == 0 else f"pool-{index}.trec")
    if not path.is_file():
        rng = random.Random(7 + index)
        with open(path, "w", encoding="utf-8") as fh:
            for q in range(50):
                for rank, d in enumerate(rng.sample(range(docs), depth), 1):
                    fh.write(f"q{q} Q0 d{d} {rank} {depth - rank + 1} pool\n")
    return path


def child(data: Path, out: Path, max_docs: int, pools: int) -> None:
    from beirx.data.dataset import BeirDataset
    from beirx.language_packs import get_pack
    from beirx.subsets.cut import gather, make_subset, select
    from beirx.subsets.pool import pool_runs
    from beirx.subsets.system_args import parse_pool

    dataset = BeirDataset(data)
    pool = parse_pool([str(pool_run(data, 0, i)) for i in range(pools)])
    manifest = make_subset(dataset, out, queries=50, pool=pool, depth=100, max_docs=max_docs, seed=0,
                           show_progress=False)
    kept = {q: dataset.queries[q] for q in manifest.query_ids}  # the check's re-cut, one family left out in turn
    pooled = pool_runs(dataset, get_pack("en"), kept, pool, 100, False)
    found = gather(dataset, kept, dataset.qrels(manifest.split), pooled, max_docs, 0)
    assert select(found, pooled, 100, max_docs).keep == {doc.id for doc in BeirDataset(out).iter_corpus()}
    depths = [select(found, pooled[:i] + pooled[i + 1:], 100, max_docs).reached for i in range(len(pooled))]
    print(json.dumps({"documents": manifest.counts.documents, "pooled": manifest.counts.pooled,
                      "random": manifest.counts.random, "source_documents": manifest.counts.source_documents,
                      "depth": manifest.method.depth_reached, "depths_leaving_one_out": depths}))


def measure(data: Path, out: Path, max_docs: int, pools: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)  # a subset of an earlier run (another --pools) is cut again
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(data), str(out), str(max_docs), str(pools)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    if status != 0:
        raise SystemExit(f"child failed:\n{stderr}")
    return {**json.loads(stdout.strip().splitlines()[-1]), "peak_rss_gb": usage.ru_maxrss / 2 ** 20,
            "cpu_seconds": usage.ru_utime + usage.ru_stime, "wall_seconds": time.perf_counter() - started}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return 0
    from beirx.subsets.recipe import MAX_DOCS, POOL

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--max-docs", type=int, default=MAX_DOCS)
    parser.add_argument("--pools", type=int, default=len(POOL), help="pooling run files (default: the recipe's)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/beirx-translate-memory"))
    args = parser.parse_args()
    rows = []
    smallest = min(args.docs)
    base = generate(args.work / f"corpus-{smallest}", smallest)
    for docs in args.docs:
        data = base if docs == smallest else replicate(base, args.work / f"corpus-{docs}", docs)
        for index in range(args.pools):
            pool_run(data, docs, index)
        row = {"docs": docs, **measure(data, args.work / f"subset-{docs}", args.max_docs, args.pools)}
        rows.append(row)
        print(f"{docs:>9,} documents: peak RSS {row['peak_rss_gb']:.3f} GB, {row['cpu_seconds']:.1f} CPU-s, "
              f"{row['wall_seconds']:.1f} s wall; subset {row['documents']} documents ({row['pooled']} pooled at "
              f"depth {row['depth']}, {row['random']} random; leaving each of {args.pools} pools out: depths "
              f"{row['depths_leaving_one_out']})", flush=True)
    if len(rows) > 1:
        ratio = rows[-1]["peak_rss_gb"] / rows[0]["peak_rss_gb"]
        print(f"peak ratio {rows[-1]['docs']:,} / {rows[0]['docs']:,} documents: {ratio:.2f} (target <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
