"""Token usage, its price, and an optional spending cap, summed over every response of a run.

Hosted LLM APIs bill per token, input and output at different prices, quoted per million tokens; local
servers (vLLM, llama.cpp, Ollama, TGI) cost nothing per token but still report ``usage``, which is the
honest measure of the work done. Every response's ``usage`` is added to one :class:`UsageMeter` (thread
safe; the LLM client, a translation run and a judge share it).

The cap (``max_cost``) is enforced *before* a request is sent: the client reserves the request's worst
case (its prompt-token estimate at the input price plus ``max_tokens`` at the output price), and the
reservation is replaced by the real cost when the answer comes. A request that could push spending plus
open reservations past the cap is not sent (:class:`BudgetExceeded`), so the cap is never exceeded even
with many requests in flight.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from beirx.errors import BeirxError


@dataclass(frozen=True)
class Usage:
    """Tokens of one response (or a sum): ``prompt_tokens`` read, ``completion_tokens`` generated."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)

    @classmethod
    def from_payload(cls, payload: dict[str, Any] | None) -> Usage:
        """From a response's ``usage`` object; a server that sends none counts zero."""
        payload = payload if isinstance(payload, dict) else {}
        return cls(_count(payload.get("prompt_tokens")), _count(payload.get("completion_tokens")))


@dataclass(frozen=True)
class Prices:
    """USD per million input and output tokens (list prices the user passes; a local server: 0, 0)."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.input_per_million
                + usage.completion_tokens * self.output_per_million) / 1_000_000

    def describe(self) -> dict[str, float]:
        return {"usd_per_million_input_tokens": self.input_per_million,
                "usd_per_million_output_tokens": self.output_per_million}


class BudgetExceeded(BeirxError):
    """Sending one more request could exceed ``max_cost``; nothing over the cap was sent."""


class UsageMeter:
    """Sums usage, requests, retries and failures of every request; enforces ``max_cost`` (see the module
    docstring). All methods are thread safe."""

    def __init__(self, prices: Prices | None = None, max_cost: float | None = None):
        self.prices = prices or Prices()
        self.max_cost = max_cost
        self.usage = Usage()
        self.requests = 0  # answered requests (each counted once, whatever its retries)
        self.retries = 0  # attempts repeated after a transient failure
        self.failures: Counter[str] = Counter()  # transient failures by kind: rate_limited, server_error, ...
        self._reserved = 0.0
        self._lock = threading.Lock()

    @property
    def spent(self) -> float:
        """USD spent so far at the given prices."""
        return self.prices.cost(self.usage)

    def reserve(self, worst_case: Usage) -> float:
        """Reserve a request's worst-case cost; raise :class:`BudgetExceeded` if it could break the cap."""
        amount = self.prices.cost(worst_case)
        with self._lock:
            if self.max_cost is not None and self.spent + self._reserved + amount > self.max_cost:
                raise BudgetExceeded(
                    f"stopping before --max-cost USD {self.max_cost:.4f} would be exceeded: USD {self.spent:.4f} "
                    f"spent, USD {self._reserved:.4f} in flight, the next request could cost up to USD {amount:.4f}")
            self._reserved += amount
        return amount

    def settle(self, reserved: float, usage: Usage | None) -> None:
        """Replace a reservation by the usage the server reported (None: the request failed, nothing billed;
        ``reserved`` 0: a response that had no reservation, e.g. a Batch API result)."""
        with self._lock:
            self._reserved = max(0.0, self._reserved - reserved)
            if usage is not None:
                self.usage += usage
                self.requests += 1

    def retried(self, kind: str) -> None:
        with self._lock:
            self.retries += 1
            self.failures[kind] += 1

    def snapshot(self) -> dict[str, Any]:
        """What the manifest records: requests, retries, tokens, failures by kind, cost and prices."""
        with self._lock:
            out: dict[str, Any] = {"requests": self.requests, "retries": self.retries,
                                   "prompt_tokens": self.usage.prompt_tokens,
                                   "completion_tokens": self.usage.completion_tokens,
                                   "transient_failures": dict(sorted(self.failures.items())),
                                   "cost_usd": round(self.spent, 6), **self.prices.describe()}
            if self.max_cost is not None:
                out["max_cost_usd"] = self.max_cost
            return out


def _count(value: Any) -> int:
    """A token count as a server sent it; anything that is not a whole number counts zero."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e15:
        return 0
    return int(value)
