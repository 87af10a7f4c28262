"""The translator interface every MT backend implements: one module per backend (which declares its options once,
:attr:`Translator.OPTIONS`: the ``--translator-option`` keys and its ``beirx translate`` flags) plus one registry
line."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from beirx.errors import BeirxError
from beirx.options import Option, by_name


def setting(name: str, type: Any = None, default: Any = None, help: str = "", **how: Any) -> Option:
    """A backend option set with ``--translator-option NAME=VALUE`` only (no flag of its own)."""
    return Option(name, type, default, help, flag="", **how)


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
    #: Whether ``--batch`` can send this backend's units through a provider's Batch API
    #: (:class:`beirx.translate.execution.openai_batch.BatchExecutor`).
    supports_batch_api: ClassVar[bool] = False
    #: Whether the backend translates whole document units, each on its own and concurrently, as the LLM
    #: backends do (:class:`beirx.translate.llm.translator.LLMTranslator` says what that takes: ``unit_tokens``,
    #: ``one_line_units``, ``submit_unit`` for the streaming executor, ``run_report`` for the manifest).
    document_units: ClassVar[bool] = False
    #: Title of the help group of the flags this class declares (``beirx translate --help``), followed by the
    #: backends that take them; None: ``NAME (--translator NAME)``.
    flags_title: ClassVar[str | None] = None
    #: The :mod:`beirx.models.checks` kind a local ``model`` folder must be (None: the backend checks its own, or
    #: takes no model), so a caller can check it under its own flag before the backend is built.
    model_kind: ClassVar[str | None] = None

    #: Its options, declared once (:class:`beirx.options.Option`, each a keyword-only constructor parameter with
    #: the constructor's default): the ``--translator-option KEY=VALUE`` keys, read by :meth:`read_options`, and,
    #: for those with a flag (``flag=""``: none), the ``beirx translate`` flags generated from them. A subclass
    #: lists its base's too.
    OPTIONS: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, src: str, tgt: str, model: str | None = None, **options: Any):
        if options:  # every backend names its options in its constructor; what reaches here is unknown
            raise _unknown(self, options)
        self.src, self.tgt, self.model, self.options = src, tgt, model, options

    @classmethod
    def declared_options(cls) -> list[str]:
        """The ``--translator-option`` names this backend accepts (:attr:`OPTIONS`)."""
        return sorted(option.name for option in cls.OPTIONS)

    @classmethod
    def read_option(cls, name: str, value: Any, default: Any = None) -> Any:
        """One option's value (from code, a flag or ``--translator-option``) read by its declaration in
        :attr:`OPTIONS`, the message naming the backend and the option; None or an empty value is ``default``."""
        if value is None or value == "":
            return default
        return by_name(cls.OPTIONS)[name].read(value, f"{cls.name}: ")

    @classmethod
    def read_options(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` (``--translator-option`` pairs, flags, a file) read by :attr:`OPTIONS`: a number by its type
        (NaN and infinity refused, naming the option), an undeclared key refused naming the declared ones; an empty
        value is left for the constructor (its default)."""
        unknown = {key: value for key, value in values.items() if key not in cls.declared_options()}
        if unknown:
            raise _unknown(cls, unknown)
        declared = by_name(cls.OPTIONS)
        return {key: value if value is None or value == "" else declared[key].read(value, f"{cls.name}: ")
                for key, value in values.items()}

    def for_replicas(self, options: dict[str, Any], workers: int) -> dict[str, Any]:
        """The options of each of ``workers`` Ray replicas built from ``options`` (this backend's own). Default:
        the same; a backend with budgets shared by every replica (requests in flight, cost) divides them."""
        return options

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

    def check_ready(self) -> None:
        """Fail now, before any download or segmenting, when a real run could not start (e.g. a paid API's
        missing credential). Default: nothing to check."""

    def max_segment_tokens(self) -> int | None:
        """The model's input limit in its own tokens, or None when the backend has none."""
        return None

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


def _unknown(translator: Any, options: Mapping[str, Any]) -> BeirxError:
    """The refusal of options ``translator`` (a backend or its class) does not declare, naming those it does."""
    return BeirxError(f"unknown option{'s' if len(options) > 1 else ''} {', '.join(sorted(options))} for the "
                      f"{getattr(translator, 'name', getattr(translator, '__name__', type(translator).__name__))} "
                      f"translator; valid options: {', '.join(translator.declared_options()) or 'none'}")
