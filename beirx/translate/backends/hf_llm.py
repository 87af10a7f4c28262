"""``--translator hf-llm``: a causal LM in this process through transformers, with its chat template.

The same units, prompts, validation, retries and fallback as ``openai``
(:class:`~beirx.translate.llm.translator.LLMTranslator`); only generation differs. Units ask for their
answers concurrently; the requests waiting at any moment are generated together in one padded batch
of up to ``batch_size`` by :func:`beirx.models.causal_lm.generate` (left padding, greedy decoding at
temperature 0; the model loaded once per process, as the LLM rerankers load theirs), on the GPU when there is
one. ``finish_reason`` is ``length`` when a row used all its ``max_tokens`` without reaching the end of its
turn, so truncation is detected as with a server. Usage counts the prompt's and the generated tokens.

Options besides the LLM ones: ``device`` (cpu, cuda, cuda:N; default cuda when available), ``batch_size``
(requests generated together, default 8).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Coroutine
from typing import Any

from beirx.models.device import choose_device
from beirx.models.files import model_revision, resolve_model
from beirx.models.llm import Reply, Request
from beirx.models.llm.loop import BackgroundLoop
from beirx.translate.llm.translator import LLMTranslator

log = logging.getLogger(__name__)


class HFLLMTranslator(LLMTranslator):
    name = "hf-llm"

    def __init__(self, src: str, tgt: str, model: str | None = None, *, device: str | None = None,
                 batch_size: int | str = 8, **options: Any):
        super().__init__(src, tgt, model, **options)
        self.device = choose_device(device)
        self.batch_size = int(batch_size)
        self.revision = model_revision(model)
        self.units_in_flight = 2 * self.batch_size
        self._loop = BackgroundLoop("beirx-hf-llm")
        self._waiting: list[tuple[Request, asyncio.Future]] = []
        self._drainer: asyncio.Task | None = None
        self._files = None  # the model's ModelFiles, resolved when first needed

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "revision": self.revision}

    def settings(self) -> dict[str, Any]:
        return {"device": self.device, "batch_size": self.batch_size, **super().settings()}

    def _schedule(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        return self._loop.submit(coroutine)

    async def generate(self, request: Request) -> Reply:
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((request, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        """Generate the waiting requests, ``batch_size`` at a time, until none is left."""
        while self._waiting:
            await asyncio.sleep(0)  # let the units that are ready ask first
            batch, self._waiting = self._waiting[:self.batch_size], self._waiting[self.batch_size:]
            try:
                replies = await asyncio.to_thread(self._generate, [request for request, _ in batch])
            except Exception as exc:  # noqa: BLE001 - every waiting unit gets the error
                for _, future in batch:
                    future.set_exception(exc)
                continue
            for (_, future), reply in zip(batch, replies):
                future.set_result(reply)

    def _generate(self, requests: list[Request]) -> list[Reply]:
        from beirx.models.causal_lm import causal_lm, generate

        if self._files is None:
            self._files = resolve_model(self.model)
        tokenizer, model = causal_lm(self._files, self.device)
        return generate(tokenizer, model, requests, self.device, temperature=self.prompts.temperature,
                        seed=self.prompts.seed)
