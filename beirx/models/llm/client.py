"""The OpenAI-compatible client: bounded concurrency, retries honouring ``Retry-After``, timeouts, a
circuit breaker and usage metering around the official ``openai`` async client.

Why it is shaped like this:

* **The process's one LLM event loop** (:mod:`beirx.models.llm.loop`): ``openai.AsyncOpenAI``, the
  concurrency limit and the breaker of a client live on it, so every caller of the client shares one budget of
  ``Endpoint.concurrency`` requests in flight; closing the client closes its connections, not the loop.
* **Retries are beirx's, not the SDK's** (``max_retries=0``): the one retry decision of every transport
  (:class:`beirx.retry.Retrying`) with this client's classification of an exception; each repeated attempt is
  counted in the usage meter, a 429 is told apart from a dead server (the breaker), and the wait is the
  server's ``Retry-After`` (or OpenAI's ``retry-after-ms``) when sent, else exponential backoff with jitter
  (:class:`beirx.retry.RetryPolicy`). A waiting request gives its concurrency slot back.
* **Timeouts that bound time.** Every answer is streamed (``"stream": true``): an attempt fails when
  ``timeout`` seconds pass without progress (before the answer starts, or between two streamed events; a
  body that drips bytes without completing an event makes none) or after ``Endpoint.total_seconds`` in all.
  A failed attempt closes its connection, which is what tells a server (llama.cpp, vLLM) to stop generating:
  the retry is not queued behind an answer nobody reads. A server that ignores ``stream`` answers one JSON
  body, which then must arrive within ``timeout``.
* **Failing cleanly.** 400/404/422 are not retried (:class:`LLMRequestError`, with the server's message
  and status); a 401/403 also stops every later request of this client at once (the key is wrong for all of
  them). A 200 that is not a completion raises :class:`LLMAnswerError` naming the server and what is wrong.
  A request that exhausts its attempts raises :class:`TransportError`; when the breaker opens every request
  fails at once with :class:`EndpointDown`. All are ``BeirxError``s, and the key is scrubbed from every
  message (and from every log line: :func:`beirx.redact.remember_secret`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

import numpy as np

from beirx.errors import BeirxError, require
from beirx.models.llm.breaker import CircuitBreaker
from beirx.models.llm.calls import PATHS, BadAnswer, Reply, Request, StreamedReply
from beirx.models.llm.endpoint import Endpoint
from beirx.models.llm.loop import submit
from beirx.models.llm.protocol import LLM
from beirx.models.llm.usage import Usage, UsageMeter
from beirx.redact import redact_text, redact_url, remember_secret
from beirx.retry import Retrying, RetryPolicy, Transient, transient_status

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Alternatives asked for the first token when reading label log-probabilities (OpenAI's maximum).
TOP_LOGPROBS = 20


class LLMError(BeirxError):
    """A request to the LLM server failed for good."""


class LLMRequestError(LLMError):
    """The server refused this request (HTTP ``status``); retrying the same request cannot help."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status

    @property
    def about_this_request(self) -> bool:
        """False when the server would refuse every request alike (401/403: the key; 404: the model name)."""
        return self.status not in (401, 403, 404)


class LLMAnswerError(LLMError):
    """The server answered 200 with something that is not a completion (not JSON, or the wrong shape)."""


class TransportError(LLMError):
    """The request never got an answer (timeouts, dropped connections, 5xx) in all its attempts: nothing
    about the request is wrong, so its unit is left to a rerun, never recorded as an answer."""


class EndpointDown(TransportError):
    """The circuit breaker is open: the server failed ``breaker_failures`` attempts in a row."""


