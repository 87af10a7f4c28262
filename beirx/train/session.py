"""What the bi-encoder and cross-encoder trainers share: the data, the trainer's arguments, resuming, saving.

Flow of a run (both trainers): every check that needs no training first (options, output folder, the base
model's folder and kind, the splits and paths of ``--evaluate``) -> examples from the split's qrels, less a
held-out dev slice (:mod:`beirx.train.selection`), and BM25 negatives -> the model -> the trainer -> the base
evaluated on the dev slice -> train, resuming from the last checkpoint of the same run, each checkpoint evaluated
-> the best of base and checkpoints kept -> save the model and its card -> drop the checkpoints -> with
``--evaluate``, base and result on a held-out split. A rerun of a finished command completes what is missing (an
evaluation a kill cut short) and trains nothing. Reproducibility: one seed for the trainer's model
initialisation (a new classification head) and for the data order (``seed`` and ``data_seed``).
Devices: the trainer's own (all visible GPUs; ``torchrun --nproc_per_node N -m beirx train ...`` for
distributed data parallel; the CPU with ``--device cpu`` or when there is no GPU).
"""

from __future__ import annotations

import json
import logging
import math
import os
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
from beirx.models.checks import checked_model
from beirx.models.device import choose_device
from beirx.models.files import ModelFiles, max_seq_length
from beirx.train import card, checkpoints, evaluation, selection, trainer_progress
from beirx.train.examples import Example, all_judged_positives, document_texts, positive_pairs, query_texts
from beirx.train.negatives import BM25Miner
from beirx.train.options import SAVE_STEPS, TrainOptions
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
    dev: selection.DevSlice | None = None  # the queries held out to choose the checkpoint
    no_dev: str | None = None  # why there is no dev slice
    bm25: Any = None  # the indexed BM25 retriever when one was built (mining, validation, a large dev corpus)

    def describe(self, opts: TrainOptions) -> dict[str, Any]:
        return {"dataset": self.dataset.name, "source": self.dataset.source, "checksum": self.dataset.checksum(),
                "language": self.lang, "split": opts.split, "num_pairs": len(self.examples),
                "num_queries": len(self.queries), "num_documents": len(self.docs),
                "pairs_without_enough_negatives": self.dropped, "hard_negatives": self.negatives,
                "validation": self.validation.describe(opts.eval_candidates) if self.validation else None,
                "dev": self.dev.describe() if self.dev else {"none": self.no_dev}}


def require_training() -> None:
    """Fail before any work when the ``train`` extra is missing (naming it)."""
    for module in ("sentence_transformers", "datasets", "accelerate"):
        require(module, "train", "training models")


def check_output(opts: TrainOptions) -> None:
    """A new or resumable output folder; a model already there is :func:`finished_run`'s to judge."""
    out = opts.output
    if not out.exists():
        return
    if not out.is_dir():
        raise BeirxError(f"--output {out} is a file, not a folder")
    if opts.overwrite:
        checkpoints.finish(out, keep=False)
        return
    if read_front_matter(out / "README.md").get(card.KEY) or checkpoints.checkpoint_dir(out).is_dir():
        return  # a finished model (finished_run decides) or a run that was stopped: it resumes
    others = [p.name for p in out.iterdir() if p.name != checkpoints.FOLDER]
    if others:
        raise BeirxError(f"--output {out} is not empty ({', '.join(sorted(others)[:3])} ...); pass a new folder")


def identity(kind: str, opts: TrainOptions, base: ModelFiles, checksum: str, lang: str) -> dict[str, Any]:
    """What makes two runs the same run: the checkpoints' record, and what a finished model's card is compared on."""
    return json.loads(json.dumps({"kind": kind, "base_model": base.name, "base_revision": base.revision,
                                  "dataset_checksum": checksum, "split": opts.split, "language": lang,
                                  **opts.training_parameters()}, default=str))


def _card_identity(record: dict[str, Any]) -> dict[str, Any]:
    data = record["training_data"]
    return {"kind": record["kind"], "base_model": record["base_model"]["name"],
            "base_revision": record["base_model"]["revision"], "dataset_checksum": data["checksum"],
            "split": data["split"], "language": data["language"], **record["parameters"]}


