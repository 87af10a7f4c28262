"""What an LLM run will cost before it runs (``--dry-run``; ``--max-cost`` is enforced while it runs, as
:mod:`beirx.translate.planning.budget` says).

The estimate builds each missing unit's real request (:mod:`beirx.translate.llm.translation_prompts`) and counts its
tokens with the backend's counter (the model's tokenizer when ``--model`` is a local folder, else characters / 4, stated
as ``method``); the answer is estimated at :data:`OUTPUT_RATIO` times the unit's tokens (a translation into a European
language runs 1-1.3x the English). Retries come on top (each rejected answer costs one more request).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from beirx.models.llm import Usage
from beirx.models.llm.calls import CHAT_FRAMING_TOKENS
from beirx.models.llm.engine import Attempts, Unit
from beirx.translate.planning.document_units import unmark

OUTPUT_RATIO = 1.3


class Estimate:
    """Summed over the units still to translate; :meth:`as_dict` is the dry run's ``llm`` entry."""

    def __init__(self, translator):
        self.translator = translator
        self.requests = self.prompt_tokens = self.completion_tokens = 0

    def add(self, segments: Iterable[str]) -> None:
        translator = self.translator
        for segment in segments:
            kind, text = unmark(segment)
            request = translator.engine.request(Unit(kind, text), Attempts())
            self.requests += 1
            self.prompt_tokens += translator.count_tokens(request.text) + CHAT_FRAMING_TOKENS * len(request.messages)
            self.completion_tokens += math.ceil(translator.count_tokens(text) * OUTPUT_RATIO)

    def as_dict(self) -> dict[str, Any]:
        prices = self.translator.prices
        usage = Usage(self.prompt_tokens, self.completion_tokens)
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "token_counting": self.translator.counter.method,
                "output_ratio": OUTPUT_RATIO, "estimated_cost_usd": round(prices.cost(usage), 6),
                **prices.describe(), "note": "one request per unit; each retry of a rejected answer adds one"}
