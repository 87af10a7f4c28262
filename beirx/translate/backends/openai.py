"""``--translator openai``: translate with an LLM behind any OpenAI-compatible server.

vLLM (``vllm serve MODEL``), llama.cpp (``llama-server -m F.gguf`` or ``python -m llama_cpp.server``),
Ollama (``http://localhost:11434/v1``), TGI and hosted APIs all speak the chat-completions API; base models
are served plain completions (``--api completions``). The server is ``--llm-base-url`` or ``OPENAI_BASE_URL``;
the key only ``OPENAI_API_KEY`` (a local server needs none). Transport (concurrency, retries honouring
``Retry-After``, timeouts, circuit breaker, usage and ``--max-cost``) is the shared client's
(:mod:`beirx.models.llm`); units, prompts, validation, retries, fallback and flags are
:class:`beirx.translate.llm.translator.LLMTranslator`'s.

Options besides the LLM ones: the connection's (:mod:`beirx.models.llm.connection`, flags ``--llm-<option>``):
``base_url``, ``concurrency`` (requests in flight, default 8, at most 256), ``timeout`` (seconds an attempt may
go without progress: before the answer starts or between two streamed tokens, default 120), ``deadline``
(seconds an attempt may take in all, default 10 x ``timeout``), ``attempts`` (tries per request on
429/5xx/timeouts/dropped connections, default 6), ``backoff`` (first backoff in seconds, default 1),
``breaker_failures`` and ``breaker_seconds`` (the run stops after that many consecutive server failures once
nothing has succeeded for that long, or once a request spent its attempts among them; 10, 30). A unit whose
requests all failed that way is left pending for a rerun, never written.
"""

from __future__ import annotations

from typing import Any

from beirx.models.llm import LLMClient
from beirx.models.llm.connection import SERVER, ConnectionSettings
from beirx.translate.llm.translator import LLMTranslator


class OpenAITranslator(LLMTranslator):
    name = "openai"
    llm_backend = SERVER
    supports_batch_api = True  # ``--batch``: :class:`beirx.translate.execution.openai_batch.BatchExecutor` uses ``llm``

    def __init__(self, src: str, tgt: str, model: str | None = None, *, base_url: str | None = None,
                 concurrency: int | str = 8, timeout: float | str = 120.0, deadline: float | str | None = None,
                 attempts: int | str = 6,
                 backoff: float | str = 1.0, breaker_failures: int | str = 10, breaker_seconds: float | str = 30.0,
                 **options: Any):
        super().__init__(src, tgt, model, **options)
        self.connection = ConnectionSettings.read(
            {**self.connection.values(), "base_url": base_url, "concurrency": concurrency, "timeout": timeout,
             "deadline": deadline, "attempts": attempts, "backoff": backoff, "breaker_failures": breaker_failures,
             "breaker_seconds": breaker_seconds}, f"{self.name}: ")
        self.endpoint = self.connection.endpoint(model)
        self.llm = LLMClient(self.endpoint, meter=self.connection.meter())
        self.units_in_flight = 2 * self.endpoint.concurrency

    def check_ready(self) -> None:
        """Fail now, before any work, when the server needs a key that is not set."""
        self.endpoint.api_key()

    def settings(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint.describe(), "concurrency": self.endpoint.concurrency,
                "timeout": self.endpoint.timeout, **super().settings()}

    def for_replicas(self, options: dict[str, Any], workers: int) -> dict[str, Any]:
        """Options of each of ``workers`` Ray replicas: they share this endpoint's concurrency and cost budgets."""
        shared = {**options, "concurrency": max(1, self.endpoint.concurrency // workers)}
        if self.max_cost is not None:
            shared["max_cost"] = self.max_cost / workers
        return shared
