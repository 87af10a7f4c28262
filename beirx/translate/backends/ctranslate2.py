"""CTranslate2: the same Hugging Face MT models (Marian, NLLB, M2M100), converted and quantised — the fast
path on CPU (int8 weights and matrix products; Klein et al., 2020, "Efficient and High-Quality Neural
Machine Translation with OpenNMT").

``--model`` is either a converted model folder (it holds ``model.bin``) or anything the ``hf`` backend
takes (Hub id or local folder). A Hugging Face model is converted on first use into
``$BEIRX_HOME/ct2/<name>-<revision>-<quantization>`` (atomically: a temp folder renamed when complete),
which is what this command does by hand::

    ct2-transformers-converter --model Helsinki-NLP/opus-mt-en-es --output_dir opus-mt-en-es-ct2 \\
        --quantization int8 --copy_files tokenizer_config.json vocab.json source.spm target.spm

The tokenizer is saved beside the converted weights, so a converted folder is self-contained. Language
codes follow the model family (see :mod:`beirx.translate.backends.seq2seq`): NLLB and M2M100 get their
target code as ``target_prefix``, Marian multi-target models a ``>>pol<<`` source prefix.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from beirx.errors import require
from beirx.models.checks import check_if_local
from beirx.models.device import choose_device
from beirx.models.files import folder_checksum, model_revision
from beirx.argtypes import non_negative_int, positive_int
from beirx.translate.backends.base import setting
from beirx.translate.backends.seq2seq import (ModelTokenizer, TokenizedTranslator, decoding_options, default_model,
                                           load_tokenizer)

log = logging.getLogger(__name__)


def is_converted(path: str | Path) -> bool:
    return (Path(path).expanduser() / "model.bin").is_file()


def convert(model: str, quantization: str = "int8", revision: str | None = None,
            source_revision: str | None = None) -> Path:
    """The converted folder of Hugging Face ``model`` in the cache, converting it first if needed
    (``source_revision``: the model's :func:`model_revision` when the caller has it already)."""
    from beirx.data.cache import cache_dir

    ctranslate2 = require("ctranslate2", "translate", "the ctranslate2 translator")
    source_revision = source_revision or model_revision(model, revision)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "--", str(model).strip("/"))[-80:]
    target = cache_dir("ct2") / f"{slug}-{source_revision.removeprefix('sha256:')[:12]}-{quantization}"
    if is_converted(target):
        return target
    log.info("converting %s to CTranslate2 (%s) into %s", model, quantization, target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        converter = ctranslate2.converters.TransformersConverter(str(model), revision=revision)
        converter.convert(str(tmp / "model"), quantization=quantization, force=True)
        load_tokenizer(model, revision).save_pretrained(str(tmp / "model"))
        try:
            os.replace(tmp / "model", target)
        except OSError:  # another process finished the same conversion first
            if not is_converted(target):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class CT2Translator(TokenizedTranslator):
    """Options: ``beam_size`` (4), ``max_decoding_length`` (default: the model's input limit),
    ``min_decoding_length`` (0), ``device`` (``auto``/``cpu``/``cuda``), ``compute_type`` (``auto``: int8 on
    CPU, int8_float16 on CUDA), ``quantization`` used when converting (int8), ``intra_threads`` (0: all
    cores), ``revision`` (Hub revision), ``src_code``/``tgt_code``, ``tokenizer`` (folder, when a
    converted model lacks one)."""

    name = "ctranslate2"
    max_batch_size = 32
    keeps_placeholders = False

    OPTIONS = (setting("beam_size", positive_int, 4), setting("max_decoding_length", positive_int),
               setting("min_decoding_length", non_negative_int, 0), setting("device", default="auto"),
               setting("compute_type", default="auto"), setting("quantization", default="int8"),
               setting("intra_threads", non_negative_int, 0), setting("revision", help="Hub revision of --model"),
               setting("src_code", help="the model's code of the source language"),
               setting("tgt_code", help="the model's code of the target language"),
               setting("tokenizer", help="the tokenizer's folder or Hub id (default: the model's)"))

    def __init__(self, src: str, tgt: str, model: str | None = None, *, beam_size: Any = 4,
                 max_decoding_length: Any = None, min_decoding_length: Any = 0, device: str = "auto",
                 compute_type: str = "auto", quantization: str = "int8", intra_threads: Any = 0,
                 revision: str | None = None, src_code: str | None = None, tgt_code: str | None = None,
                 tokenizer: str | None = None, **options: Any):
        model = model or default_model(src, tgt)
        super().__init__(src, tgt, model, **options)
        beam_size, max_decoding_length, min_decoding_length = decoding_options(
            self.name, beam_size, max_decoding_length, min_decoding_length, ("max_decoding_length", "min_decoding_length"))
        intra_threads = self.read_option("intra_threads", intra_threads, default=0)
        ctranslate2 = require("ctranslate2", "translate", "the ctranslate2 translator")
        max_positions = None
        if is_converted(model):
            folder = Path(model).expanduser()
            self._revision = folder_checksum(folder.resolve())
            self.quantization = None
        else:
            check_if_local(model, "seq2seq", "translation model", "the ctranslate2 translator")
            self._revision = model_revision(model, revision)
            folder = convert(model, quantization, revision, source_revision=self._revision)
            self.quantization = quantization
            transformers = require("transformers", "translate", "the ctranslate2 translator")
            max_positions = getattr(transformers.AutoConfig.from_pretrained(model, revision=revision),
                                    "max_position_embeddings", None)
        self.legacy_identity = (model, None if self.quantization is None else revision)
        self.device = choose_device(device, cuda_available=lambda: ctranslate2.get_cuda_device_count() > 0)
        self.compute_type = ("int8_float16" if self.device == "cuda" else "int8") if compute_type == "auto" \
            else compute_type
        self.net = ctranslate2.Translator(str(folder), device=self.device, compute_type=self.compute_type,
                                          intra_threads=intra_threads)
        self.tok = ModelTokenizer(load_tokenizer(tokenizer or str(folder)), src, tgt, src_code=src_code,
                                  tgt_code=tgt_code, max_positions=max_positions)
        self.beam_size = beam_size
        self.max_decoding_length = max_decoding_length or self.tok.max_tokens or 512
        self.min_decoding_length = min_decoding_length

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model, "revision": self._revision,
                "quantization": self.quantization, "compute_type": self.compute_type, **self.tok.describe(),
                "beam_size": self.beam_size, "max_decoding_length": self.max_decoding_length,
                "min_decoding_length": self.min_decoding_length}

    def translate_batch(self, segments: list[str]) -> list[str]:
        if not segments:
            return []
        ids = self.encode_checked(segments)
        convert_ids = self.tok.tokenizer.convert_ids_to_tokens
        prefix = [[self.tok.target_token]] * len(segments) if self.tok.target_token else None
        results = self.net.translate_batch([convert_ids(i) for i in ids], target_prefix=prefix,
                                           beam_size=self.beam_size, max_batch_size=len(segments),
                                           max_decoding_length=self.max_decoding_length,
                                           min_decoding_length=self.min_decoding_length)
        out = []
        for result in results:
            tokens = result.hypotheses[0]
            if prefix and tokens[:1] == [self.tok.target_token]:
                tokens = tokens[1:]
            out.append(self.tok.decode(self.tok.tokenizer.convert_tokens_to_ids(tokens)))
        return out
