#!/usr/bin/env python
"""Can a cross-encoder built from a bi-encoder's weights fit a handful of SciFact training pairs, and how fast?

A cross-encoder built from a plain encoder gets a new one-logit head, trained with binary cross-entropy,
positives weighted by negatives/positives (Nogueira & Cho, 2019). ``--heads cls`` is transformers'
``AutoModelForSequenceClassification`` head (the pooler's tanh layer over the [CLS] token, then a linear layer:
what ``beirx train cross-encoder`` gave every encoder before); ``--heads mean`` is the same linear layer on
mean-pooled token states (how all-MiniLM-L6-v2 was trained; what ``beirx train cross-encoder`` now gives a
mean-pooling sentence-transformers base). This fits one fixed batch, full-batch AdamW, for ``--steps`` steps and
prints the loss and the mean logit of the positives minus that of the negatives every 5 steps: whether the head
and encoder can learn at all at a learning rate, as against a real run's loss staying at the constant
predictor's value. First it
prints how much the base encoder's [CLS] state and its mean-pooled state vary over the batch's pairs (mean
pairwise cosine): a head that reads a nearly constant input starts slowly.

Batch: the first ``--queries`` rows of SciFact's train qrels, each with its judged document (label 1) and 3
documents drawn with ``random.Random(0)`` (label 0), as query/document pairs cut to ``--length`` tokens
(the document is cut); ``pos_weight`` 3.

Usage::

    python benchmarks/cross_encoder_fit.py --model MINILM_DIR [--heads cls mean] [--lrs 2e-5 1e-4] [--steps 30]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT  # noqa: E402


def batch(root: Path, queries: int) -> tuple[list[str], list[str], list[float]]:
    docs = {}
    with open(root / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            docs[d["_id"]] = (d.get("title", "") + " " + d["text"]).strip()
    with open(root / "queries.jsonl", encoding="utf-8") as fh:
        texts = {q["_id"]: q["text"] for q in map(json.loads, fh)}
    qrels = [line.split("\t") for line in (root / "qrels" / "train.tsv").read_text().splitlines()[1:]]
    rng, ids = random.Random(0), list(docs)
    qs, ds, ys = [], [], []
    for qid, did, _ in qrels[:queries]:
        qs.append(texts[qid]), ds.append(docs[did]), ys.append(1.0)
        for other in rng.sample(ids, 3):
            qs.append(texts[qid]), ds.append(docs[other]), ys.append(0.0)
    return qs, ds, ys


def _spread(vectors) -> float:
    """Mean cosine over all pairs of different rows."""
    import torch

    unit = torch.nn.functional.normalize(vectors, dim=-1)
    n = len(unit)
    return ((unit @ unit.T).sum().item() - n) / (n * n - n)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a BERT-style encoder folder (all-MiniLM-L6-v2)")
    parser.add_argument("--heads", nargs="+", choices=("cls", "mean"), default=["cls", "mean"])
    parser.add_argument("--lrs", type=float, nargs="+", default=[2e-5, 1e-4])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--length", type=int, default=64)
    args = parser.parse_args()

    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    qs, ds, ys = batch(SCIFACT, args.queries)
    tokenizer = AutoTokenizer.from_pretrained(str(args.model))
    enc = tokenizer(qs, ds, truncation="only_second", max_length=args.length, padding=True, return_tensors="pt")
    labels = torch.tensor(ys)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))

    class MeanHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(args.model))
            self.linear = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, **inputs):
            states, mask = self.encoder(**inputs).last_hidden_state, inputs["attention_mask"].unsqueeze(-1).float()
            return self.linear((states * mask).sum(1) / mask.sum(1)).view(-1)

    with torch.no_grad():
        base = AutoModel.from_pretrained(str(args.model)).eval()
        states = base(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    print(json.dumps({"mean_pairwise_cosine": {"cls": round(_spread(states[:, 0]), 4),
                                               "mean_pooled": round(_spread((states * mask).sum(1) / mask.sum(1)), 4)},
                      "pairs": len(ys), "length": args.length}), flush=True)
    for head in args.heads:
        for lr in args.lrs:
            torch.manual_seed(42)
            if head == "cls":
                module = AutoModelForSequenceClassification.from_pretrained(str(args.model), num_labels=1)
                forward = lambda **inputs: module(**inputs).logits.view(-1)  # noqa: E731
            else:
                module = forward = MeanHead()
            module.train()
            optimizer = torch.optim.AdamW(module.parameters(), lr=lr)
            start, trace = time.time(), []
            for step in range(1, args.steps + 1):
                logits = forward(**enc)
                loss = loss_fn(logits, labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if step % 5 == 0:
                    gap = logits[labels > 0].mean() - logits[labels == 0].mean()
                    trace.append({"step": step, "loss": round(loss.item(), 4), "logit_gap": round(gap.item(), 4)})
            print(json.dumps({"head": head, "lr": lr, "pairs": len(ys), "length": args.length, "trace": trace,
                              "seconds": round(time.time() - start, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
