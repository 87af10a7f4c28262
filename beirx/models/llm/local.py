"""The in-process :class:`~beirx.models.llm.protocol.LLM`: a causal LM through transformers, batched.

Callers ask concurrently, as they would a server (:meth:`LocalLLM.acall` from the process's LLM loop, or
:meth:`LocalLLM.call_many`); the requests waiting at any moment are generated together in one padded batch of
up to ``batch_size`` by :func:`beirx.models.causal_lm.generate` (left padding; greedy at temperature 0, else
sampled with the request's seed), in a worker thread so the loop keeps collecting requests. ``finish_reason``
is ``length`` when a row used all its ``max_tokens`` without reaching the end of its turn, so truncation is
detected as with a server; usage counts the prompt's and the generated tokens, into the same
:class:`~beirx.models.llm.usage.UsageMeter` (and ``max_cost``) a server's client would use. Label
log-probabilities (:meth:`LocalLLM.label_logprobs`) are metered as the server's one-token answers are: each
prompt's tokens read and one token, reserved against the cap before the pass and settled after it. The model is
loaded once per process (:func:`beirx.models.causal_lm.causal_lm`), on the GPU when there is one.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

from beirx.errors import BeirxError
from beirx.models.llm.calls import Reply, Request
from beirx.models.llm.protocol import LLM
from beirx.models.llm.usage import Usage, UsageMeter


class LocalLLM(LLM):
    """``LocalLLM("path/or/hub-id", device="cpu", batch_size=8)``: the same calls as :class:`LLMClient`."""

    backend = "transformers"

    def __init__(self, model: str, *, device: str | None = None, batch_size: int = 8, revision: str | None = None,
                 meter: UsageMeter | None = None, flag: str = "model", needed_by: str = "a local LLM"):
        from beirx.models.checks import check_if_local
        from beirx.models.device import choose_device

        super().__init__(meter)
        self.model, self.revision = model, revision
        self._flag, self._needed_by = flag, needed_by
        check_if_local(model, "causal-lm", flag, needed_by)  # a wrong folder fails now, not at the first request
        self.device = choose_device(device)
        self.batch_size = int(batch_size)
        self._waiting: list[tuple[Request, asyncio.Future]] = []
        self._drainer: asyncio.Task | None = None

    @cached_property
    def files(self):
        """The model's folder and revision, resolved (and checked) when first needed (a dry run downloads nothing)."""
        from beirx.models.checks import checked_model

        return checked_model(self.model, "causal-lm", self.revision, self._flag, self._needed_by)

    @property
    def location(self) -> str:
        """Where the answers come from (part of cache keys): the model's revision, run in this process."""
        return f"transformers@{self.files.revision}"

    def loaded(self):
        """``(tokenizer, model)``, loaded on first use."""
        from beirx.models.causal_lm import causal_lm

        return causal_lm(self.files, self.device)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.files.name, "revision": self.files.revision,
                "dtype": str(self.loaded()[1].dtype).removeprefix("torch."), "device": self.device,
                "batch_size": self.batch_size}

    def label_logprobs(self, requests: Sequence[Request], labels: Mapping[str, Sequence[str]],
                       meter: UsageMeter | None = None) -> list[dict[str, float]]:
        """From the next-token distribution after each prompt (:func:`beirx.models.causal_lm.next_token_logprobs`,
        ``batch_size`` prompts a pass) at the label words' :meth:`first_tokens`; two labels sharing one cannot be
        told apart (an error). Each prompt is metered (``meter``, else the LLM's own) as a request reading its
        tokens and generating one."""
        from beirx.models.causal_lm import encode, next_token_logprobs, prompt_text

        tokenizer, model = self.loaded()
        ids = {name: self.first_tokens(words) for name, words in labels.items()}
        for (a, a_ids), (b, b_ids) in itertools.combinations(ids.items(), 2):
            if set(a_ids) & set(b_ids):
                raise BeirxError(f"the {a} words {list(labels[a])} and the {b} words {list(labels[b])} share the "
                                 f"first token(s) {sorted(set(a_ids) & set(b_ids))} in {self.files.name}'s "
                                 "vocabulary: they cannot be told apart")
        meter = meter if meter is not None else self.meter
        texts = [prompt_text(tokenizer, r) for r in requests]
        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            usages = [Usage(len(encode(tokenizer, text)), 1) for text in batch]
            reserved: list[float] = []
            try:
                reserved += [meter.reserve(usage) for usage in usages]
                logprobs = next_token_logprobs(tokenizer, model, batch, self.device)
            except BaseException:
                for amount in reserved:
                    meter.settle(amount, None)
                raise
            for amount, usage in zip(reserved, usages):
                meter.settle(amount, usage)
            columns = {name: logprobs[:, i].logsumexp(dim=-1).tolist() for name, i in ids.items()}
            out += [{name: column[row] for name, column in columns.items()} for row in range(len(logprobs))]
        return out

    def first_tokens(self, words: Sequence[str]) -> list[int]:
        """The first token of each word, with and without a leading space."""
        tokenizer = self.loaded()[0]
        ids = {pieces[0] for word in words for variant in (word, " " + word)
               if (pieces := tokenizer(variant, add_special_tokens=False)["input_ids"])}
        if not ids:
            raise BeirxError(f"the answer words {list(words)} have no tokens in {self.files.name}'s vocabulary")
        return sorted(ids)

    def fit(self, request_for: Callable[[str], Request], text: str, max_tokens: int) -> tuple[Request, bool]:
        """Cut by the model's own tokens, counted on the prompt as the model reads it (+ 1: a BOS the tokenizer
        may add); decoding and re-encoding can merge pieces differently, so it cuts until the prompt fits."""
        from beirx.models.causal_lm import prompt_text

        tokenizer = self.loaded()[0]
        request, ids, keep = request_for(text), None, None
        while (over := len(tokenizer(prompt_text(tokenizer, request), add_special_tokens=False)["input_ids"])
               + 1 - max_tokens) > 0 and keep != 0:
            ids = ids or tokenizer(text, add_special_tokens=False)["input_ids"]
            keep = max(0, (len(ids) if keep is None else keep) - over)
            request = request_for(tokenizer.decode(ids[:keep], skip_special_tokens=True))
        return request, keep is not None

    async def _answer(self, request: Request) -> Reply:
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((request, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        """Generate the waiting requests, ``batch_size`` at a time (same sampling settings), until none is left."""
        while self._waiting:
            await asyncio.sleep(0)  # let the callers that are ready ask first
            sampling = _sampling(self._waiting[0][0])
            batch = [item for item in self._waiting if _sampling(item[0]) == sampling][:self.batch_size]
            self._waiting = [item for item in self._waiting if not any(item is b for b in batch)]
            try:
                replies = await asyncio.to_thread(self._generate, [request for request, _ in batch], *sampling)
            except Exception as exc:  # noqa: BLE001 - every waiting caller gets the error
                for _, future in batch:
                    future.set_exception(exc)
                continue
            for (_, future), reply in zip(batch, replies):
                future.set_result(reply)

    def _generate(self, requests: list[Request], temperature: float, seed: int | None) -> list[Reply]:
        from beirx.models.causal_lm import generate

        tokenizer, model = self.loaded()
        return generate(tokenizer, model, requests, self.device, temperature=temperature, seed=seed)

    def close(self) -> None:
        super().close()
        self._waiting, self._drainer = [], None  # a later call starts a new loop


def _sampling(request: Request) -> tuple[float, int | None]:
    return request.temperature, request.seed
