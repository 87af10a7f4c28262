#!/usr/bin/env python
"""How the in-batch loss sees a pre-trained encoder at a given scale: cosine of positives vs in-batch negatives,
the softmax probability of the positive, the loss, and its gradient norm with respect to the cosines.

MultipleNegativesRankingLoss is cross-entropy over ``scale * cos(query, passage)`` (Henderson et al., 2017);
E5 was pre-trained at temperature 0.01 (scale 100, Wang et al., 2022), sentence-transformers' default is 20.
Batches: the first ``--batches x 32`` pairs of SciFact's train split in a permutation seeded 42, encoded
without gradients at ``--length`` tokens with the model's ``query: ``/``passage: `` prompts.

Usage::

    python benchmarks/train_loss_scale.py --model E5_SMALL_DIR [--length 64] [--scales 20 100]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT, e5_default  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, **e5_default())
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--scales", type=float, nargs="+", default=[20.0, 100.0])
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from beirx.data.dataset import BeirDataset
    from beirx.models.files import resolve_model
    from beirx.models.prompts import model_prompts
    from beirx.train.examples import document_texts, positive_pairs, query_texts

    dataset = BeirDataset(SCIFACT, lang="en")
    examples = positive_pairs(dataset, "train")
    queries, docs = query_texts(dataset, examples), document_texts(dataset, examples)
    order = torch.randperm(len(examples), generator=torch.Generator().manual_seed(42)).tolist()
    prompts = model_prompts(resolve_model(str(args.model)))
    model = SentenceTransformer(str(args.model), device="cpu")
    model.max_seq_length = args.length
    found: dict[str, list[float]] = {}
    for b in range(args.batches):
        rows = [examples[i] for i in order[b * 32:(b + 1) * 32]]
        q = model.encode([queries[e.query_id] for e in rows], prompt=prompts.get("query"),
                         normalize_embeddings=True, convert_to_tensor=True)
        p = model.encode([docs[e.positive_id] for e in rows], prompt=prompts.get("passage"),
                         normalize_embeddings=True, convert_to_tensor=True)
        cos = q @ p.T
        eye = torch.eye(len(rows), dtype=torch.bool)
        found.setdefault("cos_positive", []).append(cos[eye].mean().item())
        found.setdefault("cos_in_batch_negative", []).append(cos[~eye].mean().item())
        for scale in args.scales:
            logits = cos * scale
            softmax = torch.softmax(logits, dim=1)
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(rows)))
            grad = scale * (softmax - eye.float()) / len(rows)  # d loss / d cos
            found.setdefault(f"scale {scale:g}: loss", []).append(loss.item())
            found.setdefault(f"scale {scale:g}: P(positive)", []).append(softmax[eye].mean().item())
            found.setdefault(f"scale {scale:g}: |d loss / d cos|", []).append(grad.norm().item())
    print(json.dumps({k: round(sum(v) / len(v), 4) for k, v in found.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