def finished_run(kind: str, opts: TrainOptions, base: ModelFiles, dataset: BeirDataset,
                 lang: str) -> dict[str, Any] | None:
    """The card's record when ``opts.output`` holds the model this same command trains (then nothing is trained
    again); None when it holds none. A model of another run is refused unless ``--overwrite``."""
    record = read_front_matter(opts.output / "README.md").get(card.KEY) if not opts.overwrite else None
    if not record:
        return None
    wanted = identity(kind, opts, base, dataset.checksum(), lang)
    found = _card_identity(record)
    if found != wanted:
        changed = sorted(k for k in set(found) | set(wanted) if found.get(k) != wanted.get(k))
        raise BeirxError(f"{opts.output} already holds a model trained by beirx with a different "
                         f"{', '.join(changed)}; pass --overwrite to train again, or another --output")
    return record


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
    """Pairs from ``opts.split``'s qrels less the dev slice's queries and, with ``--hard-negatives bm25``,
    ``opts.negatives`` each; the validation pool with ``--eval-split``. One BM25 index serves all."""
    dataset, pack = pack_and_dataset(opts)
    examples, dev, no_dev = selection.hold_out(dataset, opts.split, positive_pairs(dataset, opts.split),
                                               opts.dev_fraction, opts.dev_max_queries, opts.seed)
    if dev and opts.eval_steps and opts.save_steps and opts.save_steps != opts.eval_steps:
        raise BeirxError(f"--eval-steps {opts.eval_steps} and --save-steps {opts.save_steps}: with a dev slice every "
                         "validation is a checkpoint evaluated on it, so give one of them (or --dev-fraction 0)")
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
    data = TrainingData(dataset, pack.code, examples, queries, document_texts(dataset, examples), description,
                        dropped, validation, dev, no_dev, miner.retriever if miner else None)
    if dev:
        selection.restrict_corpus(dev, dataset, data.bm25 or (lambda: _bm25(data, pack, show_progress)))
    return data


def _bm25(data: TrainingData, pack: LanguagePack, show_progress: bool):
    """The language's BM25 over the corpus, built once (a first stage, or a large dev corpus's pool)."""
    if data.bm25 is None:
        data.bm25 = BM25Miner(data.dataset, pack, show_progress).retriever
    return data.bm25


def dev_scorer(kind: str, data: TrainingData, base: ModelFiles, opts: TrainOptions, device: str, max_length: int,
               show_progress: bool):
    """``score(model, base=False)`` on the dev slice for ``kind`` (None without a dev slice)."""
    if data.dev is None:
        return None
    from beirx.data.catalogue import ignore_identical_ids_for

    pack = get_pack(data.lang)
    ignore = ignore_identical_ids_for(data.dataset.name)
    if kind == "bi-encoder":
        return selection.dense_scorer(data.dev, data.dataset, pack, base, opts.batch_size, device, ignore,
                                      show_progress)
    return selection.rerank_scorer(data.dev, data.dataset, pack, base, _bm25(data, pack, show_progress),
                                   opts.batch_size, max_length, device, ignore, show_progress)


def checkpoint_spacing(opts: TrainOptions, rows: int, device: str) -> int:
    """Steps between checkpoints: ``--save-steps``; else, with a dev slice, ``--eval-steps`` (every validation is a
    checkpoint) or about a quarter of the run (:data:`~beirx.train.selection.CHECKPOINTS` evaluations), at most
    :data:`SAVE_STEPS`."""
    if opts.save_steps:
        return opts.save_steps
    if not opts.dev_fraction:
        return SAVE_STEPS
    if opts.eval_steps:
        return opts.eval_steps
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    if device == "cuda" and processes == 1:
        import torch

        processes = max(1, torch.cuda.device_count())  # one process, the batch split over every GPU
    total = opts.max_steps if opts.max_steps > 0 else math.ceil(math.ceil(rows / (opts.batch_size * processes))
                                                                 * opts.epochs)
    return max(1, min(SAVE_STEPS, math.ceil(total / selection.CHECKPOINTS)))


