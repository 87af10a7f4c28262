"""The ``judge`` quality method: an LLM reads each source and translation and annotates the errors
(``--judge-model M --judge-base-url URL``: any OpenAI-compatible server; ``--judge-model DIR``: a causal LM in
this process; ``--judge-backend openai|transformers``, short ``--judge``, says which when the URL does not;
the same code either way, through :class:`beirx.models.llm.LLM`; the connection's options, prices and
retries: :mod:`beirx.models.llm.connection`).

The prompt (``judge_prompts.toml``, versioned, its SHA-256 recorded; ``--judge-prompt-file`` overrides it)
asks for GEMBA-MQM-style error spans with a category and a severity (Kocmi & Federmann, 2023) and a 0-100
direct assessment (GEMBA-DA, Kocmi & Federmann, 2023, "Large Language Models Are State-of-the-Art Evaluators
of Translation Quality") in one JSON answer: one request per row instead of GEMBA's two. Per row:

- ``judge_mqm``: the MQM score of the annotated errors (:mod:`beirx.translate.quality.mqm`), -25 to 0;
- ``judge_da``: the direct assessment, 0-100.

Flags: ``judge_major_error`` (a critical or major error annotated) and ``judge_low_score`` (direct assessment
below ``--judge-min-score``, default 50: less than half the meaning).

An answer that is not a valid judgement (no JSON, a score outside 0-100, an unknown severity, cut off by the
token limit, a refusal) is sent again with the reason quoted back (``--judge-retries``, default 2); one cut off
by the token limit is asked again with twice the ``max_tokens`` (the unit engine's rule for every task); one still
malformed is recorded as missing (``null`` in the rows, counted in the field summary with examples), never
guessed. A request the server refuses is missing too; a dead server (the client's circuit breaker) or the
spending cap stops the run. Valid judgements are cached in ``$BEIRX_HOME/judgements`` per (model, server,
prompt, languages, texts), committed as they arrive, so a killed run resumes and a rerun asks nothing twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any, ClassVar

from beirx.argtypes import non_negative_float, non_negative_int, positive_int
from beirx.data.cache import cache_dir
from beirx.errors import BeirxError
from beirx.models.llm import LLM
from beirx.models.llm.connection import ConnectionSettings, Role, role_options
from beirx.options import Option
from beirx.progress import progress, skip
from beirx.sqlite_store import KeyValueCache
from beirx.translate.planning.dataset_plan import chunks
from beirx.translate.quality.base import (FieldPairs, JudgedRows, MethodResult, QualityContext, QualityMethod,
                                          Score, rows_to_score)
from beirx.translate.quality.mqm import CAP, Judgement, Malformed, parse

log = logging.getLogger(__name__)

DEFAULT_SAMPLE = 200
CHUNK = 64  # rows per round of concurrent requests (and per cache commit)
MAX_EXAMPLES = 5
KINDS = {"queries": "search query", "corpus": "document"}


class LLMJudge(QualityMethod):
    name = "judge"
    scores = (Score("judge_mqm", "MQM score of the errors an LLM judge annotated (critical 25, major 5, minor 1, "
                                 "capped, negated)", scale=(-float(CAP), 0.0)),
              Score("judge_da", "an LLM judge's direct assessment, 0-100", scale=(0.0, 100.0)))
    flags = {"judge_major_error": "the LLM judge annotated a critical or major error",
             "judge_low_score": "the LLM judge's direct assessment is below --judge-min-score"}
    verifies = ("an LLM judge scored {n} translations", "LLM-judged items")
    whole_field = True  # its sample is drawn over the field; one usage meter and spending cap per field

    #: The judge's LLM (:mod:`beirx.models.llm.connection`): ``--judge-<option>``; ``--judge openai|transformers``
    #: stays the short spelling of ``--judge-backend``.
    ROLE = Role("judge-", "", aliases={"backend": ("--judge",)})
    OPTIONS: ClassVar[tuple[Option, ...]] = (
        Option("model", flag="--judge-model", metavar="M",
               help="the judge's model, as the server names it (transformers: a model folder or Hub id); asking "
                    "for it runs the judge (GEMBA-MQM errors and a 0-100 score)"),
        Option("sample", rows_to_score, DEFAULT_SAMPLE, flag="--judge-sample", metavar="N|all|qrels:SPLIT",
               help="rows per field to judge: a seeded sample, all, or qrels:SPLIT (the queries and documents the "
                    "SPLIT qrels judge)"),
        Option("retries", non_negative_int, 2, flag="--judge-retries", metavar="N",
               help="a malformed answer is asked again this many times, then recorded missing"),
        Option("min_score", non_negative_float, 50.0, flag="--judge-min-score",
               help="flag rows the judge scores below this (0-100)"),
        Option("max_tokens", positive_int, 512, flag="--judge-max-tokens", metavar="N", help="answer length limit"),
        Option("prompt_file", flag="--judge-prompt-file", metavar="PROMPT_FILE",
               help="TOML file overriding the judge's prompts (see beirx/translate/quality/judge_prompts.toml)"),
        *role_options(ROLE),
    )

    def __init__(self, model: str, *, backend: str | None = None, base_url: str | None = None,
                 sample: int | JudgedRows | None = DEFAULT_SAMPLE, retries: int = 2, min_score: float = 50.0,
                 max_tokens: int = 512, concurrency: int = 8, timeout: float = 120.0, deadline: float | None = None,
                 attempts: int = 6, backoff: float = 1.0, breaker_failures: int = 10, breaker_seconds: float = 30.0,
                 prompt_file: Path | str | None = None, max_cost: float | None = None, price_in: float = 0.0,
                 price_out: float = 0.0, use_cache: bool = True, device: str | None = None, llm: LLM | None = None):
        from beirx.models.llm import PromptFile

        self.connection = ConnectionSettings.read(
            {"backend": backend, "base_url": base_url, "concurrency": concurrency, "timeout": timeout,
             "deadline": deadline, "attempts": attempts, "backoff": backoff, "breaker_failures": breaker_failures,
             "breaker_seconds": breaker_seconds, "price_in": price_in, "price_out": price_out, "max_cost": max_cost},
            "judge: ")
        self.llm = llm if llm is not None else self.connection.connect(model, device=device, what="--judge",
                                                                       flag="--judge-model")
        self.prompts = PromptFile.load("beirx.translate.quality", "judge_prompts.toml", prompt_file)
        for key in ("system", "user", "retry"):
            self.prompts.get(key)  # a prompt file without one fails now, naming it, not mid-run
        self.sample, self.retries, self.min_score, self.max_tokens = sample, retries, min_score, max_tokens
        self.prices, self.max_cost, self.use_cache = self.connection.prices(), self.connection.max_cost, use_cache

    @classmethod
    def from_options(cls, given: dict[str, Any], src: str, tgt: str, use_cache: bool = True) -> LLMJudge | None:
        """:meth:`configured` by the options given."""
        return cls.configured(dict(given), use_cache=use_cache)

    @classmethod
    def configured(cls, values: dict[str, Any], *, device: str | None = None,
                   use_cache: bool = True) -> LLMJudge | None:
        """The judge ``values`` (its options given, by name) ask for, or None: it runs when its model is given;
        where (:func:`beirx.models.llm.connection.backend_for`): ``backend``, else a server when ``base_url``
        is given, else in this process. Other judge options without a model are refused, naming it."""
        if not values.get("model"):
            backend = values.get("backend")
            if backend:
                raise BeirxError(f"--judge {backend} needs --judge-model (" + (
                    "the model name the server lists)" if backend == "openai" else "a model folder or Hub id)"))
            if values:
                flags = {o.name: o.flag_name() for o in cls.OPTIONS}
                raise BeirxError(f"{', '.join(sorted(flags[name] for name in values))} without --judge-model: "
                                 "name the judge's model to run it")
            return None
        return cls(**values, device=device, use_cache=use_cache)

    def describe(self, context: QualityContext) -> dict[str, Any]:
        return {**self.llm.describe(), **self.prompts.describe(), "retries": self.retries,
                "max_tokens": self.max_tokens, "min_score": self.min_score, "api": "chat", "temperature": 0.0}

    # -- requests ---------------------------------------------------------------------------------------------
    def _messages(self, context: QualityContext, kind: str, source: str, translation: str) -> list[dict[str, str]]:
        from beirx.language_packs import get_pack

        names = {"src_name": get_pack(context.src_lang).name, "tgt_name": get_pack(context.tgt_lang).name}
        return [{"role": "system", "content": self.prompts.fill("system", **names)},
                {"role": "user", "content": self.prompts.fill("user", kind=kind, source=source, translation=translation,
                                                              **names)}]

    def _key(self, context: QualityContext, kind: str, source: str, translation: str) -> str:
        identity = [self.llm.model, self.llm.location, self.prompts.sha256, context.src_lang,
                    context.tgt_lang, kind, source, translation]
        return hashlib.sha256("\x1f".join(identity).encode("utf-8")).hexdigest()

    def score(self, pairs: FieldPairs, context: QualityContext) -> MethodResult:
        from beirx.models.llm import BudgetExceeded, EndpointDown, LLMError, UsageMeter
        from beirx.models.llm.engine import Attempts, Unit, UnitEngine

        picked = context.sample(pairs, self.sample, "judge")
        kind = KINDS[pairs.field]
        conversations = {pairs.ids[i]: self._messages(context, kind, pairs.sources[i], pairs.translations[i])
                         for i in picked}
        keys = {pairs.ids[i]: self._key(context, kind, pairs.sources[i], pairs.translations[i]) for i in picked}
        cache = KeyValueCache(cache_dir("judgements") / "judgements.sqlite", "judgement cache", "judgements",
                              value="answer") if self.use_cache else None  # shared by concurrent runs
        known = {key: parse(answer) for key, answer in cache.get_many(keys.values()).items()} if cache else {}
        judged = {item: known[key] for item, key in keys.items() if key in known}
        meter = UsageMeter(self.prices, self.max_cost)  # this field's usage and spending cap, passed per request
        engine = UnitEngine(_Rows(self, conversations), self.retries)  # a malformed answer is asked again

        async def ask(request):
            return await self.llm.acall(request, meter=meter)

        async def judge(item: str) -> tuple[Attempts, str | None]:
            attempts = Attempts()
            try:
                await engine.run(Unit(kind, item), ask, attempts)
            except (EndpointDown, BudgetExceeded):
                raise
            except LLMError as exc:  # refused or never answered: missing (asked again by a rerun), never guessed
                return attempts, str(exc)
            return attempts, None

        async def rows(chunk: list[str]) -> list:
            return await asyncio.gather(*map(judge, chunk), return_exceptions=True)

        malformed: dict[str, tuple[str, str]] = {}  # id -> (reason, answer) of the last attempt
        failed: dict[str, str] = {}
        retried = 0
        todo = [item for item in conversations if item not in judged]
        try:
            with progress(total=len(picked), desc=f"judge {pairs.field}", unit="row",
                          enabled=context.show_progress) as bar:
                skip(bar, len(picked) - len(todo))
                for chunk in chunks(todo, CHUNK):
                    outcomes = self.llm.schedule(rows(chunk)).result()
                    fatal = next((o for o in outcomes if isinstance(o, BaseException)), None)
                    if fatal is not None:  # a dead server or the spending cap
                        raise fatal
                    fresh: dict[str, Judgement] = {}
                    # in the order of the round each row ended in (a refusal may come after k malformed answers)
                    for item, (attempts, error) in sorted(zip(chunk, outcomes), key=lambda o: o[1][0].attempts):
                        retried += attempts.attempts - (error is None)
                        if error is not None:
                            failed[item] = error
                        elif attempts.text is None:
                            malformed[item] = (attempts.message, attempts.last)
                        else:
                            fresh[item] = attempts.text
                    if cache is not None and fresh:
                        cache.put_many({keys[item]: json.dumps(j.to_json(), ensure_ascii=False)
                                        for item, j in fresh.items()})
                    judged.update(fresh)
                    bar.update(len(chunk))
        finally:
            self.llm.close()
            if cache is not None:
                cache.close()
        return self._result(picked, pairs, judged, malformed, failed, retried, meter)

    def _result(self, picked: list[int], pairs: FieldPairs, judged: dict[str, Judgement],
                malformed: dict[str, tuple[str, str]], failed: dict[str, str], retried: int, meter) -> MethodResult:
        ids = [pairs.ids[i] for i in picked]
        mqm = {item: judged[item].mqm if item in judged else None for item in ids}
        da = {item: judged[item].score if item in judged else None for item in ids}
        result = MethodResult(values={"judge_mqm": mqm, "judge_da": da}, scored=len(judged),
                              missing=len(ids) - len(judged))
        for item, judgement in judged.items():  # (the picked rows' judgements)
            errors = [e.__dict__ for e in judgement.errors]
            if judgement.worst_severity() in ("critical", "major"):
                result.flag(item, "judge_major_error", judge_errors=errors)
            if judgement.score < self.min_score:
                result.flag(item, "judge_low_score", judge_errors=errors)
        if malformed or failed:
            log.warning("LLM judge, %s: %d of %d rows without a usable judgement (%d malformed after %d retries, "
                        "%d requests failed)", pairs.field, len(malformed) + len(failed), len(ids), len(malformed),
                        self.retries, len(failed))
        result.summary = {
            "judged": len(judged), "malformed": len(malformed), "request_failures": len(failed),
            "answers_asked_again": retried, "usage": meter.snapshot(),
            "malformed_examples": [{"id": item, "reason": reason, "answer": answer[:300]}
                                   for item, (reason, answer) in list(malformed.items())[:MAX_EXAMPLES]],
            "failure_examples": [{"id": item, "error": error[:300]}
                                 for item, error in list(failed.items())[:MAX_EXAMPLES]]}
        return result


class _Rows:
    """The judge's task for the unit engine: a unit is a row (its ``text`` the row's id); a malformed answer is
    quoted back with the reason (the prompt file's ``retry``); nothing splits (a cut-off answer gets twice the
    ``max_tokens``, the engine's rule)."""

    def __init__(self, judge: LLMJudge, conversations: dict[str, list[dict[str, str]]]):
        self.judge, self.conversations = judge, conversations

    def max_tokens(self, unit) -> int:
        return self.judge.max_tokens

    def request(self, unit, attempts):
        from beirx.models.llm import Request

        messages = self.conversations[unit.text]
        if attempts.reasons:
            retry = self.judge.prompts.fill("retry", reason=attempts.message)
            messages = messages + [{"role": "assistant", "content": attempts.last}, {"role": "user", "content": retry}]
        return Request.chat(messages, max_tokens=attempts.max_tokens)

    def check(self, unit, reply):
        """The judgement in ``reply``, else :attr:`~beirx.models.llm.engine.Reason.INVALID` saying why (a
        refusal or an answer cut off by the token limit: the engine rejects it, with its own message)."""
        from beirx.models.llm.engine import Reason, Verdict

        try:
            return Verdict(True, parse(reply.text))
        except Malformed as why:
            return Verdict(False, reasons=[Reason.INVALID], message=str(why))

    def halves(self, unit) -> None:
        return None

