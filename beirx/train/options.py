"""The parameters of a training run, shared by the bi-encoder and the cross-encoder trainers.

One dataclass so the CLI, the trainers, the checkpoint identity (:mod:`beirx.train.checkpoints`) and the
model card all see the same values. Defaults follow sentence-transformers' training examples: one epoch,
learning rate 2e-5 with 10 % linear warm-up, seed 42.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.errors import BeirxError

HARD_NEGATIVES = ("none", "bm25")
CROSS_ENCODER_LOSSES = ("bce", "listwise")  # beirx.train.cross_encoder
DEFAULT_CROSS_ENCODER_LOSS = "bce"


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
    save_steps: int = 500
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

    def __post_init__(self) -> None:
        self.output = Path(self.output)
        if self.hard_negatives not in HARD_NEGATIVES:
            raise BeirxError(f"--hard-negatives must be one of {', '.join(HARD_NEGATIVES)}, "
                             f"got {self.hard_negatives!r}")
        for name in ("batch_size", "save_steps", "logging_steps", "negatives", "save_total_limit", "eval_candidates",
                     "mini_batch_size"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise BeirxError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.eval_split is not None and self.eval_split == self.split:
            raise BeirxError(f"--eval-split {self.eval_split} is the training split; validate on another one "
                             "(e.g. dev)")
        if self.evaluate is not None and self.evaluate == self.split:
            raise BeirxError(f"--evaluate {self.evaluate} is the training split: evaluate on a held-out split "
                             "(e.g. test)")
        if self.eval_steps is not None and self.eval_steps < 1:
            raise BeirxError(f"--eval-steps must be at least 1, got {self.eval_steps}")
        if self.loss is not None and self.loss not in CROSS_ENCODER_LOSSES:
            raise BeirxError(f"--loss must be one of {', '.join(CROSS_ENCODER_LOSSES)}, got {self.loss!r}")
        if self.max_memory is not None and not self.max_memory > 0:
            raise BeirxError(f"--max-memory must be more than 0 GB, got {self.max_memory}")
        if self.scale is not None and not self.scale > 0:
            raise BeirxError(f"--scale must be more than 0, got {self.scale}")
        if self.max_seq_length is not None and self.max_seq_length < 1:
            raise BeirxError(f"--max-seq-length must be at least 1, got {self.max_seq_length}")
        if self.epochs <= 0 and self.max_steps <= 0:
            raise BeirxError("--epochs must be positive (or give --max-steps)")
        if not 0 <= self.warmup_ratio < 1:
            raise BeirxError(f"--warmup-ratio must be in [0, 1), got {self.warmup_ratio}")

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