def training_arguments(args_class, opts: TrainOptions, device: str, show_progress: bool, rows: int,
                       dev: bool = False, **extra):
    """The trainer's arguments: seeds, schedule, checkpoints every :func:`checkpoint_spacing` steps
    (``rows``: training rows), validation every ``eval_steps`` (default: at each checkpoint), the dev slice's
    nDCG@10 tracked as the best metric (the best checkpoint survives the rotation), progress, device."""
    save_steps = checkpoint_spacing(opts, rows, device)
    if opts.eval_split or dev:
        extra.update(eval_strategy="steps", eval_steps=opts.eval_steps or save_steps,
                     per_device_eval_batch_size=opts.batch_size)
    if dev:
        extra.update(metric_for_best_model=selection.BEST, greater_is_better=True)
    return args_class(
        output_dir=str(checkpoints.checkpoint_dir(opts.output)), num_train_epochs=opts.epochs,
        max_steps=opts.max_steps, per_device_train_batch_size=opts.batch_size, learning_rate=opts.learning_rate,
        warmup_steps=opts.warmup_ratio if opts.warmup_ratio else 0, seed=opts.seed, data_seed=opts.seed,
        save_strategy="steps", save_steps=save_steps, save_total_limit=opts.save_total_limit,
        logging_steps=opts.logging_steps, logging_first_step=True, report_to="none",
        disable_tqdm=not show_progress, use_cpu=device == "cpu", fp16=opts.fp16, **extra)


@dataclass
class Prepared:
    """What a run starts from once every check passed: the data (None when ``finished``), base files, device."""

    data: TrainingData | None
    base: ModelFiles
    device: str
    finished: dict[str, Any] | None = None  # the card's record when this command already trained the model


BASE_KINDS = {"bi-encoder": "bi-encoder", "cross-encoder": "encoder"}  # beirx.models.checks kinds of a base


def prepare(opts: TrainOptions, show_progress: bool, kind: str = "bi-encoder") -> Prepared:
    """Every check that needs no training, in order, then the data: the output folder, the base model's folder
    and kind, the device, the ``--evaluate`` and ``--eval-split`` splits and paths, a finished model."""
    check_output(opts)
    base = checked_model(opts.model, BASE_KINDS[kind], None, "--model", f"beirx train {kind}")
    if opts.max_seq_length and opts.max_seq_length > max_seq_length(base):
        raise BeirxError(f"--max-seq-length {opts.max_seq_length} is more than {base.folder} can read "
                         f"({max_seq_length(base)} tokens)")
    device = choose_device(opts.device)
    if device.startswith("cuda:"):
        raise BeirxError(f"--device {device}: choose GPUs with CUDA_VISIBLE_DEVICES (the trainer uses every "
                         "visible one)")
    dataset, lang = dataset_in_its_language(opts.dataset, opts.lang)
    if opts.eval_split:
        evaluation.check_split(dataset, opts.eval_split, "--eval-split")
    if opts.evaluate:  # before hours of training, not after
        evaluation.check_before(kind, dataset, opts.evaluate, base, opts.output)
    finished = finished_run(kind, opts, base, dataset, lang)
    if finished is not None:
        return Prepared(None, base, device, finished)
    return Prepared(load_training_data(opts, show_progress), base, device)


def resume_finished(kind: str, opts: TrainOptions, prepared: Prepared, show_progress: bool) -> dict[str, Any]:
    """A model this command already trained: finish what a kill cut short (the evaluation, the removal of the
    checkpoints) and return its record; nothing is trained again."""
    record = prepared.finished
    checkpoints.finish(opts.output, opts.keep_checkpoints)
    done = (record.get("evaluation") or {}).get("split")
    if opts.evaluate and done != opts.evaluate:
        log.info("%s holds the model of this command; evaluating it on %s", opts.output, opts.evaluate)
        dataset, _ = dataset_in_its_language(opts.dataset, opts.lang)
        record["evaluation"] = evaluation.evaluate_base_and_trained(kind, dataset, record["training_data"]["language"],
                                                                    opts.evaluate, opts.model, opts.output,
                                                                    show_progress)
        card.write_card(opts.output, record)
    else:
        log.info("%s already holds the model of this command%s: nothing to do", opts.output,
                 f", evaluated on {done}" if done else "")
    record["resumed"] = "evaluation" if opts.evaluate and done != opts.evaluate else "nothing to do"
    return record


