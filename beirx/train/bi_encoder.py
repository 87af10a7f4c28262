"""Fine-tune a sentence-transformers bi-encoder on a split's (query, positive) pairs.

Loss: MultipleNegativesRankingLoss (Henderson et al., 2017; the contrastive InfoNCE loss of DPR,
Karpukhin et al., 2020): for each query, softmax cross-entropy of its positive against every other
document in the batch and, with ``--hard-negatives bm25``, the mined negatives (columns ``negative_1``...), over
cosine similarities times ``--scale`` (1/temperature; default 20, sentence-transformers'; E5 was pre-trained at
temperature 0.01, i.e. 100, Wang et al. 2022). The scale used and where it came from are in the card.
Batches never hold the same text twice (``NO_DUPLICATES``), so a query with two positives never meets its
other positive as a negative. The model's query/passage prompts (E5: ``"query: "``/``"passage: "``,
:func:`beirx.models.prompts.model_prompts`) are applied per column by the trainer, and written into the saved
model's config, so ``beirx eval --retriever dense --model DIR`` encodes exactly as training did.

Memory: the loss is computed with GradCache (Gao et al., 2021, "Scaling Deep Contrastive Learning Batch Size
under Memory Limited Setup"; sentence-transformers' ``CachedMultipleNegativesRankingLoss``): every text of the
batch is embedded without gradients, the loss and its gradient with respect to the embeddings are computed over
the whole batch, then the encoder's gradient is accumulated ``--mini-batch-size`` texts at a time. The gradient
is the one of the whole batch (same in-batch negatives), while the memory held is that of one mini-batch. The
training length is ``--max-seq-length``, else the data's (:func:`beirx.train.memory.length_from_data`), and the
peak memory is checked before the first step (:func:`beirx.train.memory.check_fits`). The saved model keeps the
base model's length, so "before" and "after" are evaluated alike.

Evidence behind the defaults (multilingual-e5-small, SciFact, one epoch, seed 42; docs/reproducing.md): at
``--max-seq-length 64`` the test nDCG@10 went 0.6616 -> 0.6840 (p = 0.16) in 4 minutes of training; at the
data's length (512), all else equal, it went to 0.6414 in 69 minutes, 0.0426 below the 64-token run (paired,
p = 4.6e-05; Recall@100 0.9300 for both). Scale 100 and learning rate 5e-5 scored higher than 20 and 2e-5 but
not significantly, so those defaults stay; the length default stays the data's (one dataset and one seed, with
128 tokens at 0.6746 between the two, do not choose a cap for every corpus), and the documented recipe passes
``--max-seq-length 64``.
The card records the length and the scale used and where each came from.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from beirx.models.prompts import model_prompts
from beirx.train import memory, selection, session
from beirx.train.options import TrainOptions
from beirx.train.validation import bi_encoder_evaluator

log = logging.getLogger(__name__)

LOSS = "MultipleNegativesRankingLoss"
MINI_BATCH_SIZE = 8  # texts per GradCache pass by default: ~4 GB of activations for a small encoder at 512 tokens
SCALE = 20.0  # sentence-transformers' default: cosine similarities / temperature 0.05


def columns(data: session.TrainingData, negatives: int) -> dict[str, list[str]]:
    """``query``, ``passage`` and ``negative_1..N`` texts, one row per example, in the examples' order."""
    cols: dict[str, list[str]] = {"query": [], "passage": []}
    cols.update({f"negative_{i + 1}": [] for i in range(negatives)})
    for e in data.examples:
        cols["query"].append(data.queries[e.query_id])
        cols["passage"].append(data.docs[e.positive_id])
        for i, doc_id in enumerate(e.negative_ids[:negatives]):
            cols[f"negative_{i + 1}"].append(data.docs[doc_id])
    return cols


def column_prompts(prompts: dict[str, str], names: list[str]) -> dict[str, str]:
    """The trainer's ``prompts`` mapping: the query prompt for ``query``, the passage prompt for documents."""
    found = {name: prompts.get("query" if name == "query" else "passage", "") for name in names}
    return {name: prompt for name, prompt in found.items() if prompt}


