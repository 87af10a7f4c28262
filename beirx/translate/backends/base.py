"""The translator interface every MT backend implements (one file per backend, one registry line)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar


class Translator(ABC):
    """Translates batches of plain-text segments from ``src`` to ``tgt`` (ISO 639-1 codes).

    The pipeline owns segmentation, deduplication, the translation memory and resume; a backend only
    maps a list of segments to a list of translations of the same length and order.
    """

    name: ClassVar[str]
    #: Largest number of segments the pipeline should hand over at once.
    max_batch_size: ClassVar[int] = 32
    #: Whether the backend keeps placeholder tokens such as ``⟦0⟧`` intact (for verbatim URLs/numbers).
    keeps_placeholders: ClassVar[bool] = False
    #: List price in USD per million source characters for paid APIs (``--dry-run``); None = no per-character charge.
    cost_per_million_chars: ClassVar[float | None] = None
    #: Where and when that price was read.
    price_source: ClassVar[str] = ""

    def __init__(self, src: str, tgt: str, model: str | None = None, **options: Any):
        if options:  # every backend names its options in its constructor; what reaches here is unknown
            from beirx.errors import BeirxError

            raise BeirxError(f"unknown option{'s' if len(options) > 1 else ''} {', '.join(sorted(options))} for the "
                             f"{getattr(self, 'name', type(self).__name__)} translator; valid options: "
                             f"{', '.join(self.declared_options()) or 'none'}")
        self.src, self.tgt, self.model, self.options = src, tgt, model, options

    @classmethod
    def declared_options(cls) -> list[str]:
        """The ``--translator-option`` names this backend accepts: its (and its bases') keyword-only parameters."""
        import inspect

        names: set[str] = set()
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            names.update(p.name for p in inspect.signature(init).parameters.values()
                         if p.kind is inspect.Parameter.KEYWORD_ONLY)
        return sorted(names - {"retry_policy"})

    def close(self) -> None:
        """Release what the backend holds (connections, threads); idempotent, and a later call may start them
        again. Whoever creates a translator closes it (``with translator:``)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Backend, model, revision and output-affecting options: the translation-memory key and the
        manifest entry. Never an API key."""

    @abstractmethod
    def translate_batch(self, segments: list[str]) -> list[str]:
        """Translate ``segments`` (non-empty strings) and return one output per input, in order."""

    #: LLM backends: units hold one paragraph at most (a single-line prompt, e.g. few-shot completions).
    one_line_units: ClassVar[bool] = False

    def check_ready(self) -> None:
        """Fail now, before any download or segmenting, when a real run could not start (e.g. a paid API's
        missing credential). Default: nothing to check."""

    def max_segment_tokens(self) -> int | None:
        """The model's input limit in its own tokens, or None when the backend has none."""
        return None

    def unit_token_budget(self) -> int | None:
        """LLM backends: the token budget of a document unit (:mod:`beirx.translate.llm.units`); None for
        sentence-level backends."""
        return None

    def run_report(self, tally: dict[str, Any]) -> dict[str, Any]:
        """LLM backends: the manifest's ``llm`` record of a run, given the outcome ``tally`` of its units."""
        raise NotImplementedError

    def count_tokens(self, text: str) -> int:
        """Length of ``text`` in the backend's units (default: whitespace words)."""
        return len(text.split())

    @classmethod
    def billable_characters(cls, segments: Sequence[str]) -> int:
        """Characters a service would bill for sending ``segments`` (default: source Unicode code points)."""
        return sum(len(s) for s in segments)

    @classmethod
    def estimate_cost(cls, characters: int) -> dict[str, Any] | None:
        """The list-price estimate for ``characters`` billed characters; None when nothing is charged per character."""
        return None

    def earlier_descriptions(self) -> list[dict[str, Any]]:
        """Descriptions under which earlier beirx versions stored this same system in a translation memory.

        The memory key hashes :meth:`describe`; when the way a backend describes itself changes (not what it
        translates), listing the old description lets the memory adopt those translations instead of
        redoing hours of work. Default: none.
        """
        return []
