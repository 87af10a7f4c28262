"""SPLADE sparse encoding: a masked-language model turned into one weight per vocabulary term.

SPLADE (Formal, Lassance, Piwowarski & Clinchant 2021, "SPLADE v2", arXiv:2109.10086) reads a text with a
BERT-style masked-language model and keeps, for every vocabulary term ``j``,

    w_j = max_i  log(1 + ReLU(logit_ij)) * mask_i          (``pooling="max"``, SPLADE v2 / SPLADE++)
    w_j = sum_i  log(1 + ReLU(logit_ij)) * mask_i          (``pooling="sum"``, the first SPLADE, SIGIR 2021)

over the text's tokens ``i`` (``mask`` = attention mask, so padding never contributes). Most ``w_j`` are
zero; the non-zero ones are the text's sparse vector, and a query-document score is the dot product of the
two vectors. Because ``log(1 + ReLU(x))`` is increasing, max pooling takes the maximum *logit* first and
applies the activation once: the same weights, without a ``tokens x vocabulary`` activation tensor.

The logits tensor itself is ``batch x tokens x vocabulary`` floats (1 GB for 32 texts of 256 tokens and a
30k vocabulary), so a batch is split into sub-batches of at most :data:`LOGITS_BUDGET` bytes. The model is
loaded once per process (:func:`beirx.models.loaded.cached`), in fp16 on CUDA, fp32 on the CPU; weights
are always computed in fp32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from beirx.errors import BeirxError, require
from beirx.models.files import ModelFiles
from beirx.models.loaded import cached

POOLINGS = ("max", "sum")
LOGITS_BUDGET = 256 << 20  # bytes of MLM logits per forward pass


class SparseVector(NamedTuple):
    """Non-zero term weights of one text: vocabulary ids ascending (int32) and their weights (float32)."""

    ids: np.ndarray
    weights: np.ndarray


def masked_lm(files: ModelFiles, device: str, half: bool):
    """``(tokenizer, model)`` of a masked-language-model folder, loaded once per (folder, device, precision)."""
    def load():
        transformers = require("transformers", "neural", "SPLADE sparse retrieval")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(files.folder))
        try:
            model = transformers.AutoModelForMaskedLM.from_pretrained(str(files.folder))
        except ValueError as exc:  # a config without a masked-LM head (a plain encoder, a seq2seq model...)
            raise BeirxError(f"{files.name}: not a masked-language model, which SPLADE needs ({exc})") from exc
        if half:
            model.half()
        return tokenizer, model.to(device).eval()

    return cached(("masked-lm", str(files.folder), device, half), load)


class SpladeEncoder:
    """Texts -> :class:`SparseVector` with one SPLADE model (see the module docstring)."""

    def __init__(self, files: ModelFiles, device: str, pooling: str = "max"):
        if pooling not in POOLINGS:
            raise BeirxError(f"SPLADE pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        self.files = files
        self.device = device
        self.pooling = pooling
        self.half = device.startswith("cuda")
        self.tokenizer, self.model = masked_lm(files, device, self.half)
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])

    @property
    def precision(self) -> str:
        return "float16" if self.half else "float32"

    def token_lengths(self, texts: Sequence[str], max_length: int) -> list[int]:
        """Tokens per text after truncation (what a batch is padded to)."""
        return [len(ids) for ids in self.tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]

    def encode(self, texts: Sequence[str], max_length: int) -> list[SparseVector]:
        """The sparse vector of each text (truncated to ``max_length`` tokens), in order."""
        torch = require("torch", "neural", "SPLADE sparse retrieval")
        if not texts:
            return []
        inputs = self.tokenizer(list(texts), truncation=True, max_length=max_length, padding=True,
                                return_tensors="pt")
        rows_per_pass = max(1, LOGITS_BUDGET // (4 * self.vocab_size * inputs["input_ids"].shape[1]))
        out: list[SparseVector] = []
        for start in range(0, len(texts), rows_per_pass):
            part = {k: v[start:start + rows_per_pass].to(self.device) for k, v in inputs.items()}
            with torch.inference_mode():
                logits = self.model(**part).logits.float()
                mask = part["attention_mask"].unsqueeze(-1).bool()
                if self.pooling == "max":  # log1p(relu(.)) is increasing: pool the logits, activate once
                    pooled = torch.log1p(torch.relu(logits.masked_fill_(~mask, float("-inf")).amax(dim=1)))
                else:
                    pooled = (torch.log1p(torch.relu(logits)) * mask).sum(dim=1)
            out.extend(sparse_rows(pooled.cpu().numpy()))
        return out

    def token_vectors(self, texts: Sequence[str], max_length: int) -> list[SparseVector]:
        """Each text's word pieces (no special tokens) with weight = count: the query side of inference-free
        ("document-only") sparse models, which encode only documents."""
        encoded = self.tokenizer(list(texts), truncation=True, max_length=max_length, add_special_tokens=False)
        vectors = []
        for ids in encoded["input_ids"]:
            terms, counts = np.unique(np.asarray(ids, dtype=np.int32), return_counts=True)
            vectors.append(SparseVector(terms.astype(np.int32), counts.astype(np.float32)))
        return vectors


def sparse_rows(matrix: np.ndarray) -> list[SparseVector]:
    """The non-zero entries of each row of a dense ``texts x vocabulary`` weight matrix."""
    vectors = []
    for row in np.asarray(matrix, dtype=np.float32):
        ids = np.flatnonzero(row > 0).astype(np.int32)
        vectors.append(SparseVector(ids, row[ids]))
    return vectors
