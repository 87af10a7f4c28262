"""The parameters of a training run, shared by the bi-encoder and the cross-encoder trainers.

One dataclass so the CLI, the trainers, the checkpoint identity (:mod:`beirx.train.checkpoints`) and the
model card all see the same values. Defaults follow sentence-transformers' training examples: one epoch,
learning rate 2e-5 with 10 % linear warm-up, seed 42.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.errors import BeirxError

HARD_NEGATIVES = ("none", "bm25")
CROSS_ENCODER_LOSSES = ("bce", "listwise")  # beirx.train.cross_encoder
DEFAULT_CROSS_ENCODER_LOSS = "bce"
SAVE_STEPS = 500  # steps between checkpoints without a dev slice, and at most between them with one

#: Each numeric option: (field, the test it must pass, the requirement in words). NaN and infinity fail first.
NUMBERS = (
    ("epochs", lambda v: v >= 0, "0 or more (0 with --max-steps)"),
    ("max_steps", lambda v: v == -1 or v >= 1, "-1 (use --epochs) or at least 1"),
    ("batch_size", lambda v: v >= 1, "at least 1"),
    ("learning_rate", lambda v: v > 0, "more than 0"),
    ("warmup_ratio", lambda v: 0 <= v < 1, "in [0, 1)"),
    ("max_seq_length", lambda v: v >= 1, "at least 1"),
    ("seed", lambda v: 0 <= v < 2 ** 32, "between 0 and 2**32 - 1"),
    ("save_steps", lambda v: v >= 1, "at least 1"),
    ("save_total_limit", lambda v: v >= 1, "at least 1"),
    ("logging_steps", lambda v: v >= 1, "at least 1"),
    ("negatives", lambda v: v >= 1, "at least 1"),
    ("eval_steps", lambda v: v >= 1, "at least 1"),
    ("eval_candidates", lambda v: v >= 1, "at least 1"),
    ("mini_batch_size", lambda v: v >= 1, "at least 1"),
    ("scale", lambda v: v > 0, "more than 0"),
    ("max_memory", lambda v: v > 0, "more than 0 GB"),
    ("dev_fraction", lambda v: 0 <= v <= 0.5, "between 0 (no dev slice) and 0.5"),
    ("dev_max_queries", lambda v: v >= 1, "at least 1"),
)
INTEGERS = {"max_steps", "batch_size", "max_seq_length", "seed", "save_steps", "save_total_limit", "logging_steps",
            "negatives", "eval_steps", "eval_candidates", "mini_batch_size", "dev_max_queries"}


def flag(name: str) -> str:
    """The command-line flag of an option field (``learning_rate`` -> ``--learning-rate``)."""
    return "--" + name.replace("_", "-")


@dataclass
class TrainOptions:
    dataset: str
    model: str
    output: Path
    lang: str | None = None
    split: str = "train"
    epochs: float = 1.0
    max_steps: int = -1           # > 0 stops there (overrides epochs), as in transformers
    batch_size: int = 32
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    max_seq_length: int | None = None  # None: the model's own
    seed: int = 42
    save_steps: int | None = None  # None: SAVE_STEPS, or with a dev slice about a quarter of the run (selection)
    save_total_limit: int = 2
    logging_steps: int = 10
    hard_negatives: str = "none"
    negatives: int = 1
    device: str | None = None     # None: CUDA when available
    fp16: bool = False
    keep_checkpoints: bool = False
    overwrite: bool = False
    eval_split: str | None = None  # validate on this split during training (beirx.train.validation)
    eval_steps: int | None = None  # None: at every checkpoint (save_steps)
    eval_candidates: int = 50      # BM25 documents pooled per validation query
    mini_batch_size: int | None = None  # bi-encoder: texts per forward/backward pass (GradCache); None: 8
    scale: float | None = None    # bi-encoder: the loss's similarity scale, 1/temperature; None: the model family's
    max_memory: float | None = None  # GB the training may use at its peak (None: what is available at the start)
    evaluate: str | None = None   # after training, evaluate the base and the trained model on this split
    loss: str | None = None       # cross-encoder: CROSS_ENCODER_LOSSES; None: DEFAULT_CROSS_ENCODER_LOSS
    dev_fraction: float = 0.1     # share of the training queries held out to choose the checkpoint (0: none)
    dev_max_queries: int = 1000   # at most this many dev queries

    def __post_init__(self) -> None:
        """Every value checked before anything is read or written (a refused option leaves no checkpoint record):
        numbers finite and in range, NaN and infinity named by their flag."""
        self.output = Path(self.output)
        if self.hard_negatives not in HARD_NEGATIVES:
            raise BeirxError(f"--hard-negatives must be one of {', '.join(HARD_NEGATIVES)}, "
                             f"got {self.hard_negatives!r}")
        if self.loss is not None and self.loss not in CROSS_ENCODER_LOSSES:
            raise BeirxError(f"--loss must be one of {', '.join(CROSS_ENCODER_LOSSES)}, got {self.loss!r}")
        for name, holds, requirement in NUMBERS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise BeirxError(f"{flag(name)} must be a finite number, got {value!r}")
            if not holds(value):
                raise BeirxError(f"{flag(name)} must be {requirement}, got {value}")
            if name in INTEGERS and value != int(value):
                raise BeirxError(f"{flag(name)} must be a whole number, got {value}")
        if self.eval_split is not None and self.eval_split == self.split:
            raise BeirxError(f"--eval-split {self.eval_split} is the training split; validate on another one "
                             "(e.g. dev)")
        if self.evaluate is not None and self.evaluate == self.split:
            raise BeirxError(f"--evaluate {self.evaluate} is the training split: evaluate on a held-out split "
                             "(e.g. test)")
        if self.epochs <= 0 and self.max_steps <= 0:
            raise BeirxError("--epochs must be positive (or give --max-steps)")

    def training_parameters(self) -> dict[str, Any]:
        """What shapes the weights (for the card and the checkpoint identity); not paths or bookkeeping."""
        skip = {"dataset", "model", "output", "lang", "split", "keep_checkpoints", "overwrite", "device",
                "save_steps", "save_total_limit", "logging_steps", "eval_split", "eval_steps", "eval_candidates",
                "max_memory", "evaluate"}
        params = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip}
        if self.hard_negatives == "none":
            params.pop("negatives")
        if self.mini_batch_size is None:  # the cross-encoder has none; GradCache's size is recorded because
            params.pop("mini_batch_size")  # dropout's random masks follow how the batch is split
        if self.scale is None:  # the cross-encoder has none; the bi-encoder records the scale it chose
            params.pop("scale")
        if self.loss is None:  # the bi-encoder has one loss; the cross-encoder records the one it used
            params.pop("loss")
        return params
