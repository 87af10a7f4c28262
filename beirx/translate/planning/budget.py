"""Paid translation runs: the estimate, the cap the user allows (``--max-cost``) and the cost in the manifest.

A paid backend (one with ``cost_per_million_chars``, e.g. ``google`` or ``deepl``) bills every character
sent. So a real run is refused unless the user states a cap, and refused when the list-price estimate of
what is still missing from the translation memory (:func:`beirx.translate.pipeline.dry_run`) exceeds it,
before anything is sent. After the run, the manifest records the estimate, the cap, the characters the
pipeline actually sent and their list price. Local backends are never paid runs.

LLM backends (``openai``) are priced per token instead (``--llm-price-in/--llm-price-out``), and an answer's length is
only known once it arrives, so their cap is enforced while the run goes: the shared client reserves each
request's worst case against ``--max-cost`` and stops before it could be crossed
(:class:`beirx.models.llm.UsageMeter`), keeping what was done; their estimate is
:mod:`beirx.translate.planning.cost_estimate` and their cost is the manifest's ``llm`` record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import FILENAME, TranslationManifest
from beirx.errors import BeirxError
from beirx.translate.backends.base import Translator


def is_paid(translator: Translator | type[Translator]) -> bool:
    """Whether ``translator`` (a backend or its class) charges per character sent."""
    return bool(translator.cost_per_million_chars)


def require_cap(translator: Translator, max_cost: float | None) -> None:
    """A shard of a paid run must carry its own cap (its estimate is only known for the whole dataset)."""
    if is_paid(translator) and max_cost is None:
        raise BeirxError(f"{translator.name} is a paid service: pass --max-cost USD for each shard (the estimate of "
                         "the whole dataset is printed by --dry-run)")


def paid_run(dataset, translator: Translator, memory, max_cost: float | None, say: Callable[[str], None],
             no_cap: Callable[["Budget"], str] | None = None, **segmenting: Any) -> "Budget | None":
    """The one entry point of a paid run (``beirx translate``, suites): None for a backend that is not paid;
    else its :class:`Budget` from a dry run of what ``memory`` still lacks, told through ``say`` and checked
    against ``max_cost`` before anything is sent (``no_cap``: the refusal when no cap is set, given the budget).
    After the run, :meth:`Budget.record` puts the cost in the manifest."""
    if not is_paid(translator):
        return None
    from beirx.translate.pipeline import dry_run

    paid = Budget.of(dry_run(dataset, translator, memory, **segmenting), translator, max_cost)
    say(paid.summary())
    paid.check(no_cap(paid) if no_cap and max_cost is None else None)
    return paid


@dataclass(frozen=True)
class Budget:
    """A paid run's list-price estimate (from a dry run) and the cap it must stay under."""

    translator: str
    characters: int
    estimated_usd: float
    price_source: str | None
    max_cost_usd: float | None

    @classmethod
    def of(cls, dry_run: dict[str, Any], translator: Translator, max_cost: float | None) -> "Budget":
        """The budget of what ``dry_run`` (:func:`beirx.translate.pipeline.dry_run`) says is left to send."""
        cost = dry_run["cost"]
        return cls(translator=translator.name, characters=cost["characters"],
                   estimated_usd=cost["estimated_cost_usd"] or 0.0, price_source=cost.get("price_source"),
                   max_cost_usd=max_cost)

    def summary(self) -> str:
        return (f"estimate: {self.characters:,} characters to send to {self.translator} = USD "
                f"{self.estimated_usd:.2f} at list price ({self.price_source or 'see the backend docs'})")

    def check(self, no_cap: str | None = None) -> None:
        """Refuse the run when no cap is given (with ``no_cap`` as the message, when given) or the estimate
        exceeds it (nothing has been sent yet)."""
        if self.max_cost_usd is None:
            raise BeirxError(no_cap or f"{self.translator} is a paid service: pass --max-cost USD to allow this run "
                             f"(estimate USD {self.estimated_usd:.2f}), or --dry-run to see the counts only")
        if self.estimated_usd > self.max_cost_usd:
            raise BeirxError(f"the estimate USD {self.estimated_usd:.2f} exceeds --max-cost {self.max_cost_usd:.2f}; "
                             "nothing was sent")

    def record(self, manifest: TranslationManifest, translator: Translator, folder: Path) -> TranslationManifest:
        """``manifest`` with the run's cost (characters sent as the pipeline counted them, on every executor,
        at list price), saved again in ``folder``."""
        sent = manifest.counts["characters"]
        spent = translator.estimate_cost(sent)["estimated_cost_usd"]
        manifest = dataclasses.replace(manifest, cost={"estimated_usd": self.estimated_usd,
                                                       "max_cost_usd": self.max_cost_usd,
                                                       "characters_estimated": self.characters,
                                                       "characters_sent": sent, "spent_usd": spent})
        manifest.save(folder / FILENAME)
        return manifest
