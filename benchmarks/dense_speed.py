"""Dense retrieval speed and memory: length-sorted batching, and exact search in bounded memory.

Usage: python benchmarks/dense_speed.py [--model E5_FOLDER] [--scifact ../shared/data/beir/scifact]
                                        [--docs 256] [--rows 1000000] [--dim 384] [--queries 300] [--k 1000]

1. Encoding throughput (passages/s) on real SciFact passages with the given sentence-transformers model,
   batches of 32 texts, longest first by token count (what beirx does, tokenisation time included)
   against corpus order (the baseline), measured in alternating rounds in the same process; the ratio is
   the speed-up of length sorting. Also the padded-token ratio of both orders over the whole corpus.
2. Exact top-k search over a synthetic ``rows x dim`` float32 matrix memory-mapped from disk, as beirx
   searches cached embeddings: wall time, peak memory allocated by the search (tracemalloc, which numpy
   reports to) and peak anonymous RSS growth, both on top of the matrix itself; against brute force
   (one ``queries x rows`` score matrix) on the same data.

Reranking throughput (pairs/s) is measured by the rerankers' own benchmark.
"""

from __future__ import annotations

import argparse
import sys
import os
import random
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT, e5_default  # noqa: E402

import numpy as np



def rss_anon_kib() -> int:
    """Private resident memory of this process (excludes the file-backed pages of a memmap)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


class PeakRss:
    """Samples RssAnon every 5 ms while the block runs; ``growth_mib`` is the peak above the start."""

    def __enter__(self):
        self.start = self.peak = rss_anon_kib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_anon_kib())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_anon_kib())
        self.growth_mib = (self.peak - self.start) / 1024


def encoding(args) -> None:
    from beirx.data.beir_io import iter_corpus
    from beirx.models.embeddings_cache import encode_into
    from beirx.evaluate.retrievers.dense import DenseRetriever, document_text

    docs = list(iter_corpus(args.scifact / "corpus.jsonl"))
    texts = [document_text(d) for d in random.Random(13).sample(docs, args.docs)]
    dense = DenseRetriever(None, model=str(args.model), batch_size=32, device="cpu", show_progress=False)
    dense.encode(texts[:4], dense.passage_prompt)  # load and warm up the model

    def encode(batch):
        return dense.encode(batch, dense.passage_prompt)

    seconds = {True: [], False: []}
    for _ in range(args.rounds):
        for sort in (False, True):
            out = np.zeros((len(texts), 384), dtype=np.float32)
            start = time.perf_counter()
            order = dense.encoding_order(texts) if sort else np.arange(len(texts))
            encode_into(out, texts, encode, 32, order, show_progress=False)
            seconds[sort].append(time.perf_counter() - start)
    unsorted, sorted_ = min(seconds[False]), min(seconds[True])
    print(f"encoding {len(texts)} SciFact passages, {dense.files.name}, batch 32, max_length {dense.max_length}, "
          f"cpu threads {__import__('torch').get_num_threads()}, best of {args.rounds}")
    print(f"  corpus order : {len(texts) / unsorted:8.2f} passages/s  ({unsorted:.1f} s)")
    print(f"  length-sorted: {len(texts) / sorted_:8.2f} passages/s  ({sorted_:.1f} s)")
    print(f"  speed-up     : {unsorted / sorted_:8.2f}x")

    every = [document_text(d) for d in docs]
    tokenizer = dense.model().tokenizer
    ids = tokenizer([dense.passage_prompt + t for t in every], truncation=True, max_length=dense.max_length)
    lengths = np.array([len(x) for x in ids["input_ids"]])

    def padded(order):
        return sum(lengths[order[i:i + 32]].max() * len(order[i:i + 32]) for i in range(0, len(order), 32))

    by_chars = np.argsort(-np.array([len(t) for t in every]), kind="stable")
    base = padded(np.arange(len(every)))
    print(f"  padded tokens over all {len(every)} passages, corpus order / sorted: by tokens "
          f"{base / padded(dense.encoding_order(every)):.2f}x, by characters {base / padded(by_chars):.2f}x")


def search(args) -> None:
    from beirx.evaluate.knn import exact_search, id_tie_ranks

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "matrix.npy"
        matrix = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(args.rows, args.dim))
        for start in range(0, args.rows, 100_000):
            block = rng.standard_normal((min(100_000, args.rows - start), args.dim), dtype=np.float32)
            matrix[start:start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
        matrix.flush()
        del matrix
        corpus = np.load(path, mmap_mode="r")
        queries = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
        ids = [f"doc{i}" for i in range(args.rows)]
        ties = id_tie_ranks(ids)
        matrix_mib = args.rows * args.dim * 4 / 2**20
        print(f"exact search: {args.queries} queries x {args.rows:,} x {args.dim} float32 memmap "
              f"({matrix_mib:,.0f} MiB), top {args.k}")

        results = {}
        for label, chunk in (("chunked (beirx default)", None), ("brute force (one chunk)", args.rows)):
            tracemalloc.start()
            with PeakRss() as rss:
                start = time.perf_counter()
                idx, _ = exact_search(queries, corpus, args.k, ties, chunk_rows=chunk, query_block=args.queries)
                seconds = time.perf_counter() - start
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            results[label] = idx
            print(f"  {label:<24} {seconds:7.1f} s   peak allocated {peak / 2**20:8.1f} MiB   "
                  f"peak RssAnon growth {rss.growth_mib:8.1f} MiB")
        same = all(np.array_equal(a, results["chunked (beirx default)"]) for a in results.values())
        print(f"  identical top-{args.k}: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, **e5_default())
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--docs", type=int, default=256, help="passages encoded per configuration")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (best time is reported)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--skip-encoding", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.skip_encoding:
        encoding(args)
    if not args.skip_search:
        search(args)


if __name__ == "__main__":
    main()
