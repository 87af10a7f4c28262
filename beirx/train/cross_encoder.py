"""Fine-tune a cross-encoder reranker on (query, document) pairs with mined negatives.

Two losses (``--loss``), both on one logit per pair:

- ``bce`` (default): BinaryCrossEntropyLoss (as the MS MARCO cross-encoders, Nogueira & Cho 2019, "Passage
  Re-ranking with BERT"): label 1 for each judged positive, 0 for each of the query's BM25 negatives (mined once
  per query; never a judged positive). Positives are outnumbered by negatives, so they are weighted by the
  ratio negatives/positives (``pos_weight``), as in sentence-transformers' reranker examples.
- ``listwise``: for each (query, positive) row, softmax cross-entropy of the positive's logit against the
  logits of the query's ``--negatives`` BM25 negatives and of ``IN_BATCH_NEGATIVES`` document drawn at random
  from the batch's other rows (another query's positive or BM25 negative):
  -log(e^{s+} / (e^{s+} + sum_j e^{s_j})). This is the Localized Contrastive Estimation of Gao, Dai & Callan
  2021 ("Rethink Training of BERT Rerankers in Multi-Stage Retrieval Pipeline": a reranker learns to order the
  first stage's own candidates), computed by sentence-transformers' MultipleNegativesRankingLoss on raw logits
  (no sigmoid, scale 1). The other query's document penalises scoring "looks like a judged document" regardless
  of the query; batches never hold the same text twice (``NO_DUPLICATES``), so a query's other positive is never
  its negative. On SciFact (all-MiniLM-L6-v2, 2 epochs) it reranked BM25's top 100 to nDCG@10 0.5515 where one
  epoch of ``bce`` gave 0.4123 (BM25 alone 0.6906; docs/reproducing.md); ``bce`` stays the default.

The head (:func:`head_for`): a sequence-classification checkpoint keeps its own; a sentence-transformers
bi-encoder that pools by the mean of its token states (its ``1_Pooling/config.json``, e.g. all-MiniLM-L6-v2)
gets one linear layer on that mean, the representation it was trained to produce (its [CLS] states are nearly
constant, so a [CLS] head starts from a constant input and does not leave the constant predictor in an epoch:
docs/reproducing.md); any other encoder gets transformers' [CLS]-pooler head. New heads are seeded by
``--seed``. The saved folder is a sentence-transformers CrossEncoder folder (Transformer, Pooling, Dense modules
for the mean head) that ``beirx eval --reranker cross-encoder --reranker-model DIR`` and ``CrossEncoder(DIR)``
load.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from beirx.errors import BeirxError
from beirx.train import memory, selection, session
from beirx.train.bi_encoder import columns as rows  # the listwise rows: query, passage, negative_1..N
from beirx.train.options import DEFAULT_CROSS_ENCODER_LOSS, TrainOptions
from beirx.train.validation import cross_encoder_evaluator

log = logging.getLogger(__name__)

LOSS = "BinaryCrossEntropyLoss"
LISTWISE_LOSS = "MultipleNegativesRankingLoss"
IN_BATCH_NEGATIVES = 1  # per row, on top of the BM25 ones: one more forward pass per row, not batch_size - 1
HEADS = {"classifier": "the checkpoint's own sequence-classification head",
         "mean": "mean of the token states + linear (the base bi-encoder's pooling)",
         "cls": "[CLS] pooler + linear (transformers' sequence-classification head)"}


def head_for(folder: Path) -> str:
    """``classifier``, ``mean`` or ``cls``: which head a cross-encoder trained from ``folder`` gets (see module doc)."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8")) if (folder / "config.json").is_file() \
        else {}
    if any(a.endswith("ForSequenceClassification") for a in config.get("architectures") or ()):
        return "classifier"
    modules = folder / "modules.json"
    pooling = next((m for m in json.loads(modules.read_text(encoding="utf-8")) if m["type"].endswith("Pooling")),
                   None) if modules.is_file() else None
    if pooling is not None:
        pooled = json.loads((folder / pooling["path"] / "config.json").read_text(encoding="utf-8"))
        if pooled.get("pooling_mode") == "mean" or pooled.get("pooling_mode_mean_tokens"):
            return "mean"
    return "cls"


def build(folder: Path, head: str, device: str):
    """A one-logit ``CrossEncoder`` on ``folder``; ``mean``: Transformer -> mean Pooling -> Dense(hidden, 1)."""
    from sentence_transformers.base.modules import Dense, Transformer
    from sentence_transformers.cross_encoder import CrossEncoder
    from sentence_transformers.sentence_transformer.modules import Pooling

    if head != "mean":
        return CrossEncoder(str(folder), num_labels=1, device=device, local_files_only=True)
    local = {"local_files_only": True}
    encoder = Transformer(str(folder), transformer_task="feature-extraction", model_kwargs=local,
                          processor_kwargs=local, config_kwargs=local)
    width = encoder.get_embedding_dimension()
    return CrossEncoder(modules=[encoder, Pooling(width, "mean"),
                                 Dense(width, 1, activation_function=None, module_output_name="scores")],
                        device=device)


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