def fit(trainer, kind: str, opts: TrainOptions, data: TrainingData, base: ModelFiles, show_progress: bool,
        callbacks: tuple = (), score=None) -> dict[str, Any]:
    """Train (resuming the same run's last checkpoint) and, with a dev slice (``score``: :func:`dev_scorer`'s),
    keep the best of the base and the checkpoints in ``trainer.model``; return what the card records."""
    checkpoints.claim(opts.output, identity(kind, opts, base, data.dataset.checksum(), data.lang))
    trainer_progress.configure(trainer, show_progress)
    trainer.add_callback(checkpoints.sealing_callback())  # before the caller's: a checkpoint is sealed first
    for callback in callbacks:
        trainer.add_callback(callback)
    base_scores = None
    if score is not None:
        base_scores = checkpoints.base_scores(opts.output)
        if base_scores is None:
            log.info("evaluating the base model on the dev slice (%d queries)", len(data.dev.queries))
            base_scores = score(trainer.model, True)
            if trainer.is_world_process_zero():  # one copy, however many processes train
                checkpoints.save_base(trainer, opts.output, base_scores)
        log.info("dev nDCG@10 of the base model: %.4f", base_scores[selection.METRIC])
    resume = checkpoints.last_checkpoint(opts.output)
    if resume:
        log.info("resuming from %s", resume)
    start = time.perf_counter()
    output = trainer.train(resume_from_checkpoint=resume)
    if data.validation and not any(e["step"] == output.global_step for e in history(trainer.state.log_history)):
        trainer.evaluate()  # the card always holds the trained model's own validation score
    logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    chosen = keep_best(trainer, opts, base_scores, output.global_step) if score is not None else None
    return {"steps": output.global_step, "mean_loss_this_session": round(float(output.training_loss), 6),
            "last_logged_loss": round(float(logged[-1]), 6) if logged else None,
            "validation": history(trainer.state.log_history) if data.validation else None,
            "selection": chosen, "save_steps": trainer.args.save_steps,
            "seconds_this_session": round(time.perf_counter() - start, 1),
            "resumed_from": Path(resume).name if resume else None, "device": str(trainer.args.device),
            "num_processes": trainer.args.world_size}


def keep_best(trainer, opts: TrainOptions, base_scores: dict[str, float], last_step: int) -> dict[str, Any]:
    """Load the best of the base and the checkpoints on the dev slice into ``trainer.model``; return the curve
    and the choice."""
    points = selection.curve(base_scores, trainer.state.log_history)
    kept = selection.best(points)
    if kept["step"] == 0:
        load_weights(trainer.model, checkpoints.base_dir(opts.output))
    elif kept["step"] != last_step:
        load_weights(trainer.model, checkpoints.step_dir(opts.output, kept["step"]))
    line = selection.verdict(points, kept)
    log.log(logging.WARNING if kept["step"] == 0 else logging.INFO, line)
    return {"metric": "nDCG@10 on the dev slice", "curve": points, "kept": kept["model"], "kept_step": kept["step"],
            "verdict": line}


def load_weights(model, folder: Path) -> None:
    """Copy the weights saved in ``folder`` (a checkpoint or the saved base of the same model) into ``model``.

    The saved folder is loaded with the model's own class (``SentenceTransformer`` or ``CrossEncoder``: their
    public constructors) on the CPU, and its state dict copied into ``model``'s parameters in place, so the
    trainer, its device and dtype stay as they are: what sentence-transformers' trainers do when they load the
    best model at the end of training.
    """
    loaded = type(model)(str(folder), device="cpu", trust_remote_code=getattr(model, "trust_remote_code", False))
    model.load_state_dict(loaded.state_dict())


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
