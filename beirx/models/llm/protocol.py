"""The one interface every LLM user codes against, served by :class:`~beirx.models.llm.client.LLMClient` or
:class:`~beirx.models.llm.local.LocalLLM` (:mod:`beirx.models.llm` says when each): same requests, same replies,
same usage meter, so a stage runs on either with the same code.

Both run their requests on the process's one LLM event loop (:mod:`beirx.models.llm.loop`: a daemon thread
started at the first request, stopped at exit): stage code that is not async calls :meth:`LLM.call_many`, async
code awaits :meth:`LLM.acall` from any loop, and code that drives many requests :meth:`LLM.schedule`\\ s a
coroutine on that loop (its ``await acall`` then costs no thread hop). Every request reserves its worst case
against the meter's spending cap before it is sent and is settled with the usage of its answer.

The meter is chosen per call: a stage with its own budget (a judged field, a reranking call) passes its
:class:`~beirx.models.llm.usage.UsageMeter` to :meth:`LLM.acall`, :meth:`LLM.call_many` or
:meth:`LLM.label_logprobs`; without one, the LLM's own (the constructor's) counts. While a request is answered
:attr:`LLM.meter` is the meter of that request (a context variable of its task), so what the transport records
on its way (retries, failures by kind) lands on the same meter as the usage and cost.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from beirx.models.llm.calls import Reply, Request
from beirx.models.llm.loop import shared_loop, submit
from beirx.models.llm.tokens import CHARS_PER_TOKEN
from beirx.models.llm.usage import UsageMeter

#: The meter of the request being answered in this task (None: the LLM's own).
_CALL_METER: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar("beirx_llm_call_meter",
                                                                                 default=None)


class LLM:
    """``backend``: "openai" (a server) or "transformers" (in process); ``location``: where answers come from,
    for cache keys (the server's address, or the local model's revision); ``meter``: the usage and spending cap
    of calls that pass none. An implementation answers one request in :meth:`_answer` (on the LLM loop) and says
    what it is."""

    backend: str
    model: str
    location: str

    def __init__(self, meter: UsageMeter | None):
        self._meter = meter if meter is not None else UsageMeter()

    @property
    def meter(self) -> UsageMeter:
        """The meter of the request being answered (the one its caller passed), else the LLM's own. Read-only:
        a budget is passed with the call, never set on a shared LLM."""
        return _CALL_METER.get() or self._meter

    def describe(self) -> dict[str, Any]:
        raise NotImplementedError

    async def _answer(self, request: Request) -> Reply:
        raise NotImplementedError

    def label_logprobs(self, requests: Sequence[Request], labels: Mapping[str, Sequence[str]],
                       meter: UsageMeter | None = None) -> list[dict[str, float]]:
        """For each request, ``{label: log P}``: the log of the summed probabilities that the answer's first
        token is one of the label's words (``{"yes": ["yes", "Yes"]}``). No request: only check the labels.
        Metered as a one-token answer per request (into ``meter``, else the LLM's own)."""
        raise NotImplementedError

    def fit(self, request_for: Callable[[str], Request], text: str, max_tokens: int) -> tuple[Request, bool]:
        """``request_for(text)`` with ``text`` cut at its end so the prompt fits ``max_tokens``; True when cut.
        A server's tokenizer is not at hand: the prompt is counted as :meth:`Request.worst_case` counts it."""
        request = request_for(text)
        excess = request.worst_case().prompt_tokens - max_tokens
        if excess <= 0:
            return request, False
        return request_for(text[:max(0, len(text) - int(CHARS_PER_TOKEN * excess))]), True

    def _start(self) -> None:
        """Prepare what requests need (called before any is scheduled; cheap once done)."""

    # -- entry points ------------------------------------------------------------------------------------
    def schedule(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        """Run ``coroutine`` on the LLM loop, from any thread but the loop's; the future holds its result."""
        self._start()
        return submit(coroutine)

    def call_many(self, requests: Iterable[Request], return_exceptions: bool = False,
                  meter: UsageMeter | None = None) -> list[Reply | BaseException]:
        """Send all ``requests`` concurrently (metered into ``meter``, else the LLM's own); replies in request
        order. With ``return_exceptions`` a failed request's error takes its place, else the first error is
        raised once every request has finished."""
        self._start()  # a refusal to start (no API key) comes before the coroutine exists

        async def gather():
            return await asyncio.gather(*(self.acall(r, meter) for r in requests), return_exceptions=True)

        results = self.schedule(gather()).result()
        for result in results if not return_exceptions else ():
            if isinstance(result, BaseException):
                raise result
        return results

    async def acall(self, request: Request, meter: UsageMeter | None = None) -> Reply:
        """Await ``request`` from any event loop; its worst case reserved against ``meter`` (else the LLM's
        own), which is then settled with the answer's usage."""
        if asyncio.get_running_loop() is not shared_loop():
            return await asyncio.wrap_future(self.schedule(self.acall(request, meter)))
        meter = meter if meter is not None else self._meter
        reserved = meter.reserve(request.worst_case())
        usage = None
        token = _CALL_METER.set(meter)
        try:
            reply = await self._answer(request)
            usage = reply.usage
            return reply
        finally:
            _CALL_METER.reset(token)
            meter.settle(reserved, usage)

    def close(self) -> None:
        """Release what the LLM holds (connections; idempotent; a later request opens them again). The loop is
        the process's and keeps running."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