def train_bi_encoder(opts: TrainOptions, show_progress: bool = True, callbacks: tuple = ()) -> dict[str, Any]:
    """Train, save to ``opts.output`` with its card, and return the card's record (``callbacks``: extra
    ``TrainerCallback`` objects)."""
    session.require_training()
    import datasets
    from sentence_transformers import (SentenceTransformer, SentenceTransformerTrainer,
                                       SentenceTransformerTrainingArguments)
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    opts = dataclasses.replace(opts, mini_batch_size=opts.mini_batch_size or MINI_BATCH_SIZE)
    prepared = session.prepare(opts, show_progress, "bi-encoder")
    if prepared.finished is not None:
        return session.resume_finished("bi-encoder", opts, prepared, show_progress)
    data, base, device = prepared.data, prepared.base, prepared.device
    prompts = model_prompts(base)
    model = SentenceTransformer(str(base.folder), device=device)
    base_length = model.max_seq_length
    negatives = opts.negatives if opts.hard_negatives != "none" else 0
    cols = columns(data, negatives)
    text_prompts = column_prompts(prompts, list(cols))
    length_from = "--max-seq-length" if opts.max_seq_length else \
        f"data ({memory.LENGTH_PERCENTILE}th percentile of token lengths, capped at the model's {base_length}); " \
        "shorter may rank better: on SciFact, e5-small trained at 512 tokens scored 0.0426 nDCG@10 below the same " \
        "epoch at 64 (p = 4.6e-05), so compare --max-seq-length 64 or 128"
    model.max_seq_length = opts.max_seq_length or memory.length_from_data(
        model.tokenizer, cols.values(), [text_prompts.get(name, "") for name in cols], base_length, opts.seed)
    mini_batch = min(opts.mini_batch_size, opts.batch_size)
    estimate = memory.check_fits(memory.Shape.of(model[0].auto_model.config),
                                 sum(p.numel() for p in model.parameters() if p.requires_grad), mini_batch,
                                 model.max_seq_length, opts.max_memory, "--mini-batch-size",
                                 where=memory.Where(device))
    train_dataset = datasets.Dataset.from_dict(cols)
    args = session.training_arguments(
        SentenceTransformerTrainingArguments, opts, device, show_progress, len(train_dataset), data.dev is not None,
        batch_sampler=BatchSamplers.NO_DUPLICATES, prompts=text_prompts or None)
    evaluator = bi_encoder_evaluator(data.validation, prompts, opts.batch_size) if data.validation else None
    score = session.dev_scorer("bi-encoder", data, base, opts, device, base_length, show_progress)
    if score is not None:
        evaluator = selection.evaluator(score, evaluator)
    scale = opts.scale or SCALE
    loss_fn = CachedMultipleNegativesRankingLoss(model, scale=scale, mini_batch_size=mini_batch)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train_dataset, loss=loss_fn,
                                         evaluator=evaluator)
    run = session.fit(trainer, "bi-encoder", opts, data, base, show_progress,
                      (*callbacks, memory.first_step_logger(estimate, memory.Where(device))), score)
    loss = {"name": LOSS, "scale": scale, "scale_from": "--scale" if opts.scale else
            "default: sentence-transformers' 20 (temperature 0.05); E5 was pre-trained at 100 (temperature 0.01), "
            "which scored +0.011 nDCG@10 over 20 on SciFact, not significant (p = 0.25), so is not the default",
            "similarity": "cosine", "batch_sampler": "no_duplicates",
            "max_seq_length": model.max_seq_length, "max_seq_length_from": length_from,
            "gradcache": {"loss_class": type(loss_fn).__name__, "mini_batch_size": mini_batch}}
    model.max_seq_length = base_length
    if prompts:  # written into the saved config, so evaluation prompts as training did
        document = {"document": prompts["passage"]} if "passage" in prompts else {}
        model.prompts = {**model.prompts, **prompts, **document}
    return session.finish(trainer, "bi-encoder", opts, data, base, run, loss, prompts, show_progress)
