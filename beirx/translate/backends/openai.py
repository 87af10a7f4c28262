"""``--translator openai``: translate with an LLM behind any OpenAI-compatible server.

vLLM (``vllm serve MODEL``), llama.cpp (``llama-server -m F.gguf`` or ``python -m llama_cpp.server``),
Ollama (``http://localhost:11434/v1``), TGI and hosted APIs all speak the chat-completions API; base models
are served plain completions (``--api completions``). The server is ``--base-url`` or ``OPENAI_BASE_URL``;
the key only ``OPENAI_API_KEY`` (a local server needs none). Transport (concurrency, retries honouring
``Retry-After``, timeouts, circuit breaker, usage and ``--max-cost``) is the shared client's
(:mod:`beirx.models.llm`); units, prompts, validation, retries, fallback and flags are
:class:`beirx.translate.llm.translator.LLMTranslator`'s.

Options besides the LLM ones: ``base_url``, ``concurrency`` (requests in flight, default 8, at most 256),
``timeout`` (seconds an attempt may go without progress: before the answer starts or between two streamed
tokens, default 120), ``deadline`` (seconds an attempt may take in all, default 10 x ``timeout``),
``attempts`` (tries per request on 429/5xx/timeouts/dropped connections, default 6), ``backoff`` (first
backoff in seconds, default 1), ``breaker_failures`` and ``breaker_seconds`` (the run stops after that many
consecutive server failures once nothing has succeeded for that long, or once a request spent its attempts
among them; 10, 30). A unit whose requests all failed that way is left pending for a rerun, never written.
"""

from __future__ import annotations

from typing import Any

from beirx.argtypes import non_negative_float, option, positive_float, positive_int
from beirx.models.llm import Endpoint, LLMClient, UsageMeter
from beirx.options import Option
from beirx.translate.backends.base import setting
from beirx.translate.llm.translator import LLMTranslator


class OpenAITranslator(LLMTranslator):
    name = "openai"
    supports_batch_api = True  # ``--batch``: :class:`beirx.translate.llm.batch.BatchExecutor` uses ``llm``
    OPTIONS = (*LLMTranslator.OPTIONS,
               Option("base_url", help="OpenAI-compatible server, e.g. http://localhost:8000/v1 (default: "
                                       "$OPENAI_BASE_URL, else OpenAI's API; the key only from $OPENAI_API_KEY)"),
               Option("concurrency", positive_int, default=8, help="requests in flight"),
               Option("timeout", positive_float, default=120.0,
                      help="seconds a request attempt may go without progress (no answer yet, no new token); an "
                           "attempt ends after 10x that in all"),
               setting("deadline"), setting("attempts", default=6), setting("backoff", default=1.0),
               setting("breaker_failures", default=10), setting("breaker_seconds", default=30.0))

    def __init__(self, src: str, tgt: str, model: str | None = None, *, base_url: str | None = None,
                 concurrency: int | str = 8, timeout: float | str = 120.0, deadline: float | str | None = None,
                 attempts: int | str = 6,
                 backoff: float | str = 1.0, breaker_failures: int | str = 10, breaker_seconds: float | str = 30.0,
                 **options: Any):
        super().__init__(src, tgt, model, **options)
        def number(name, value, parse):
            return option(self.name, name, value, parse)

        self.endpoint = Endpoint.resolve(
            model, base_url, concurrency=number("concurrency", concurrency, positive_int),
            timeout=number("timeout", timeout, positive_float),
            deadline=None if deadline in (None, "") else number("deadline", deadline, positive_float),
            attempts=number("attempts", attempts, positive_int), backoff=number("backoff", backoff, non_negative_float),
            breaker_failures=number("breaker_failures", breaker_failures, positive_int),
            breaker_seconds=number("breaker_seconds", breaker_seconds, non_negative_float))
        self.llm = LLMClient(self.endpoint, meter=UsageMeter(self.prices, self.max_cost))
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
