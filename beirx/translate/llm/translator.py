"""The translation task both LLM backends share: prompt, validate, fall back or flag.

For each unit (:mod:`beirx.translate.planning.document_units`), :class:`beirx.models.llm.engine.UnitEngine` (the one
loop of every LLM stage, live and Batch: a rejected answer asked again with the stricter prompt naming what was wrong, a
unit cut at ``max_tokens`` split in two) asks with this module's request (:mod:`.translation_prompts`), check
(:mod:`.validator`) and cut (at the middle line, else sentence boundary). A unit still rejected after
``retries`` is translated by the ``fallback`` translator (any other beirx backend, sentence by sentence, line
by line); without one, the last answer that is only *softly* wrong is written, else the source text is kept,
and either is flagged with the reasons (:meth:`LLMTranslator.conclude`).

Nothing leaves without a :class:`~beirx.translate.output.outcome.Checked` note saying which of these happened. Errors
that are not about one unit's text (the server down or timing out after its retries, a dropped connection, an answer
that is not a completion, ``--max-cost`` reached, a bad key) stop the run: the unit is never concluded, so it
stays pending and a rerun sends it. A backend only chooses where the answers come from (``llm``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from pathlib import Path
from typing import Any, ClassVar

from beirx.argtypes import checked, non_negative_float, non_negative_int, option
from beirx.errors import BeirxError
from beirx.models.llm import CHAT, COMPLETIONS, LLM, LLMRequestError, Reply, Request, TokenCounter, Usage
from beirx.models.llm.connection import ConnectionSettings, Role, role_options
from beirx.models.llm.engine import Attempts, Reason, Unit, UnitEngine, Verdict
from beirx.options import Option
from beirx.translate.backends import TRANSLATOR_FOR_BACKEND
from beirx.translate.backends.base import Translator
from beirx.translate.llm.glossary import Glossary
from beirx.translate.llm.translation_prompts import TranslationPrompts
from beirx.translate.llm.validator import LENGTH_BOUNDS, Validator
from beirx.translate.output.outcome import FALLBACK, FLAGGED, RETRIED, Checked
from beirx.translate.planning.document_units import unmark
from beirx.translate.planning.placeholders import PLACEHOLDER
from beirx.translate.planning.segment import split_sentences

log = logging.getLogger(__name__)

at_least_16 = checked(int, lambda v: v >= 16, "at least 16", "at_least_16")
int_ = checked(int, lambda v: True, "an integer", "int_")
#: Output tokens allowed per input token (translations into most languages take 1-1.5x; headroom for more).
OUTPUT_FACTOR = 2.5


#: The LLM of ``beirx translate`` (:mod:`beirx.models.llm.connection`): ``--llm-<option>``; the translator's
#: unprefixed flags stay accepted; the spending cap is the command's ``--max-cost``, shared with paid backends.
TRANSLATION = Role("llm-", "", aliases={"base_url": ("--base-url",), "concurrency": ("--concurrency",),
                                        "timeout": ("--timeout",), "price_in": ("--price-in",),
                                        "price_out": ("--price-out",)},
                   unflagged=("max_cost",))


class LLMTranslator(Translator):
    """Options (``--translator-option KEY=VALUE``, or the flags of :attr:`OPTIONS`): the LLM connection's
    (:mod:`beirx.models.llm.connection`; ``hf-llm`` runs its model in this process and refuses a server's by
    name), the task's below, and ``temperature`` (default 0), ``seed`` (default 0), ``length_bounds`` (``LO,HI``:
    the output/source length ratios accepted, :mod:`.validator`), ``max_cost`` (USD; ``--max-cost``)."""

    flags_title = "LLM translators"
    #: Where this translator's LLM runs (``--llm-backend``).
    llm_backend: ClassVar[str]
    OPTIONS: ClassVar[tuple[Option, ...]] = (
        Option("api", choices=(CHAT, COMPLETIONS), default=CHAT,
               help="chat completions, or few-shot plain completions for base models"),
        Option("retries", non_negative_int, 2, "rejected answers sent again with a stricter prompt", metavar="N"),
        Option("fallback", metavar="TRANSLATOR",
               help="backend for units still rejected after the retries (e.g. apertium, hf); default: write them "
                    "flagged"),
        Option("prompt_file", help="TOML file overriding beirx's prompts (see beirx/translate/llm/prompts.toml)",
               metavar="PROMPT_FILE"),
        Option("glossary", help="TSV: term TAB translation, or a term alone (keep it)", metavar="GLOSSARY"),
        Option("unit_tokens", at_least_16, 1000,
               "document unit budget in tokens; longer documents split at paragraphs, then sentences",
               metavar="N"),
        Option("temperature", non_negative_float, 0.0, "sampling temperature", flag=""),
        Option("seed", int_, 0, "sampling seed (none: not sent)", flag=""),
        Option("length_bounds", None, None, "LO,HI: the output/source length ratios accepted", flag=""),
        *role_options(TRANSLATION),
    )

    document_units = True  # see the base; ``unit_tokens`` is set by the constructor
    keeps_placeholders = False  # small models mangle ⟦0⟧; URLs and numbers are checked by the validation

    def __init__(self, src: str, tgt: str, model: str | None = None, *, api: str = CHAT,
                 prompt_file: str | Path | None = None, glossary: str | Path | None = None, retries: int | str = 2,
                 fallback: str | None = None, unit_tokens: int | str = 1000, temperature: float | str = 0.0,
                 seed: int | str | None = 0, length_bounds: str | tuple[float, float] | None = None,
                 backend: str | None = None, price_in: float | str = 0.0, price_out: float | str = 0.0,
                 max_cost: float | str | None = None, **options: Any):
        super().__init__(src, tgt, model, **options)
        if not model:
            raise BeirxError(f"the {self.name} translator needs --model (the model name the server serves, or a "
                             "model folder)")
        self.connection = ConnectionSettings.read({"backend": backend, "price_in": price_in, "price_out": price_out,
                                                   "max_cost": max_cost}, f"{self.name}: ")
        if self.connection.backend not in (None, self.llm_backend):
            raise BeirxError(f"--llm-backend {self.connection.backend} is --translator "
                             f"{TRANSLATOR_FOR_BACKEND[self.connection.backend]}, not {self.name}")
        self.retries = option(self.name, "retries", retries, non_negative_int)
        self.unit_tokens = option(self.name, "unit_tokens", unit_tokens, at_least_16)
        self.glossary = Glossary.load(glossary) if glossary else None
        self.prompts = TranslationPrompts(src, tgt, api, prompt_file, self.glossary,
                                          option(self.name, "temperature", temperature, non_negative_float),
                                          None if seed in (None, "", "none") else option(self.name, "seed", seed, int_))
        self.api = api
        self.one_line_units = api != CHAT  # units of one line: a completion stops at the end of the line
        bounds = LENGTH_BOUNDS
        if length_bounds:
            parts = str(length_bounds).split(",") if isinstance(length_bounds, str) else list(length_bounds)
            bounds = tuple(option(self.name, "length_bounds", x, non_negative_float) for x in parts)
            if len(bounds) != 2 or bounds[0] > bounds[1]:
                raise BeirxError(f"{self.name}: option length_bounds must be LOW,HIGH with LOW <= HIGH, got "
                                 f"{length_bounds!r}")
        self.validator = Validator(src, tgt, self.prompts.fields["tgt_name"], self.glossary, bounds)
        self.fallback_name = fallback or None
        self._fallback: Translator | None = None
        self._fallback_lock = threading.Lock()
        self.prices, self.max_cost = self.connection.prices(), self.connection.max_cost
        self.counter = TokenCounter(model)
        self.engine = UnitEngine(self, self.retries)

    # -- what the pipeline asks ------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:  # the planner's unit budget and max_tokens: the model's tokens
        return self.counter.count(text)

    @classmethod
    def billable_characters(cls, segments) -> int:
        """Characters of the units (without their kind marker)."""
        return sum(len(unmark(s)[1]) for s in segments)

    def describe(self) -> dict[str, Any]:
        """What changes a translation (the memory key): model, api, prompts, glossary, sampling. Not the
        server's address, limits, retries or fallback (the memory's notes say what each unit went through)."""
        return {"backend": self.name, "model": self.model, "api": self.api, **self.prompts.file.describe(),
                "temperature": self.prompts.temperature, "seed": self.prompts.seed,
                **({"glossary_sha256": self.glossary.sha256} if self.glossary else {})}

    def settings(self) -> dict[str, Any]:
        """The run's settings for the manifest (beyond :meth:`describe`)."""
        return {"retries": self.retries, "fallback": self.fallback_name, "unit_tokens": self.unit_tokens,
                "token_counting": self.counter.method, "length_bounds": list(self.validator.bounds),
                "glossary": self.glossary.describe() if self.glossary else None,
                "prompt_source": self.prompts.file.source}

    # -- the LLM -------------------------------------------------------------------------------------------
    #: Where answers come from (:class:`beirx.models.llm.LLM`: a server or a model in this process); set by
    #: the backend's constructor.
    llm: LLM
    #: Units the streaming executor keeps in flight (:class:`beirx.translate.execution.executors.StreamingExecutor`).
    units_in_flight: int = 16

    # -- translating ----------------------------------------------------------------------------------------
    def submit_unit(self, segment: str) -> concurrent.futures.Future:
        """Translate one segment (a marked unit) in the background; the future holds its :class:`Checked`."""
        return self.llm.schedule(self.translate_unit(segment))

    def translate_batch(self, segments: list[str]) -> list[str]:
        return [future.result() for future in [self.submit_unit(segment) for segment in segments]]

    async def translate_unit(self, segment: str) -> Checked:
        kind, text = unmark(segment)
        result = await self.engine.run(Unit(kind, text), self._ask)
        if result.text is None and self.fallback_name:
            return await asyncio.to_thread(self.conclude, text, result)
        return self.conclude(text, result)

    async def _ask(self, request: Request) -> Reply | Reason:
        try:
            return await self.llm.acall(request)
        except LLMRequestError as exc:
            if not exc.about_this_request:  # a bad key or model name: nothing else will work either
                raise
            log.warning("unit refused by the server (%s); splitting it", exc)
            return Reason.REQUEST_REFUSED
        # Any other error (the server unreachable, timing out, answering nonsense; the budget spent) is not an
        # answer about this unit: it propagates, the unit stays untranslated and a rerun sends it again.

    # -- the engine's task ---------------------------------------------------------------------------------
    def max_tokens(self, unit: Unit) -> int:
        """The answer's ``max_tokens`` for a unit: :data:`OUTPUT_FACTOR` times its tokens, plus a margin."""
        return int(self.count_tokens(unit.text) * OUTPUT_FACTOR) + 16

    def request(self, unit: Unit, attempts: Attempts) -> Request:
        return self.prompts.request(unit.kind, unit.text, attempts.max_tokens, attempts.reasons or None)

    def check(self, unit: Unit, reply: Reply) -> Verdict:
        return self.validator.check(unit.kind, unit.text, reply)

    def halves(self, unit: Unit) -> tuple[str, str, str] | None:
        """``(left, separator, right)`` of a unit cut at its middle line, else its middle sentence boundary."""
        lines = unit.text.split("\n")
        if len(lines) > 1:
            middle = len(lines) // 2
            return "\n".join(lines[:middle]), "\n", "\n".join(lines[middle:])
        pieces = split_sentences(unit.text, self.src)
        gaps = [i for i, (_, is_segment) in enumerate(pieces) if not is_segment]
        if not gaps:
            return None
        i = min(gaps, key=lambda i: abs(len("".join(p for p, _ in pieces[:i])) - len(unit.text) / 2))
        return "".join(p for p, _ in pieces[:i]), pieces[i][0], "".join(p for p, _ in pieces[i + 1:])

    def conclude(self, text: str, result: Attempts) -> Checked:
        """The unit's translation and note once its attempts are over (falling back when they failed)."""
        usage, rejected = tuple(result.usage), list(dict.fromkeys(result.rejected))
        if result.text is not None:
            note = None if not rejected else {"outcome": RETRIED, "reasons": rejected, "attempts": result.attempts,
                                              "written": "llm"}
            return Checked(result.text, note, usage, result.stripped)
        note = {"outcome": FLAGGED, "reasons": result.reasons, "attempts": result.attempts, "rejected": rejected}
        if result.details:
            note["details"] = result.details
        if self.fallback_name:
            translated = self._fall_back(text)
            if translated is not None:
                return Checked(translated, {**note, "outcome": FALLBACK, "written": "fallback",
                                            "fallback": self.fallback_name}, usage)
            note["reasons"] = list(dict.fromkeys(note["reasons"] + ["fallback_failed"]))
        kept = result.candidate is not None  # the last softly wrong answer, else the source
        return Checked(result.candidate if kept else text, {**note, "written": "llm" if kept else "source"}, usage)

    def _fall_back(self, text: str) -> str | None:
        """The fallback backend's translation of a unit, line by line and sentence by sentence; None when it
        lost a line or a placeholder (then the unit is flagged)."""
        from beirx.translate.backends import TRANSLATORS
        from beirx.translate.planning.text_plan import translate_texts

        with self._fallback_lock:
            if self._fallback is None:
                self._fallback = TRANSLATORS.get(self.fallback_name)(self.src, self.tgt)
            try:
                out = translate_texts(self._fallback, text.split("\n"))
            except BeirxError as exc:
                log.warning("fallback %s failed: %s", self.fallback_name, exc)
                return None
        if any(not line.strip() or "\n" in line for line in out) or \
                sorted(PLACEHOLDER.findall(text)) != sorted(PLACEHOLDER.findall("\n".join(out))):
            return None
        return "\n".join(out)

    def close(self) -> None:
        self.llm.close()
        with self._fallback_lock:
            if self._fallback is not None:
                self._fallback.close()

    # -- the manifest ----------------------------------------------------------------------------------------
    def run_report(self, tally: dict[str, Any]) -> dict[str, Any]:
        """The manifest's ``llm`` record of a run, given the outcome ``tally`` of its units; the transport's
        retries and failures (below the validation) from the LLM's meter (a local model has none)."""
        cost = self.prices.cost(Usage(tally["prompt_tokens"], tally["completion_tokens"]))
        transport = self.llm.meter.snapshot()
        return {**self.settings(), "this_run": {**tally, "transport_retries": transport["retries"],
                                                 "transport_failures": transport["transient_failures"],
                                                 "cost_usd": round(cost, 6), **self.prices.describe()}}
