"""The LLM layer every stage shares (translation, the LLM judge, the LLM rerankers): one :class:`LLM`
interface, served by an OpenAI-compatible server (:class:`LLMClient`: vLLM, llama.cpp, Ollama, TGI, hosted
APIs) or run in this process (:class:`LocalLLM`, a transformers causal LM); :func:`connect` picks one.
Importing this package is light; ``openai`` is imported at the first request. ::

    meter = UsageMeter(Prices(input_per_million=0.15, output_per_million=0.60), max_cost=5.0)
    llm = connect("gemma", base_url="http://127.0.0.1:8080/v1", meter=meter)   # no base_url: in process
    replies = llm.call_many([Request.chat([{"role": "user", "content": "Hi"}], max_tokens=64)])
    # async code, from any event loop:  reply = await llm.acall(request)
    reply.text, reply.finish_reason, reply.refusal, reply.usage.prompt_tokens, reply.attempts
    llm.label_logprobs([request], {"yes": ["yes", "Yes"]})   # [{"yes": log P(first token is a yes word)}]
    meter.snapshot()   # requests, retries, tokens, transient failures by kind, cost_usd, prices

Errors: :class:`LLMError` (a :class:`~beirx.errors.BeirxError`) and its kinds, :class:`LLMRequestError`,
:class:`LLMAnswerError`, :class:`TransportError`, :class:`EndpointDown` (:mod:`.client` says when each is
raised), and :class:`BudgetExceeded` (nothing over ``max_cost`` is sent).
"""

from beirx.models.llm.calls import CHAT, COMPLETIONS, Reply, Request
from beirx.models.llm.client import (EndpointDown, LLMAnswerError, LLMClient, LLMError, LLMRequestError,
                                     TransportError)
from beirx.models.llm.connection import BACKENDS, CONNECTION_OPTIONS, ConnectionSettings, Role, backend_for, connect
from beirx.models.llm.endpoint import Endpoint
from beirx.models.llm.local import LocalLLM
from beirx.models.llm.protocol import LLM
from beirx.models.llm.templates import PromptFile
from beirx.models.llm.tokens import TokenCounter, approx_tokens
from beirx.models.llm.usage import BudgetExceeded, Prices, Usage, UsageMeter

__all__ = ["CHAT", "COMPLETIONS", "LLM", "BudgetExceeded", "Endpoint", "EndpointDown", "LLMAnswerError", "LLMClient",
           "LLMError", "LLMRequestError", "LocalLLM", "TransportError", "Prices", "PromptFile", "Reply", "Request",
           "TokenCounter", "Usage", "UsageMeter", "approx_tokens", "backend_for", "connect", "BACKENDS",
           "CONNECTION_OPTIONS", "ConnectionSettings", "Role"]
