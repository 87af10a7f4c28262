"""``--translator hf-llm``: a causal LM in this process through transformers, with its chat template.

The same units, prompts, validation, retries and fallback as ``openai``
(:class:`~beirx.translate.llm.translator.LLMTranslator`); only generation differs. Units ask for their
answers concurrently; the requests waiting at any moment are generated together in one padded batch
(left padding, greedy decoding at temperature 0) of up to ``batch_size``, on the GPU when there is one.
``finish_reason`` is ``length`` when a row used all its ``max_tokens`` without reaching the end of its
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

from beirx.errors import require
from beirx.models.device import choose_device
from beirx.models.files import model_revision
from beirx.models.llm import CHAT, Reply, Request, Usage
from beirx.models.llm.loop import BackgroundLoop
from beirx.models.loaded import cached
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

    def _load(self):
        def load():
            transformers = require("transformers", "neural", "the hf-llm translator")
            require("torch", "neural", "the hf-llm translator")
            tokenizer = transformers.AutoTokenizer.from_pretrained(self.model)
            tokenizer.padding_side = "left"
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            model = transformers.AutoModelForCausalLM.from_pretrained(self.model).to(self.device).eval()
            return tokenizer, model

        return cached(("causal-lm", str(self.model), self.device), load)

    def _generate(self, requests: list[Request]) -> list[Reply]:
        import torch

        tokenizer, model = self._load()
        if self.api == CHAT:
            prompts = [tokenizer.apply_chat_template(list(r.messages), tokenize=False, add_generation_prompt=True)
                       for r in requests]
        else:
            prompts = [r.prompt for r in requests]
        batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=self.api != CHAT)
        batch = batch.to(self.device)
        limit = max(r.max_tokens or 256 for r in requests)
        sampling = {"do_sample": False} if self.prompts.temperature == 0 else \
            {"do_sample": True, "temperature": self.prompts.temperature}
        if self.prompts.seed is not None:
            torch.manual_seed(self.prompts.seed)
        with torch.inference_mode():
            output = model.generate(**batch, max_new_tokens=limit, pad_token_id=tokenizer.pad_token_id, **sampling)
        generated = output[:, batch["input_ids"].shape[1]:]
        stops = set(_as_list(model.generation_config.eos_token_id)) | {tokenizer.eos_token_id}
        replies = []
        for request, row, mask in zip(requests, generated.tolist(), batch["attention_mask"]):
            replies.append(_reply(tokenizer, request, row, stops, int(mask.sum())))
        return replies


def _as_list(value) -> list[int]:
    return [] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]


def _reply(tokenizer, request: Request, row: list[int], stops: set[int], prompt_tokens: int) -> Reply:
    """One row's answer: up to its end of turn (``stop``) or its own ``max_tokens`` (``length``), cut at the
    request's stop strings."""
    limit = request.max_tokens or len(row)
    end = next((i for i, token in enumerate(row) if token in stops), None)
    if end is not None and end <= limit:
        kept, finish = row[:end], "stop"
    else:
        kept, finish = row[:limit], "length"
    text = tokenizer.decode(kept, skip_special_tokens=True)
    for stop in request.stop:
        if stop in text:
            text, finish = text[:text.index(stop)], "stop"
    return Reply(text, finish, Usage(prompt_tokens, len(kept)))
