"""Hugging Face seq2seq translation through transformers: MarianMT (opus-mt, opus-mt-tc), NLLB-200, M2M100.

``--model`` is a Hub id or a local folder (both go through ``from_pretrained``); the revision recorded is
:func:`beirx.models.files.model_revision` (the Hub commit, or a hash of the folder's files), the one
beirx records everywhere; the device is :func:`beirx.models.device.choose_device`'s. Decoding
is deterministic: greedy (``beam_size=1``) or beam search (default 4 beams). On CUDA the model runs in
float16 unless ``dtype`` says otherwise. Inputs are never truncated: a segment over the model's limit
is refused (the pipeline splits long sentences before they get here).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from beirx.errors import BeirxError, require
from beirx.models.checks import check_if_local
from beirx.models.device import choose_device
from beirx.models.files import model_revision
from beirx.argtypes import non_negative_int, positive_int
from beirx.translate.backends.base import setting
from beirx.translate.backends.seq2seq import (ModelTokenizer, TokenizedTranslator, decoding_options, default_model,
                                           load_tokenizer)

log = logging.getLogger(__name__)


class HFTranslator(TokenizedTranslator):
    """Options: ``beam_size`` (4), ``max_new_tokens`` (default: the model's input limit),
    ``min_new_tokens`` (0), ``device`` (``auto``/``cpu``/``cuda``), ``dtype`` (``auto``: float16 on CUDA,
    float32 on CPU), ``revision`` (Hub revision), ``src_code``/``tgt_code`` (model language codes)."""

    name = "hf"
    max_batch_size = 16
    model_kind = "seq2seq"
    keeps_placeholders: ClassVar[bool] = False

    OPTIONS = (setting("beam_size", positive_int, 4), setting("max_new_tokens", positive_int),
               setting("min_new_tokens", non_negative_int, 0), setting("device", default="auto"),
               setting("dtype", default="auto"), setting("revision", help="Hub revision of --model"),
               setting("src_code", help="the model's code of the source language"),
               setting("tgt_code", help="the model's code of the target language"))

    def __init__(self, src: str, tgt: str, model: str | None = None, *, beam_size: Any = 4,
                 max_new_tokens: Any = None, min_new_tokens: Any = 0, device: str = "auto", dtype: str = "auto",
                 revision: str | None = None, src_code: str | None = None, tgt_code: str | None = None,
                 **options: Any):
        model = model or default_model(src, tgt)
        super().__init__(src, tgt, model, **options)
        check_if_local(model, self.model_kind, "translation model", "the hf translator")
        beam_size, max_new_tokens, min_new_tokens = decoding_options(self.name, beam_size, max_new_tokens, min_new_tokens)
        torch = require("torch", "translate", "the hf translator")
        transformers = require("transformers", "translate", "the hf translator")
        self.device = choose_device(device)
        self.dtype = ("float16" if self.device.startswith("cuda") else "float32") if dtype == "auto" else dtype
        try:
            self.net = transformers.AutoModelForSeq2SeqLM.from_pretrained(
                model, revision=revision, dtype=getattr(torch, self.dtype)).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise BeirxError(f"cannot load the translation model {model!r}: {exc}. "
                             "Offline, pass a local model folder.") from exc
        self.tok = ModelTokenizer(load_tokenizer(model, revision), src, tgt, src_code=src_code, tgt_code=tgt_code,
                                  max_positions=getattr(self.net.config, "max_position_embeddings", None))
        self.beam_size = beam_size
        self.max_new_tokens = max_new_tokens or self.tok.max_tokens or 512
        self.min_new_tokens = min_new_tokens
        self._revision = model_revision(model, revision)
        self.legacy_identity = (model, None)
        self._torch = torch

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model, "revision": self._revision,
                "architecture": type(self.net).__name__, **self.tok.describe(), "beam_size": self.beam_size,
                "max_new_tokens": self.max_new_tokens, "min_new_tokens": self.min_new_tokens, "dtype": self.dtype}

    def translate_batch(self, segments: list[str]) -> list[str]:
        if not segments:
            return []
        ids = self.encode_checked(segments)
        pad = self.tok.tokenizer.pad_token_id
        width = max(len(i) for i in ids)
        torch = self._torch
        # Right padding with an attention mask, as the tokenizer's own padding would do.
        input_ids = torch.tensor([i + [pad] * (width - len(i)) for i in ids], device=self.device)
        mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i in ids], device=self.device)
        kwargs = {"num_beams": self.beam_size, "do_sample": False, "max_new_tokens": self.max_new_tokens,
                  "min_new_tokens": self.min_new_tokens}
        if self.tok.target_token_id is not None:
            kwargs["forced_bos_token_id"] = self.tok.target_token_id
        with torch.inference_mode():
            out = self.net.generate(input_ids=input_ids, attention_mask=mask, **kwargs)
        eos = self.net.generation_config.eos_token_id
        eos = set(eos) if isinstance(eos, (list, tuple)) else {eos}
        cut = sum(1 for row in out.tolist() if len(row) > self.max_new_tokens and not eos.intersection(row[1:]))
        if cut and self.min_new_tokens < self.max_new_tokens:
            log.warning("%d of %d translations reached max_new_tokens=%d without ending; raise it with "
                        "--translator-option max_new_tokens=N", cut, len(segments), self.max_new_tokens)
        return [self.tok.decode(row) for row in out]
