"""``--translator openai``: translate with an LLM behind any OpenAI-compatible server.

vLLM (``vllm serve MODEL``), llama.cpp (``llama-server -m F.gguf`` or ``python -m llama_cpp.server``),
Ollama (``http://localhost:11434/v1``), TGI and hosted APIs all speak the chat-completions API; base models
are served plain completions (``--api completions``). The server is ``--base-url`` or ``OPENAI_BASE_URL``;
the key only ``OPENAI_API_KEY`` (a local server needs none). Transport (concurrency, retries honouring
``Retry-After``, timeouts, circuit breaker, usage and ``--max-cost``) is the shared client's
(:mod:`beirx.models.llm`); units, prompts, validation, retries, fallback and flags are
:class:`beirx.translate.llm.translator.LLMTranslator`'s.

Options besides the LLM ones: ``base_url``, ``concurrency`` (requests in flight, default 8), ``timeout``
(seconds per attempt, default 120), ``attempts`` (tries per request on 429/5xx/timeouts, default 6),
``backoff`` (first backoff in seconds, default 1), ``breaker_failures`` and ``breaker_seconds`` (the run
stops after that many consecutive server failures once nothing has succeeded for that long; 10, 30).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Coroutine
from typing import Any

from beirx.models.llm import Endpoint, LLMClient, Reply, Request, UsageMeter
from beirx.translate.llm.translator import LLMTranslator


class OpenAITranslator(LLMTranslator):
    name = "openai"

    def __init__(self, src: str, tgt: str, model: str | None = None, *, base_url: str | None = None,
                 concurrency: int | str = 8, timeout: float | str = 120.0, attempts: int | str = 6,
                 backoff: float | str = 1.0, breaker_failures: int | str = 10, breaker_seconds: float | str = 30.0,
                 **options: Any):
        super().__init__(src, tgt, model, **options)
        self.endpoint = Endpoint.resolve(model, base_url, concurrency=int(concurrency), timeout=float(timeout),
                                         attempts=int(attempts), backoff=float(backoff),
                                         breaker_failures=int(breaker_failures),
                                         breaker_seconds=float(breaker_seconds))
        self.meter = UsageMeter(self.prices, self.max_cost)
        self.client = LLMClient(self.endpoint, meter=self.meter)
        self.units_in_flight = 2 * self.endpoint.concurrency

    def check_ready(self) -> None:
        """Fail now, before any work, when the server needs a key that is not set."""
        self.endpoint.api_key()

    async def generate(self, request: Request) -> Reply:
        return await self.client.acall(request)

    def _schedule(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        return self.client.schedule(coroutine)

    def settings(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint.describe(), "concurrency": self.endpoint.concurrency,
                "timeout": self.endpoint.timeout, **super().settings()}

    def transport_report(self) -> dict[str, Any]:
        snapshot = self.meter.snapshot()
        return {"transport_retries": snapshot["retries"], "transport_failures": snapshot["transient_failures"]}

    def for_replicas(self, options: dict[str, Any], workers: int) -> dict[str, Any]:
        """Options of each of ``workers`` Ray replicas: they share this endpoint's concurrency and cost budgets."""
        shared = {**options, "concurrency": max(1, self.endpoint.concurrency // workers)}
        if self.max_cost is not None:
            shared["max_cost"] = self.max_cost / workers
        return shared

    def close(self) -> None:
        self.client.close()
