"""Embedded BM25 vs the Elasticsearch backend (client-side analysis) on SciFact: same top-10?

Usage: python benchmarks/es_parity.py [--scifact ../shared/data/beir/scifact] [--lang en] [--es-url URL]

Without --es-url it starts noida-db (an Elasticsearch 8 API server, see tests/elasticsearch_server.py)
on 127.0.0.1. For the flat and multifield modes it prints, over SciFact's 300 test queries:

- mean top-10 overlap (|top10_a ∩ top10_b| / 10) and the share of identical ranked top-10 lists
  between the embedded BM25 (Lucene's one-byte length norms, the default) and the cluster;
- the same two figures between the cluster and the embedded BM25 with ``--length-norm exact`` (bm25s's
  exact document lengths), to show what the norms account for;
- the score ratio cluster / embedded (Lucene >= 8 gives 1; noida-db, like Lucene 7, k1 + 1 = 2.2);
- nDCG@10 and Recall@100 of both backends and wall times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the noida-db launcher shared with the tests


def top(docs: dict[str, float], k: int) -> list[str]:
    return [d for d, _ in sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]]


def agreement(a: dict, b: dict, k: int = 10) -> tuple[float, float]:
    """Mean top-k overlap and share of identical ranked top-k lists over the queries of ``a``."""
    overlaps, same = [], 0
    for qid in a:
        ta, tb = top(a[qid], k), top(b.get(qid, {}), k)
        overlaps.append(len(set(ta) & set(tb)) / max(1, min(k, max(len(ta), len(tb)))))
        same += ta == tb
    return statistics.mean(overlaps), same / len(a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared/data/beir/scifact")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--es-url", default=None, help="a cluster to use instead of starting noida-db")
    parser.add_argument("--top-k", type=int, default=100)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as home, ExitStack() as stack:
        os.environ["BEIRX_HOME"] = home
        from beirx.data.dataset import BeirDataset
        from beirx.evaluate.metrics import evaluate
        from beirx.evaluate.retrievers.bm25 import BM25Retriever
        from beirx.evaluate.retrievers.elasticsearch import ElasticsearchRetriever
        from beirx.language_packs import get_pack

        url = args.es_url
        if url is None:
            from elasticsearch_server import noida_elasticsearch

            url = stack.enter_context(noida_elasticsearch(Path(home) / "noida"))
        pack = get_pack(args.lang)
        dataset = BeirDataset(args.scifact, name="scifact", lang=args.lang)
        queries, qrels = dataset.queries_for_split("test")
        docs = list(dataset.iter_corpus())
        print(f"dataset {args.scifact} ({len(docs)} docs, {len(queries)} test queries)  pack {args.lang}  "
              f"top-k {args.top_k}")
        for fields in ("flat", "multifield"):
            t0 = time.perf_counter()
            embedded = BM25Retriever(pack, fields=fields, use_cache=False, show_progress=False)
            embedded.index(dataset)
            run_emb = embedded.search(queries, args.top_k)
            t1 = time.perf_counter()
            es = ElasticsearchRetriever(pack, url=url, analysis="client", fields=fields, use_cache=False,
                                        show_progress=False)
            es.index(dataset)
            t2 = time.perf_counter()
            run_es = es.search(queries, args.top_k)
            t3 = time.perf_counter()
            exact = BM25Retriever(pack, fields=fields, length_norm="exact", use_cache=False, show_progress=False)
            exact.index(dataset)
            run_exact = exact.search(queries, args.top_k)
            ratios = [run_es[q][d] / run_emb[q][d] for q in run_es for d in top(run_es[q], 10) if d in run_emb[q]]
            server = es.describe()["server"]
            print(f"\n[{fields}] cluster: {server['distribution']} {server['version']} at {server['url']}")
            for label, a, b in (("embedded vs cluster", run_emb, run_es), ("exact lengths vs cluster", run_exact, run_es),
                                ("embedded vs exact lengths", run_emb, run_exact)):
                overlap, identical = agreement(a, b)
                print(f"  {label:<26} mean top-10 overlap {overlap:.4f}   identical ranked top-10 {identical:6.1%}")
            print(f"  score ratio cluster / embedded over top-10 hits: median {statistics.median(ratios):.6f}, "
                  f"min {min(ratios):.6f}, max {max(ratios):.6f}")
            for label, run, seconds in (("embedded bm25", run_emb, t1 - t0),
                                        ("elasticsearch", run_es, t3 - t1)):
                m = evaluate(qrels, run, k_values=(10, 100)).metrics
                print(f"  {label:<14} nDCG@10 {m['NDCG@10']:.4f}  Recall@100 {m['Recall@100']:.4f}  "
                      f"({seconds:.1f} s index+search)")
            print(f"  (cluster: index {t2 - t1:.1f} s, search {t3 - t2:.1f} s)")

if __name__ == "__main__":
    main()