def listwise_loss(model):
    """Softmax cross-entropy over raw logits: the row's positive against its BM25 negatives and
    ``IN_BATCH_NEGATIVES`` random document of the batch's other rows (module doc)."""
    from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss

    return MultipleNegativesRankingLoss(model, num_negatives=IN_BATCH_NEGATIVES, scale=1.0, activation_fn=None)


def train_cross_encoder(opts: TrainOptions, show_progress: bool = True, callbacks: tuple = ()) -> dict[str, Any]:
    """Train, save to ``opts.output`` with its card, and return the card's record."""
    if opts.hard_negatives == "none":
        raise BeirxError("a binary reranker needs negatives: pass --hard-negatives bm25 (and --negatives N)")
    session.require_training()
    import datasets
    import torch
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    opts = dataclasses.replace(opts, loss=opts.loss or DEFAULT_CROSS_ENCODER_LOSS)
    prepared = session.prepare(opts, show_progress, "cross-encoder")
    if prepared.finished is not None:
        return session.resume_finished("cross-encoder", opts, prepared, show_progress)
    data, base, device = prepared.data, prepared.base, prepared.device
    torch.manual_seed(opts.seed)  # a new classification head starts from the same weights on every run
    head = head_for(Path(base.folder))
    model = build(Path(base.folder), head, device)
    log.info("cross-encoder head: %s", HEADS[head])
    base_length = model.max_seq_length
    if opts.max_seq_length:
        model.max_seq_length = opts.max_seq_length
    listwise = opts.loss == "listwise"
    cols = rows(data, opts.negatives) if listwise else columns(data)
    if not opts.max_seq_length:  # from the data for training; the saved model keeps the base model's length
        pairs = [pair for name in cols if name not in ("query", "label") for pair in zip(cols["query"], cols[name])]
        model.max_seq_length = memory.length_from_data(model.tokenizer, [pairs], [""], base_length, opts.seed)
    pairs_per_row = 1 + opts.negatives + IN_BATCH_NEGATIVES if listwise else 1  # all held for one backward pass
    estimate = memory.check_fits(memory.Shape.of(model[0].auto_model.config),
                                 sum(p.numel() for p in model.parameters() if p.requires_grad),
                                 opts.batch_size * pairs_per_row, model.max_seq_length, opts.max_memory,
                                 "--batch-size", where=memory.Where(device))
    train_dataset = datasets.Dataset.from_dict(cols)
    if listwise:
        args = session.training_arguments(CrossEncoderTrainingArguments, opts, device, show_progress,
                                          len(train_dataset), data.dev is not None,
                                          batch_sampler=BatchSamplers.NO_DUPLICATES)
        loss_fn = listwise_loss(model)
        loss = {"name": LISTWISE_LOSS, "head": head, "bm25_negatives": opts.negatives,
                "in_batch_negatives": IN_BATCH_NEGATIVES, "logits": "raw (no sigmoid, scale 1)",
                "batch_sampler": "no_duplicates", "rows": len(cols["query"])}
    else:
        positives = sum(1 for label in cols["label"] if label > 0)
        pos_weight = (len(cols["label"]) - positives) / positives
        args = session.training_arguments(CrossEncoderTrainingArguments, opts, device, show_progress,
                                          len(train_dataset), data.dev is not None)
        loss_fn = BinaryCrossEntropyLoss(model, pos_weight=torch.tensor(pos_weight))
        loss = {"name": LOSS, "head": head, "pos_weight": round(pos_weight, 6), "positives": positives,
                "negatives": len(cols["label"]) - positives}
    evaluator = cross_encoder_evaluator(data.validation, opts.batch_size) if data.validation else None
    score = session.dev_scorer("cross-encoder", data, base, opts, device, base_length, show_progress)
    if score is not None:
        evaluator = selection.evaluator(score, evaluator)
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=train_dataset, loss=loss_fn,
                                  evaluator=evaluator)
    run = session.fit(trainer, "cross-encoder", opts, data, base, show_progress,
                      (*callbacks, memory.first_step_logger(estimate, memory.Where(device))), score)
    loss["max_length"] = model.max_seq_length
    if not opts.max_seq_length:
        model.max_seq_length = base_length
    return session.finish(trainer, "cross-encoder", opts, data, base, run, loss, {}, show_progress)