class LLMClient(LLM):
    """``with LLMClient(Endpoint.resolve("gemma", "http://127.0.0.1:8080/v1")) as llm: llm.call_many(requests)``:
    the server implementation of :class:`~beirx.models.llm.protocol.LLM`.

    ``meter`` sums usage (and enforces ``max_cost``); ``sleep`` is the backoff wait (tests record it instead
    of sleeping).
    """

    backend = "openai"

    def __init__(self, endpoint: Endpoint, *, meter: UsageMeter | None = None,
                 sleep: Callable[[float], Awaitable[Any]] | None = None):
        super().__init__(meter)
        self.endpoint = endpoint  # the circuit breaker and the retry policy follow it at the first request
        self._sleep = sleep or asyncio.sleep
        self._key = ""
        self._openai = None
        self._fatal: Callable[[], LLMError] | None = None  # after a 401/403 or a malformed answer: every later
        # request fails at once with the same error (nothing more is sent)
        self._start_lock = threading.Lock()

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def location(self) -> str:
        return self.endpoint.describe()["base_url"]

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, **self.endpoint.describe()}

    def label_logprobs(self, requests: Sequence[Request], labels: Mapping[str, Sequence[str]],
                       meter: UsageMeter | None = None) -> list[dict[str, float]]:
        """Read from the ``top_logprobs`` of a one-token answer (OpenAI's API, llama.cpp's and vLLM's servers): the
        log of the summed probabilities of the listed tokens that are one of the label's words (leading spaces
        dropped), so each word should be one token of the served model. A label with none of the :data:`TOP_LOGPROBS`
        listed gets the lowest listed log-probability, an upper bound of its own (counted in the log)."""
        asked = [replace(r, max_tokens=1, extra={**r.extra, "logprobs": True, "top_logprobs": TOP_LOGPROBS})
                 for r in requests]
        out, unlisted = [], 0
        for reply in self.call_many(asked, meter=meter) if asked else ():
            if not reply.top_logprobs:
                raise LLMAnswerError(f"{self.where()} sent no top_logprobs: label log-probabilities need a server "
                                     "that supports OpenAI's logprobs (llama.cpp, vLLM and OpenAI's API do)")
            broken = next(((token, p) for token, p in reply.top_logprobs if not math.isfinite(p)), None)
            if broken is not None:  # a listed token has a probability above 0: its log is a finite number
                raise LLMAnswerError(f"{self.where()} returned a log-probability that is not a finite number "
                                     f"({broken[1]}) for the token {broken[0]!r}: no score can be computed from it; "
                                     "a fault of the server: rerun to retry, or use another server")
            floor = min(p for _, p in reply.top_logprobs)
            found = {name: [p for token, p in reply.top_logprobs if token.strip() in words]
                     for name, words in labels.items()}
            unlisted += sum(not p for p in found.values())
            out.append({name: float(np.logaddexp.reduce(p)) if p else floor for name, p in found.items()})
        if unlisted:
            log.info("%s: %d labels not among the top %d tokens, bounded by the lowest listed", self.where(),
                     unlisted, TOP_LOGPROBS)
        return out

    def openai_client(self):
        """The underlying ``openai.AsyncOpenAI`` (for APIs beyond completions, e.g. :mod:`.batch_api`); use
        it on the LLM loop (:meth:`schedule`)."""
        self._start()
        return self._openai

    def _start(self) -> None:
        with self._start_lock:
            if self._openai is None:
                openai = self._openai_module = require("openai", "llm", "LLM requests to an OpenAI-compatible server")
                self._httpx = _http_library()
                self._key = self.endpoint.api_key()  # fails here, before anything is sent, when a key is needed
                remember_secret(self._key)
                if logging.getLogger("httpx2").level == logging.NOTSET:  # one INFO line per request otherwise
                    logging.getLogger("httpx2").setLevel(logging.WARNING)
                self._openai = openai.AsyncOpenAI(base_url=self.endpoint.base_url, api_key=self._key,
                                                  timeout=self.endpoint.timeout, max_retries=0)
                self._limiter = asyncio.Semaphore(self.endpoint.concurrency)
                self.breaker = CircuitBreaker(self.endpoint.breaker_failures, self.endpoint.breaker_seconds)
                self.policy = RetryPolicy(attempts=self.endpoint.attempts, base_delay=self.endpoint.backoff)
                self._retrying = Retrying(self.policy, retried=self._retried, failed=self._failed,
                                          exhausted=self._exhausted, asleep=self._sleep)

    @property
    def closed(self) -> bool:
        """True when the client holds no connection pool (before its first request, after :meth:`close`)."""
        return self._openai is None

    def close(self) -> None:
        """Close the connections, on the loop they were opened on (idempotent; a later request opens new ones)."""
        with self._start_lock:
            if self._openai is not None:
                submit(self._openai.close()).result()
            self._openai = None
        super().close()

    async def _answer(self, request: Request) -> Reply:
        try:
            return await self.retrying(lambda attempt: self._send(request, attempt))
        except BadAnswer as exc:
            error = partial(LLMAnswerError, f"{self.where()} answered {PATHS[request.kind]} with something that is "
                            f"not a completion: {self.scrub(str(exc))}. Is --base-url an OpenAI-compatible API (it "
                            f"usually ends in /v1), and --api ({request.kind}) one it serves?")
            self._fatal = self._fatal or error
            raise error() from None

    async def retrying(self, attempt: Callable[[int], Awaitable[T]],
                       refused: Callable[[Any, str], LLMError] | None = None) -> T:
        """``await attempt(n)`` (n = 1, 2, ...) until it succeeds, within the concurrency limit and the breaker,
        through the one retry decision (:class:`~beirx.retry.Retrying`): this client supplies only how to
        classify an exception (:meth:`_classify`). 429, 5xx (:data:`~beirx.retry.RETRY_STATUSES`), timeouts and
        dropped connections are retried, waiting ``Retry-After``/``retry-after-ms`` when the server says; another
        status raises ``refused(exc, "HTTP 400 (message)")`` (default: :class:`LLMRequestError`), and a request out
        of attempts :class:`TransportError`. Every call to the server goes through here (completions, the Batch API).
        Call it on the LLM loop, after :meth:`openai_client`."""
        async def guarded(number: int) -> T:
            self._check_breaker()
            async with self._limiter:  # a waiting request gives its slot back
                self._check_breaker()
                result = await attempt(number)
            self.breaker.success()
            return result

        return await self._retrying.acall(guarded, partial(self._classify, refused))

    def _classify(self, refused: Callable[[Any, str], LLMError] | None, outcome: Any) -> Transient | None:
        """An attempt's exception as :class:`~beirx.retry.Transient`, or the final error raised (a refused
        request; a 401/403 also stops every later request); anything else (a reply, our own errors) is final."""
        openai, httpx = self._openai_module, self._httpx
        if isinstance(outcome, openai.APIStatusError):
            status = outcome.status_code
            last = f"HTTP {status}" + (f" ({self.scrub(server_message(outcome))})" if server_message(outcome) else "")
            transient = transient_status(status, outcome.response.headers, last)
            if transient is None:
                error = partial(refused, outcome, last) if refused else partial(LLMRequestError, f"{self.where()}: "
                                                                                                 f"{last}", status)
                self._fatal = self._fatal or (error if status in (401, 403) else None)
                raise error() from None
            return transient
        if isinstance(outcome, (openai.APITimeoutError, TimeoutError, httpx.TimeoutException)):
            return Transient(f"no progress within {self.endpoint.timeout:g} s or no answer within "
                             f"{self.endpoint.total_seconds:g} s", "timeout")
        if isinstance(outcome, (openai.APIConnectionError, httpx.TransportError, _Dropped)):
            return Transient(f"connection failed ({self.scrub(str(outcome.__cause__ or outcome))})", "connection")
        return None

    def _failed(self, transient: Transient, last: bool) -> None:
        """A failed attempt counts towards the breaker (a 429 does not: the server is alive)."""
        if transient.kind != "rate_limited" and self.breaker.failure(transient.reason, gave_up=last):
            self._check_breaker()

    def _retried(self, number: int, transient: Transient, wait: float) -> None:
        self.meter.retried(transient.kind)
        (log.info if transient.kind == "rate_limited" else log.warning)(
            "%s: %s; retry %d/%d in %.2f s", self.where(), transient.reason, number, self.policy.attempts - 1, wait)

    def _exhausted(self, transient: Transient, tries: int) -> TransportError:
        return TransportError(f"{self.where()}: request failed after {tries} attempt{'s' * (tries > 1)} "
                              f"(last: {transient.reason})")

    async def _send(self, request: Request, attempt: int) -> Reply:
        """One attempt, streamed (see the module docstring). The client's documented verb for a JSON body
        (``post(path, body=...)``) returning the raw response: our bodies are final JSON already, so the typed
        ``create()``'s parameter transform and response models would only cost CPU (a third of a request's,
        measured by benchmarks/translate_llm_throughput.py). Leaving the ``async with`` closes the response,
        and with it the connection when the answer was not read to its end."""
        body = {**request.body(self.endpoint.model), "stream": True, "stream_options": {"include_usage": True}}
        loop = asyncio.get_running_loop()
        end = loop.time() + self.endpoint.total_seconds
        async with asyncio.timeout_at(min(end, loop.time() + self.endpoint.timeout)) as timer:
            response = await self._openai.post(PATHS[request.kind].removeprefix("/v1"), body=body,
                                               cast_to=self._httpx.Response, stream=True)
            try:
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    raw = await response.aread()  # a server that does not stream: one body within ``timeout``
                    return Reply.from_body(request.kind, _json(raw), attempt)
                streamed = StreamedReply(request.kind)
                done = False
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # comments (": ping"), event names, blank lines between events
                    timer.reschedule(min(end, loop.time() + self.endpoint.timeout))
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    streamed.add(_json(data.encode("utf-8")))
                if not done and streamed.finish_reason is None:
                    raise _Dropped("the stream ended before the answer was complete")
            finally:
                await response.aclose()
        # a server that does not count a stream (llama.cpp): a chunk is a token
        return streamed.reply(attempt, Usage(request.worst_case().prompt_tokens, streamed.chunks))

    def _check_breaker(self) -> None:
        if self._fatal is not None:
            raise self._fatal()
        if self.breaker.open:
            raise EndpointDown(
                f"{self.where()} is not answering: {self.breaker.consecutive} failed attempts in a row (last: "
                f"{self.breaker.last_failure}). Stopped; everything finished so far is kept. Check the server, "
                "then rerun the same command to resume")

    def where(self) -> str:
        return f"LLM server {redact_url(self.endpoint.base_url)} (model {self.endpoint.model})"

    def scrub(self, text: str) -> str:
        text = redact_text(text)
        return text.replace(self._key, "***") if self._key and len(self._key) > 3 else text


def server_message(exc: Any) -> str:
    """The server's own error message, short."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = inner.get("message") if isinstance(inner, dict) else inner
        if text:
            return str(text)[:300]
    return str(getattr(exc, "message", "") or "")[:300]


class _Dropped(Exception):
    """A streamed answer that ended early (the connection closed cleanly mid-answer)."""


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        text = raw[:80].decode("utf-8", "replace")
        raise BadAnswer(f"a body that is not JSON ({text!r}{'...' if len(raw) > 80 else ''})") from None


def _http_library():
    """The HTTP library the ``openai`` package is built on (``httpx``, or its fork ``httpx2``): the one whose
    ``AsyncClient`` openai's public ``DefaultAsyncHttpxClient`` extends."""
    import importlib

    import openai

    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if issubclass(openai.DefaultAsyncHttpxClient, module.AsyncClient):
            return module
    return importlib.import_module("httpx")
