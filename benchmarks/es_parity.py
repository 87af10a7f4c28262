"""Embedded BM25 vs the Elasticsearch backend (client-side analysis) on SciFact: same top-10?

Usage: python benchmarks/es_parity.py [--scifact ../shared/data/beir/scifact] [--lang en] [--es-url URL]

Without --es-url it starts noida-db (an Elasticsearch 8 API server, see tests/elasticsearch_server.py)
on 127.0.0.1. For the flat and multifield modes it prints, over SciFact's 300 test queries:

- mean top-10 overlap (|top10_a ∩ top10_b| / 10) and the share of identical ranked top-10 lists
  between the embedded BM25 (bm25s, exact document lengths) and the cluster;
- the same two figures between the cluster and a third ranking, "lucene-norms": this script's own BM25
  with Lucene's one-byte document-length norms (``SmallFloat.intToByte4``; lengths above 24 tokens are
  rounded down to 4 significant bits), to show where the residual difference comes from;
- the score ratio cluster / lucene-norms (Lucene's BM25 gives 1; noida-db gives k1 + 1 = 2.2);
- nDCG@10 and Recall@100 of both backends and wall times.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the noida-db launcher shared with the tests


def lucene_length(n: int) -> int:
    """A field length after Lucene's norm encoding: ``byte4ToInt(intToByte4(n))`` (SmallFloat)."""
    if n < 24:
        return n
    i = n - 24
    shift = i.bit_length() - 4
    if shift < 0:  # fewer than 4 significant bits: stored exactly
        return n
    encoded = ((i >> shift) & 0x07) | ((shift + 1) << 3)
    bits, shift = encoded & 0x07, (encoded >> 3) - 1
    return 24 + (bits if shift == -1 else (bits | 0x08) << shift)


class LuceneNormBM25:
    """BM25 exactly as Lucene >= 8 scores it, one-byte length norms included (reference only)."""

    def __init__(self, pack, docs, fields: str, k1: float = 1.2, b: float = 0.75, tie_breaker: float = 0.5):
        self.k1, self.b, self.tie_breaker = k1, b, tie_breaker
        analyze = pack.analyzer()
        self.pack = pack
        self.fields: dict[str, tuple] = {}
        names = ["contents"] if fields == "flat" else ["title", "text"]
        for name in names:
            postings: dict[str, list[tuple[str, int]]] = defaultdict(list)
            lengths: dict[str, int] = {}
            for doc in docs:
                value = f"{doc.title} {doc.text}" if name == "contents" else getattr(doc, name)
                tokens = analyze(value) if value else []
                if not tokens:
                    continue
                lengths[doc.id] = len(tokens)
                for token, tf in Counter(tokens).items():
                    postings[token].append((doc.id, tf))
            avgdl = sum(lengths.values()) / len(lengths)
            self.fields[name] = (postings, {d: lucene_length(n) for d, n in lengths.items()}, len(lengths), avgdl)

    def scores(self, text: str) -> dict[str, float]:
        tokens = self.pack.analyze(text)
        per_field = []
        for postings, norm_len, n, avgdl in self.fields.values():
            acc: dict[str, float] = defaultdict(float)
            for token in tokens:
                hits = postings.get(token, [])
                if not hits:
                    continue
                idf = math.log(1 + (n - len(hits) + 0.5) / (len(hits) + 0.5))
                for did, tf in hits:
                    acc[did] += idf * tf / (tf + self.k1 * (1 - self.b + self.b * norm_len[did] / avgdl))
            per_field.append(acc)
        combined: dict[str, float] = {}
        for did in set().union(*per_field):
            values = [f[did] for f in per_field if did in f]
            best = max(values)
            combined[did] = best + self.tie_breaker * (sum(values) - best)
        return combined


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
            reference = LuceneNormBM25(pack, docs, fields)
            run_ref = {qid: dict(sorted(reference.scores(q.text).items(), key=lambda x: (x[1], x[0]),
                                        reverse=True)[:args.top_k]) for qid, q in queries.items()}
            ratios = [run_es[q][d] / run_ref[q][d] for q in run_es for d in top(run_es[q], 10) if d in run_ref[q]]
            server = es.describe()["server"]
            print(f"\n[{fields}] cluster: {server['distribution']} {server['version']} at {server['url']}")
            for label, a, b in (("embedded vs cluster", run_emb, run_es), ("lucene-norms vs cluster", run_ref, run_es),
                                ("embedded vs lucene-norms", run_emb, run_ref)):
                overlap, identical = agreement(a, b)
                print(f"  {label:<26} mean top-10 overlap {overlap:.4f}   identical ranked top-10 {identical:6.1%}")
            print(f"  score ratio cluster / lucene-norms over top-10 hits: median {statistics.median(ratios):.6f}, "
                  f"min {min(ratios):.6f}, max {max(ratios):.6f}")
            for label, run, seconds in (("embedded bm25", run_emb, t1 - t0),
                                        ("elasticsearch", run_es, t3 - t1)):
                m = evaluate(qrels, run, k_values=(10, 100)).metrics
                print(f"  {label:<14} nDCG@10 {m['NDCG@10']:.4f}  Recall@100 {m['Recall@100']:.4f}  "
                      f"({seconds:.1f} s index+search)")
            print(f"  (cluster: index {t2 - t1:.1f} s, search {t3 - t2:.1f} s)")


if __name__ == "__main__":
    main()
