"""The LLM layer every stage shares (translation, the LLM judge, the listwise reranker): one :class:`LLM`
interface, served by an OpenAI-compatible server (:class:`LLMClient`) or run in this process
(:class:`LocalLLM`, a transformers causal LM); :func:`connect` picks one.

Any server that speaks OpenAI's chat-completions or completions API works: vLLM, llama.cpp's
``llama-server``/``llama_cpp.server``, Ollama (``http://localhost:11434/v1``), TGI, hosted APIs. Importing
this package is light; ``openai`` is imported at the first request.

Public API::

    from beirx.models.llm import Endpoint, LLMClient, Request, UsageMeter, Prices

    endpoint = Endpoint.resolve("gemma", base_url=None,        # None: $OPENAI_BASE_URL, else OpenAI's API
                                concurrency=8, timeout=60, attempts=6, backoff=1.0, breaker_failures=10)
    meter = UsageMeter(Prices(input_per_million=0.15, output_per_million=0.60), max_cost=5.0)
    with LLMClient(endpoint, meter=meter) as llm:
        reply = llm.call(Request.chat([{"role": "user", "content": "Hi"}], max_tokens=64))   # sync
        replies = llm.call_many([Request.completion("English: cat\\nSpanish:", stop=("\\n",))] * 3)
        # async code, from any event loop:  reply = await llm.acall(request)
        # threads:                          future = llm.submit(request)
    reply.text, reply.finish_reason, reply.refusal, reply.usage.prompt_tokens, reply.attempts
    meter.snapshot()   # requests, retries, tokens, transient failures by kind, cost_usd, prices

    llm = connect("path/to/causal-lm", meter=meter)            # no base_url: in process, the same calls

Errors (all :class:`~beirx.errors.BeirxError`, all :class:`LLMError`): :class:`LLMRequestError` (the server
refused a request: ``.status``), :class:`LLMAnswerError` (a 200 that is not a completion),
:class:`TransportError` (no answer in all attempts: the caller leaves the work for a rerun),
:class:`EndpointDown` (a TransportError: circuit breaker open, stop the run), :class:`BudgetExceeded` (the next request could break ``max_cost``; nothing over it is sent).

Modules: :mod:`.protocol` (:class:`LLM`, :func:`connect`), :mod:`.local` (:class:`LocalLLM`), :mod:`.endpoint` (base URL, model, limits; the key only from ``OPENAI_API_KEY``, never recorded),
:mod:`.client` (concurrency, retries honouring ``Retry-After``, timeouts, breaker), :mod:`.calls`
(:class:`Request`/:class:`Reply`, also the lines of an OpenAI Batch file), :mod:`.usage` (tokens, prices,
spending cap), :mod:`.breaker`, :mod:`.tokens` (token estimates: a local tokenizer or characters/4),
:mod:`.templates` (:class:`PromptFile`: versioned TOML prompt files shipped in a package, a user file
merged over them, their SHA-256 recorded).
"""

from beirx.models.llm.calls import CHAT, COMPLETIONS, Reply, Request
from beirx.models.llm.client import (EndpointDown, LLMAnswerError, LLMClient, LLMError, LLMRequestError,
                                     TransportError)
from beirx.models.llm.endpoint import Endpoint
from beirx.models.llm.local import LocalLLM
from beirx.models.llm.protocol import LLM, connect
from beirx.models.llm.templates import PromptFile, fill
from beirx.models.llm.tokens import TokenCounter, approx_tokens
from beirx.models.llm.usage import BudgetExceeded, Prices, Usage, UsageMeter

__all__ = ["CHAT", "COMPLETIONS", "LLM", "BudgetExceeded", "Endpoint", "EndpointDown", "LLMAnswerError", "LLMClient",
           "LLMError", "LLMRequestError", "LocalLLM", "TransportError", "Prices", "PromptFile", "Reply", "Request",
           "TokenCounter", "Usage", "UsageMeter", "approx_tokens", "connect", "fill"]
