"""``--translator hf-llm``: a causal LM in this process through transformers, with its chat template.

The same units, prompts, validation, retries and fallback as ``openai``
(:class:`~beirx.translate.llm.translator.LLMTranslator`); only where answers come from differs:
:class:`beirx.models.llm.LocalLLM` generates the requests waiting at any moment together, in one padded batch
of up to ``batch_size`` (greedy at temperature 0), on the GPU when there is one. ``finish_reason`` is
``length`` when a row used all its ``max_tokens`` without reaching the end of its turn, so truncation is
detected as with a server. Usage counts the prompt's and the generated tokens.

Options besides the LLM ones (of the connection's, only ``backend``, the prices and ``max_cost``: a server's
are refused by name): ``device`` (cpu, cuda, cuda:N; default cuda when available), ``batch_size``
(requests generated together, default 8).
"""

from __future__ import annotations

from typing import Any

from beirx.argtypes import option, positive_int
from beirx.models.checks import check_if_local
from beirx.models.files import model_revision
from beirx.models.llm import LocalLLM
from beirx.models.llm.connection import LOCAL
from beirx.translate.backends.base import setting
from beirx.translate.llm.translator import LLMTranslator


class HFLLMTranslator(LLMTranslator):
    name = "hf-llm"
    llm_backend = LOCAL
    model_kind = "causal-lm"
    OPTIONS = (*LLMTranslator.OPTIONS, setting("device"), setting("batch_size", positive_int, default=8))

    def __init__(self, src: str, tgt: str, model: str | None = None, *, device: str | None = None,
                 batch_size: int | str = 8, **options: Any):
        check_if_local(model, self.model_kind, "translation model", "the hf-llm translator")  # before its tokenizer
        super().__init__(src, tgt, model, **options)
        self.llm = LocalLLM(model, device=device, batch_size=option(self.name, "batch_size", batch_size, positive_int),
                            meter=self.connection.meter(), flag="translation model",
                            needed_by="the hf-llm translator")
        self.device, self.batch_size = self.llm.device, self.llm.batch_size
        self.revision = model_revision(model)
        self.units_in_flight = 2 * self.batch_size

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "revision": self.revision}

    def settings(self) -> dict[str, Any]:
        return {"device": self.device, "batch_size": self.batch_size, **super().settings()}
