"""Fine-tune a cross-encoder reranker: binary relevance of (query, document) pairs with mined negatives.

Loss: BinaryCrossEntropyLoss on one logit (as the MS MARCO cross-encoders, Nogueira & Cho 2019, "Passage
Re-ranking with BERT"): label 1 for each judged positive, 0 for each of the query's BM25 negatives (mined once
per query; never a judged positive). Positives are outnumbered by negatives, so they are weighted by the
ratio negatives/positives (``pos_weight``), as in sentence-transformers' reranker examples. Any
sequence-classification checkpoint (or a plain encoder, which gets a new one-logit head seeded by ``--seed``)
works; the saved folder is a CrossEncoder folder that ``beirx eval --reranker cross-encoder
--reranker-model DIR`` loads.
"""

from __future__ import annotations

import logging
from typing import Any

from beirx.errors import BeirxError
from beirx.train import memory, session
from beirx.train.options import TrainOptions
from beirx.train.validation import cross_encoder_evaluator

log = logging.getLogger(__name__)

LOSS = "BinaryCrossEntropyLoss"


def columns(data: session.TrainingData) -> dict[str, list]:
    """``query``, ``passage``, ``label`` rows: each positive (1.0), then its query's negatives once (0.0)."""
    cols: dict[str, list] = {"query": [], "passage": [], "label": []}
    seen: set[str] = set()
    for e in data.examples:
        rows = [(e.positive_id, 1.0)]
        if e.query_id not in seen:
            seen.add(e.query_id)
            rows += [(doc_id, 0.0) for doc_id in e.negative_ids]
        for doc_id, label in rows:
            cols["query"].append(data.queries[e.query_id])
            cols["passage"].append(data.docs[doc_id])
            cols["label"].append(label)
    return cols


def train_cross_encoder(opts: TrainOptions, show_progress: bool = True, callbacks: tuple = ()) -> dict[str, Any]:
    """Train, save to ``opts.output`` with its card, and return the card's record."""
    if opts.hard_negatives == "none":
        raise BeirxError("a binary reranker needs negatives: pass --hard-negatives bm25 (and --negatives N)")
    session.require_training()
    import datasets
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    data, base, device = session.prepare(opts, show_progress)
    torch.manual_seed(opts.seed)  # a new classification head starts from the same weights on every run
    model = CrossEncoder(str(base.folder), num_labels=1, max_length=opts.max_seq_length, device=device)
    base_length = model.max_seq_length
    cols = columns(data)
    if not opts.max_seq_length:  # from the data for training; the saved model keeps the base model's length
        model.max_seq_length = memory.length_from_data(model.tokenizer, [list(zip(cols["query"], cols["passage"]))],
                                                       [""], base_length, opts.seed)
    estimate = memory.check_fits(memory.Shape.of(model[0].auto_model.config),
                                 sum(p.numel() for p in model.parameters() if p.requires_grad), opts.batch_size,
                                 model.max_seq_length, opts.max_memory, "--batch-size", where=memory.Where(device))
    positives = sum(1 for label in cols["label"] if label > 0)
    pos_weight = (len(cols["label"]) - positives) / positives
    train_dataset = datasets.Dataset.from_dict(cols)
    args = session.training_arguments(CrossEncoderTrainingArguments, opts, device, show_progress)
    loss_fn = BinaryCrossEntropyLoss(model, pos_weight=torch.tensor(pos_weight))
    evaluator = cross_encoder_evaluator(data.validation, opts.batch_size) if data.validation else None
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=train_dataset, loss=loss_fn,
                                  evaluator=evaluator)
    run = session.fit(trainer, "cross-encoder", opts, data, base, show_progress,
                      (*callbacks, memory.first_step_logger(estimate, memory.Where(device))))
    loss = {"name": LOSS, "pos_weight": round(pos_weight, 6), "positives": positives,
            "negatives": len(cols["label"]) - positives, "max_length": model.max_seq_length}
    if not opts.max_seq_length:
        model.max_seq_length = base_length
    return session.finish(trainer, "cross-encoder", opts, data, base, run, loss, {}, show_progress)
