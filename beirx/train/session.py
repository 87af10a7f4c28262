"""What the bi-encoder and cross-encoder trainers share: the data, the trainer's arguments, resuming, saving.

Flow of a run (both trainers): check the output folder -> examples from the split's qrels (and BM25
negatives) -> the model -> the trainer -> train, resuming from the last checkpoint of the same run ->
save the model and its card -> drop the checkpoints. Reproducibility: one seed for the trainer's model
initialisation (a new classification head) and for the data order (``seed`` and ``data_seed``).
Devices: the trainer's own (all visible GPUs; ``torchrun --nproc_per_node N -m beirx train ...`` for
distributed data parallel; the CPU with ``--device cpu`` or when there is no GPU).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from beirx.data.dataset import BeirDataset
from beirx.data.front_matter import read_front_matter
from beirx.data.language import dataset_language
from beirx.data.resolve import resolve_dataset
from beirx.errors import BeirxError, require
from beirx.language_packs import LanguagePack, get_pack
from beirx.models.device import choose_device
from beirx.models.files import ModelFiles, resolve_model
from beirx.train import card, checkpoints, evaluation, trainer_progress
from beirx.train.examples import Example, all_judged_positives, document_texts, positive_pairs, query_texts
from beirx.train.negatives import BM25Miner
from beirx.train.options import TrainOptions
from beirx.train.validation import ValidationPool, build_pool, history

log = logging.getLogger(__name__)


@dataclass
class TrainingData:
    """The examples of a run with the texts they refer to and how they were made."""

    dataset: BeirDataset
    lang: str
    examples: list[Example]
    queries: dict[str, str]
    docs: dict[str, str]
    negatives: dict[str, Any] | None  # the miner's description, None without hard negatives
    dropped: int = 0                  # pairs left out: their query had fewer than the asked negatives
    validation: ValidationPool | None = None  # with --eval-split

    def describe(self, opts: TrainOptions) -> dict[str, Any]:
        return {"dataset": self.dataset.name, "source": self.dataset.source, "checksum": self.dataset.checksum(),
                "language": self.lang, "split": opts.split, "num_pairs": len(self.examples),
                "num_queries": len(self.queries), "num_documents": len(self.docs),
                "pairs_without_enough_negatives": self.dropped, "hard_negatives": self.negatives,
                "validation": self.validation.describe(opts.eval_candidates) if self.validation else None}


def require_training() -> None:
    """Fail before any work when the ``train`` extra is missing (naming it)."""
    for module in ("sentence_transformers", "datasets", "accelerate"):
        require(module, "train", "training models")


def check_output(opts: TrainOptions) -> None:
    """A new or resumable output folder; a finished model is kept unless ``--overwrite``."""
    out = opts.output
    if not out.exists():
        return
    if not out.is_dir():
        raise BeirxError(f"--output {out} is a file, not a folder")
    if opts.overwrite:
        checkpoints.finish(out, keep=False)
        return
    if read_front_matter(out / "README.md").get(card.KEY):
        raise BeirxError(f"{out} already holds a model trained by beirx; pass --overwrite to train again")
    if checkpoints.checkpoint_dir(out).is_dir():
        return  # a run that was stopped: it resumes
    others = [p.name for p in out.iterdir() if p.name != checkpoints.FOLDER]
    if others:
        raise BeirxError(f"--output {out} is not empty ({', '.join(sorted(others)[:3])} ...); pass a new folder")


def dataset_in_its_language(spec: str, flag: str | None) -> tuple[BeirDataset, str]:
    """The dataset and its language: ``--lang``, else what the dataset states (translation.json or its card,
    :func:`beirx.data.language.dataset_language`, which also warns when ``--lang`` contradicts it), else en."""
    lang, _ = dataset_language(spec, flag)
    dataset = resolve_dataset(spec, lang=lang)
    dataset.lang = lang
    return dataset, lang


def pack_and_dataset(opts: TrainOptions) -> tuple[BeirDataset, LanguagePack]:
    """The dataset and the language pack of its language."""
    dataset, lang = dataset_in_its_language(opts.dataset, opts.lang)
    return dataset, get_pack(lang)


def load_training_data(opts: TrainOptions, show_progress: bool) -> TrainingData:
    """Pairs from ``opts.split``'s qrels and, with ``--hard-negatives bm25``, ``opts.negatives`` each; the
    validation pool with ``--eval-split``. One BM25 index serves both."""
    dataset, pack = pack_and_dataset(opts)
    examples = positive_pairs(dataset, opts.split)
    queries = query_texts(dataset, examples)
    description, dropped = None, 0
    miner = BM25Miner(dataset, pack, show_progress) if opts.hard_negatives == "bm25" or opts.eval_split else None
    positives = all_judged_positives(dataset) if miner else {}
    if opts.hard_negatives == "bm25":
        mined = miner.mine(queries, positives, opts.negatives)
        full = [replace(e, negative_ids=tuple(mined[e.query_id])) for e in examples
                if len(mined[e.query_id]) >= opts.negatives]
        dropped = len(examples) - len(full)
        if dropped:
            log.warning("%d of %d pairs left out: BM25 found fewer than %d non-positive documents for their "
                        "query", dropped, len(examples), opts.negatives)
        if not full:
            raise BeirxError(f"no query has {opts.negatives} BM25 negatives; lower --negatives")
        examples = full
        queries = query_texts(dataset, examples)
        description = {**miner.describe(), "per_pair": opts.negatives}
    log.info("%s [%s/%s]: %d training pairs over %d queries", dataset.name, pack.code, opts.split, len(examples),
             len(queries))
    validation = (build_pool(dataset, opts.eval_split, opts.split, miner, opts.eval_candidates, positives)
                  if opts.eval_split else None)
    return TrainingData(dataset, pack.code, examples, queries, document_texts(dataset, examples), description,
                        dropped, validation)


def training_arguments(args_class, opts: TrainOptions, device: str, show_progress: bool, **extra):
    """The trainer's arguments: seeds, schedule, checkpoints every ``save_steps``, validation every
    ``eval_steps`` (default: at each checkpoint), progress, device."""
    if opts.eval_split:
        extra.update(eval_strategy="steps", eval_steps=opts.eval_steps or opts.save_steps,
                     per_device_eval_batch_size=opts.batch_size)
    return args_class(
        output_dir=str(checkpoints.checkpoint_dir(opts.output)), num_train_epochs=opts.epochs,
        max_steps=opts.max_steps, per_device_train_batch_size=opts.batch_size, learning_rate=opts.learning_rate,
        warmup_steps=opts.warmup_ratio if opts.warmup_ratio else 0, seed=opts.seed, data_seed=opts.seed,
        save_strategy="steps", save_steps=opts.save_steps, save_total_limit=opts.save_total_limit,
        logging_steps=opts.logging_steps, logging_first_step=True, report_to="none",
        disable_tqdm=not show_progress, use_cpu=device == "cpu", fp16=opts.fp16, **extra)


def prepare(opts: TrainOptions, show_progress: bool) -> tuple[TrainingData, ModelFiles, str]:
    """Checks, data and base model for a run: ``(data, base model files, device)``."""
    check_output(opts)
    base = resolve_model(opts.model)
    if opts.evaluate:  # before hours of training, not after
        evaluation.check_split(dataset_in_its_language(opts.dataset, opts.lang)[0], opts.evaluate)
    device = choose_device(opts.device)
    if device.startswith("cuda:"):
        raise BeirxError(f"--device {device}: choose GPUs with CUDA_VISIBLE_DEVICES (the trainer uses every "
                         "visible one)")
    return load_training_data(opts, show_progress), base, device


def fit(trainer, kind: str, opts: TrainOptions, data: TrainingData, base: ModelFiles, show_progress: bool,
        callbacks: tuple = ()) -> dict[str, Any]:
    """Train (resuming the same run's last checkpoint); return what the card records about the run."""
    checkpoints.claim(opts.output, {"kind": kind, "base_model": base.name, "base_revision": base.revision,
                                    "dataset_checksum": data.dataset.checksum(), "split": opts.split,
                                    "language": data.lang, **opts.training_parameters()})
    trainer_progress.configure(trainer, show_progress)
    trainer.add_callback(checkpoints.sealing_callback())  # before the caller's: a checkpoint is sealed first
    for callback in callbacks:
        trainer.add_callback(callback)
    resume = checkpoints.last_checkpoint(opts.output)
    if resume:
        log.info("resuming from %s", resume)
    start = time.perf_counter()
    output = trainer.train(resume_from_checkpoint=resume)
    if data.validation and not any(e["step"] == output.global_step for e in history(trainer.state.log_history)):
        trainer.evaluate()  # the card always holds the trained model's own validation score
    logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {"steps": output.global_step, "mean_loss_this_session": round(float(output.training_loss), 6),
            "last_logged_loss": round(float(logged[-1]), 6) if logged else None,
            "validation": history(trainer.state.log_history) if data.validation else None,
            "seconds_this_session": round(time.perf_counter() - start, 1),
            "resumed_from": Path(resume).name if resume else None, "device": str(trainer.args.device),
            "num_processes": trainer.args.world_size}


def finish(trainer, kind: str, opts: TrainOptions, data: TrainingData, base: ModelFiles, run: dict[str, Any],
           loss: dict[str, Any], prompts: dict[str, str], show_progress: bool = True) -> dict[str, Any]:
    """Save the model, write its card, drop the checkpoints (the main process only, when distributed); with
    ``--evaluate``, evaluate the base and the trained model and add both to the card. Return the card's record."""
    record = card.training_record(kind, base, data.describe(opts), opts.training_parameters(), loss,
                                  prompts, run)
    if trainer.is_world_process_zero():
        trainer.model.save_pretrained(str(opts.output), create_model_card=False)
        card.write_card(opts.output, record)
        checkpoints.finish(opts.output, opts.keep_checkpoints)
        log.info("saved the %s to %s", kind, opts.output)
        if opts.evaluate:
            record["evaluation"] = evaluation.evaluate_base_and_trained(
                kind, data.dataset, data.lang, opts.evaluate, opts.model, opts.output, show_progress)
            card.write_card(opts.output, record)
    return record
