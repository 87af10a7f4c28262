"""The one interface every LLM user codes against (translation, the judge, the listwise reranker), and
:func:`connect`, which picks its implementation: a server through :class:`~beirx.models.llm.client.LLMClient`,
or a causal LM in this process through :class:`~beirx.models.llm.local.LocalLLM`. Same requests, same
replies, same usage meter, so a stage runs on either with the same code."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Coroutine, Iterable
from typing import Any, Protocol

from beirx.errors import BeirxError
from beirx.models.llm.calls import Reply, Request
from beirx.models.llm.usage import UsageMeter

BACKENDS = ("openai", "transformers")


class LLM(Protocol):
    """``backend``: "openai" (a server) or "transformers" (in process); ``location``: where answers come from,
    for cache keys (the server's address, or the local model's revision); ``meter``: usage and spending cap.
    ``acall`` from any event loop (cheapest from the LLM's own: ``schedule`` a coroutine driving many requests
    there); ``call_many`` from synchronous code, answers in order (errors in place with ``return_exceptions``)."""

    backend: str
    model: str
    meter: UsageMeter

    @property
    def location(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...

    async def acall(self, request: Request) -> Reply: ...

    def call_many(self, requests: Iterable[Request], return_exceptions: bool = False) -> list[Reply | BaseException]: ...

    def schedule(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future: ...

    def close(self) -> None: ...


def backend_for(backend: str | None, base_url: str | None, what: str) -> str:
    """The backend asked for: explicit, else a server when ``base_url`` is given, else in process."""
    chosen = backend or ("openai" if base_url else "transformers")
    if chosen not in BACKENDS:
        raise BeirxError(f"{what} backend must be one of {', '.join(BACKENDS)}, got {chosen!r}")
    return chosen


def connect(model: str, *, backend: str | None = None, base_url: str | None = None, meter: UsageMeter | None = None,
            concurrency: int = 8, timeout: float = 120.0, device: str | None = None, batch_size: int = 8,
            revision: str | None = None, what: str = "the LLM") -> LLM:
    """An :class:`LLM` for ``model``: served at ``base_url`` (or ``$OPENAI_BASE_URL`` with ``backend="openai"``;
    ``concurrency`` requests in flight, ``timeout`` seconds without progress), else run in this process
    (``device``, ``batch_size`` requests generated together, ``revision`` of a Hub model)."""
    if backend_for(backend, base_url, what) == "openai":
        from beirx.models.llm.client import LLMClient
        from beirx.models.llm.endpoint import Endpoint

        return LLMClient(Endpoint.resolve(model, base_url, concurrency=int(concurrency), timeout=float(timeout)),
                         meter=meter)
    from beirx.models.llm.local import LocalLLM

    return LocalLLM(model, device=device, batch_size=batch_size, revision=revision, meter=meter)
