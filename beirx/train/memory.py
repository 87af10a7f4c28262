"""Training memory: the maximum length chosen from the data, and the peak estimated before the first step.

A training step on the CPU (or one GPU) keeps, for the backward pass, the activations of every sequence of the
largest forward pass; with a maximum length of 512 tokens that is about 0.7 GB per sequence at the peak for a
small 12-layer encoder (measured on CPU), so a batch of 32 (in-batch negatives) needs ~24 GB and the kernel kills
the run in the first step. The coefficients below were measured on CPU; on a GPU, whose kernels and allocator
differ, they are an approximation, checked against the GPU's free memory (:class:`Where`). Three things keep it
bounded and predictable:

* the bi-encoder encodes through GradCache (``--mini-batch-size``, :mod:`beirx.train.bi_encoder`): the
  activations of one mini-batch at a time, whatever the batch size;
* the maximum length, when not given, comes from the data (:func:`length_from_data`: the 99th percentile of the
  training texts' token lengths, prompts included, capped by the model), so short passages are not padded
  and budgeted at the model's limit;
* :func:`check_fits` estimates the peak before the first step and stops with a message naming options that fit.

The estimate: the process's resident memory now (weights, tokenizer, data) + 12 bytes per trainable parameter
(fp32 gradients and AdamW's two moments) + the peak a forward and backward pass adds for its sequences. The live
activations of one sequence of ``s`` tokens, per transformer layer (Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", Sec. 4.1, with fp32 activations and 1-byte dropout masks instead of
their 16-bit ones): ``s * h * (34 + 8 * i / h) + 9 * a * s**2`` bytes, ``h`` the hidden size, ``i`` the
feed-forward size, ``a`` the attention heads (:meth:`Shape.sequence_bytes`). The process's peak is higher than
what is live: the backward pass holds gradients of activations beside them, eager CPU dropout keeps fp32 masks,
and the allocator keeps freed memory between passes. Those were measured, not modelled
(``benchmarks/train_pass_memory.py``: the peak resident memory of a forward and backward pass of 1 to 32 sequences
of 128 to 512 tokens through multilingual-e5-small, CPU, torch 2.13, fitted by least squares): the per-token terms
take 2.24 times what is counted, an attention score 10.5 bytes instead of 9, and the allocator keeps about
0.53 GB (:meth:`Shape.peak_sequence_bytes`, :data:`RETAINED`). A training step holds more than one pass (the
GradCache pass without gradients, the trainer's data, the copy made when a checkpoint is saved), so the estimate
adds 25% (:data:`MARGIN`): on the README example (batch 32, mini-batch 8, 512 tokens, CPU) it says 9.8 GB, and the
whole run's peak resident memory was 9.4 GB; the live activations alone said 5.9 GB, and a run in 6 GiB that
estimate let start was killed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from beirx.errors import BeirxError

log = logging.getLogger(__name__)

LENGTH_PERCENTILE = 99
LENGTH_SAMPLE = 20_000  # texts per column whose tokens are counted (seeded sample of larger columns)
_GB = 1 << 30
# measured on CPU (benchmarks/train_pass_memory.py): see the module's docstring
TOKEN_OVERHEAD = 2.24   # peak / counted bytes of the per-token terms
SCORE_BYTES = 10.5      # peak bytes per attention score (counted: 9)
RETAINED = int(0.53 * _GB)  # freed memory the allocator keeps between passes
MARGIN = 1.25


def length_from_data(tokenizer, columns: Iterable[Sequence], prompts: Sequence[str], model_limit: int,
                     seed: int = 0) -> int:
    """The 99th percentile of the texts' token lengths (each column with its prompt), rounded up to a multiple
    of 8 and capped at ``model_limit``: the longest column decides. A column of ``(query, passage)`` pairs (a
    cross-encoder's input) is counted as the tokenizer joins each pair."""
    longest = 0
    rng = np.random.default_rng(seed)
    for texts, prompt in zip(columns, prompts):
        texts = list(texts)
        if len(texts) > LENGTH_SAMPLE:
            texts = [texts[i] for i in sorted(rng.choice(len(texts), LENGTH_SAMPLE, replace=False))]
        if not texts:
            continue
        if isinstance(texts[0], tuple):
            encoded = tokenizer([a for a, _ in texts], [b for _, b in texts], truncation=False)
        else:
            encoded = tokenizer([prompt + t for t in texts], truncation=False)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        longest = max(longest, int(np.percentile(lengths, LENGTH_PERCENTILE, method="higher")))
    return min(model_limit, max(8, math.ceil(longest / 8) * 8))


@dataclass(frozen=True)
class Shape:
    """What the activations of a transformer encoder depend on (from its Hugging Face config)."""

    layers: int
    hidden: int
    heads: int
    intermediate: int

    @classmethod
    def of(cls, config) -> Shape:
        hidden = int(getattr(config, "hidden_size", 0) or getattr(config, "d_model", 0))
        return cls(layers=int(getattr(config, "num_hidden_layers", 0) or getattr(config, "num_layers", 0)),
                   hidden=hidden, heads=int(getattr(config, "num_attention_heads", 0) or getattr(config, "num_heads", 1)),
                   intermediate=int(getattr(config, "intermediate_size", 0) or getattr(config, "d_ff", 0) or 4 * hidden))

    def sequence_bytes(self, tokens: int) -> int:
        """Activations kept for the backward pass of one sequence of ``tokens`` (Korthikanti et al., fp32)."""
        s, h, a = tokens, self.hidden, self.heads
        per_layer = s * h * (34 + 8 * self.intermediate / h) + 9 * a * s * s
        return int(self.layers * per_layer + 4 * s * h * 2)  # + the embedding output and the last hidden states

    def peak_sequence_bytes(self, tokens: int) -> int:
        """What one sequence of ``tokens`` adds to the peak of a forward and backward pass, as measured on CPU:
        the per-token terms of :meth:`sequence_bytes` x :data:`TOKEN_OVERHEAD`, :data:`SCORE_BYTES` per attention
        score."""
        s, h, a = tokens, self.hidden, self.heads
        per_layer = TOKEN_OVERHEAD * s * h * (34 + 8 * self.intermediate / h) + SCORE_BYTES * a * s * s
        return int(self.layers * per_layer + 4 * s * h * 2)

    def pass_bytes(self, sequences: int, tokens: int) -> int:
        """The peak a forward and backward pass of ``sequences`` x ``tokens`` adds, with :data:`MARGIN`."""
        return int(MARGIN * (sequences * self.peak_sequence_bytes(tokens) + RETAINED))


@dataclass(frozen=True)
class Estimate:
    resident: int       # the process now (weights, tokenizer, data)
    training_state: int  # gradients and optimizer moments
    activations: int

    @property
    def peak(self) -> int:
        return self.resident + self.training_state + self.activations


@dataclass(frozen=True)
class Where:
    """Where a training run's tensors live: the host's memory (CPU), or this process's CUDA device, whose memory
    the host's ``MemAvailable`` says nothing about."""

    device: str = "cpu"

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def in_use(self) -> int:
        """What the run holds now: the process's resident memory, or its tensors on the GPU."""
        if self.cuda:
            import torch

            return torch.cuda.memory_allocated(torch.cuda.current_device())
        return resident_bytes()

    def free(self) -> tuple[int | None, str]:
        """What it may still take, and how to name that in a message."""
        if self.cuda:
            import torch

            index = torch.cuda.current_device()
            return torch.cuda.mem_get_info(index)[0], f"the free memory of GPU {index}"
        return available_bytes(), "the memory available now"

    def peak(self) -> int:
        """The peak so far: ``VmHWM``, or what PyTorch's CUDA allocator has reserved at most."""
        if self.cuda:
            import torch

            return torch.cuda.max_memory_reserved(torch.cuda.current_device())
        return peak_resident_bytes()


def estimate(shape: Shape, trainable_params: int, sequences: int, tokens: int, resident: int | None = None,
             where: Where = Where()) -> Estimate:
    """Peak memory of a step whose largest forward pass holds ``sequences`` sequences of ``tokens`` tokens."""
    return Estimate(resident=where.in_use() if resident is None else resident,
                    training_state=12 * trainable_params, activations=shape.pass_bytes(sequences, tokens))


def resident_bytes() -> int:
    """This process's resident memory (Linux ``VmRSS``; 0 elsewhere)."""
    return _status_bytes("VmRSS:")


def peak_resident_bytes() -> int:
    """This process's peak resident memory so far (Linux ``VmHWM``; 0 elsewhere). Not ``ru_maxrss``
    (:func:`beirx.artifacts.efficiency.peak_rss_bytes`): ``VmHWM`` starts again from the resident memory when
    ``5`` is written to ``/proc/self/clear_refs``, so ``benchmarks/train_pass_memory.py`` can measure pass by pass."""
    return _status_bytes("VmHWM:")


def _status_bytes(key: str) -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next((int(line.split()[1]) * 1024 for line in fh if line.startswith(key)), 0)
    except OSError:  # pragma: no cover - not Linux
        return 0


def first_step_logger(found: Estimate, where: Where = Where()):
    """A ``TrainerCallback`` logging the measured peak after the session's first two steps (the second is the
    first with the optimizer's state) beside the estimate."""
    from transformers import TrainerCallback

    class FirstStepsPeak(TrainerCallback):
        steps = 0

        def on_step_end(self, args, state, control, **kwargs):
            self.steps += 1
            if self.steps <= 2:
                log.info("training memory: step %d of this session peaked at %s %s (estimated %s)",
                         state.global_step, _gb(where.peak()), "on the GPU" if where.cuda else "resident",
                         _gb(found.peak))

    return FirstStepsPeak()


def available_bytes() -> int | None:
    """Memory this process may still take: the kernel's ``MemAvailable``, bounded by the limit of the process's
    own memory cgroup (v2 ``memory.max`` or v1 ``memory.limit_in_bytes``, found through ``/proc/self/cgroup``)."""
    found = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            found += [int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:")]
        with open("/proc/self/cgroup", encoding="ascii") as fh:
            groups = [line.rstrip("\n").split(":", 2) for line in fh]
    except OSError:  # pragma: no cover - not Linux
        return min(found) if found else None
    for _, controllers, path in groups:
        if controllers == "":
            files = (f"/sys/fs/cgroup{path}/memory.max", f"/sys/fs/cgroup{path}/memory.current")
        elif "memory" in controllers.split(","):
            files = (f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes",
                     f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes")
        else:
            continue
        try:
            with open(files[0], encoding="ascii") as a, open(files[1], encoding="ascii") as b:
                limit, usage = a.read().strip(), int(b.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:
            found.append(int(limit) - usage)
    return min(found) if found else None


def _gb(n: int) -> str:
    return f"{n / _GB:.1f} GB"


def check_fits(shape: Shape, trainable_params: int, sequences: int, tokens: int, max_memory_gb: float | None,
               sequences_flag: str, length_flag: str = "--max-seq-length", resident: int | None = None,
               where: Where = Where()) -> Estimate:
    """The estimate for this step; a :class:`BeirxError` naming options that fit when it does not.

    ``max_memory_gb``: the budget (``--max-memory``); by default what is free now (:meth:`Where.free`: the host's
    available memory, or the GPU's) plus what the run already holds. ``sequences_flag`` is the option that sets
    ``sequences`` (``--mini-batch-size`` for the bi-encoder, ``--batch-size`` for the cross-encoder).
    """
    found = estimate(shape, trainable_params, sequences, tokens, resident, where)
    if max_memory_gb is not None:
        budget = int(max_memory_gb * _GB)
        source = f"--max-memory {max_memory_gb:g}"
    else:
        free, source = where.free()
        if free is None:
            return found
        budget = found.resident + free
    log.info("training memory: about %s at the peak (resident %s, gradients and optimizer %s, a forward and "
             "backward pass of %d sequences x %d tokens %s); budget %s (%s)", _gb(found.peak), _gb(found.resident),
             _gb(found.training_state), sequences, tokens, _gb(found.activations), _gb(budget), source)
    if found.peak <= budget:
        return found
    fixed = found.resident + found.training_state
    options = []
    room = budget - fixed
    if room > 0:
        fit_sequences = next((n for n in range(sequences - 1, 0, -1) if shape.pass_bytes(n, tokens) <= room), 0)
        if fit_sequences:
            options.append(f"{sequences_flag} {fit_sequences} (about "
                           f"{_gb(fixed + shape.pass_bytes(fit_sequences, tokens))})")
        fit_tokens = next((t for t in range(tokens - 8, 7, -8) if shape.pass_bytes(sequences, t) <= room), None)
        if fit_tokens:
            options.append(f"{length_flag} {fit_tokens} (about "
                           f"{_gb(fixed + shape.pass_bytes(sequences, fit_tokens))})")
    what = (f"training needs about {_gb(found.peak)} at its peak ({_gb(fixed)} for the model, its gradients and "
            f"optimizer state; {_gb(found.activations)} for a forward and backward pass of {sequences} sequences x "
            f"{tokens} tokens), more than {source} allows ({_gb(budget)})")
    if not options:
        raise BeirxError(f"{what}; the model alone does not fit: train on a machine with more memory or a smaller "
                         "model")
    raise BeirxError(f"{what}; nothing was trained. Options that fit: {', or '.join(options)}")
