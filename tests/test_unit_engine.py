"""The unit engine itself (beirx.models.llm.engine), with a toy task and scripted LLMs, no network: a unit cut at
``max_tokens`` splits and its halves join; one that cannot split is asked again with twice the ``max_tokens``;
refusals and truncation are rejected for every task; ``retries`` bounds the answers, and a request without an
answer (a Batch round) never spends one; what a unit spends goes to
the meter its caller passes, within the cap; its state survives a JSON round trip (a killed run resumes). Then
the LLM judge against the fake OpenAI-compatible server: an answer cut off gets the longer limit; and the
in-process LLM's label log-probabilities metered like a server's."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict

import pytest
from conftest import translated_pair

from beirx.models.llm import BudgetExceeded, Prices, Reply, Request, Usage, UsageMeter
from beirx.models.llm.engine import MESSAGES, Attempts, Reason, Step, Unit, UnitEngine, Verdict
from beirx.models.llm.protocol import LLM


class UpperCase:
    """A toy task: the right answer is the unit's text upper-cased; a unit splits at its middle word (when
    ``splits``); a wrong answer is only softly wrong (a candidate)."""

    def __init__(self, first_max_tokens: int = 8, splits: bool = True):
        self.first_max_tokens, self.splits = first_max_tokens, splits

    def max_tokens(self, unit: Unit) -> int:
        return self.first_max_tokens

    def request(self, unit: Unit, attempts: Attempts) -> Request:
        return Request.completion(unit.text, max_tokens=attempts.max_tokens)

    def check(self, unit: Unit, reply: Reply) -> Verdict:
        if reply.text == unit.text.upper():
            return Verdict(True, reply.text)
        return Verdict(False, reasons=["not_upper"], candidate=reply.text, message="not upper-cased")

    def halves(self, unit: Unit):
        words = unit.text.split(" ")
        if not self.splits or len(words) < 2:
            return None
        middle = len(words) // 2
        return " ".join(words[:middle]), " ", " ".join(words[middle:])


def upper_case_model(request: Request) -> Reply:
    """Answers right, a word a token, cut at the request's ``max_tokens``."""
    words = request.prompt.upper().split(" ")
    if len(words) > request.max_tokens:
        return Reply(" ".join(words[:request.max_tokens]), "length", Usage(len(words), request.max_tokens))
    return Reply(" ".join(words), "stop", Usage(len(words), len(words)))


def run(engine: UnitEngine, unit: Unit, answers, attempts: Attempts | None = None):
    """``engine.run`` with ``answers(request)`` as the LLM; the requests asked, and the result."""
    asked: list[Request] = []

    async def ask(request):
        asked.append(request)
        return answers(request)

    return asyncio.run(engine.run(unit, ask, attempts)), asked


TWELVE = "one two three four five six seven eight nine ten eleven twelve"


# -- split and double ----------------------------------------------------------------------------------------------
def test_a_unit_cut_at_max_tokens_splits_and_its_halves_join():
    result, asked = run(UnitEngine(UpperCase(8), retries=2), Unit("doc", TWELVE), upper_case_model)
    assert result.text == TWELVE.upper()
    assert [r.prompt for r in asked] == [TWELVE, "one two three four five six", "seven eight nine ten eleven twelve"]
    assert [r.max_tokens for r in asked] == [8, 8, 8]  # each half starts at the task's first limit
    # the engine's reason first, then the task's own (the cut answer is not the whole text upper-cased)
    assert result.rejected == [Reason.TRUNCATED, "not_upper", Reason.RESPLIT] == ["truncated", "not_upper", "resplit"]
    assert result.attempts == 2 and result.usage == [12 + 6 + 6, 8 + 6 + 6, 3]


def test_halves_split_again_down_to_the_depth_limit():
    text = " ".join(f"w{i}" for i in range(40))
    result, asked = run(UnitEngine(UpperCase(3), retries=0), Unit("doc", text), upper_case_model)
    assert result.text == text.upper()  # 40 -> 20 -> 10 -> 5 -> 2 and 3 words (depth 4), each within 3 tokens
    assert len(asked) == 1 + 2 + 4 + 8 + 16 and result.rejected.count("resplit") == 1 + 2 + 4 + 8
    assert sorted({len(r.prompt.split(" ")) for r in asked[-16:]}) == [2, 3]


def test_a_unit_that_cannot_split_is_asked_again_with_twice_the_max_tokens():
    result, asked = run(UnitEngine(UpperCase(8, splits=False), retries=2), Unit("row", TWELVE), upper_case_model)
    assert [r.max_tokens for r in asked] == [8, 16] and result.text == TWELVE.upper()
    assert result.rejected == ["truncated", "not_upper"] and result.attempts == 2


def test_a_request_the_server_refused_is_split_or_doubled_like_a_truncated_answer():
    refusals = iter([Reason.REQUEST_REFUSED])

    def answers(request):
        return next(refusals, None) or upper_case_model(request)

    result, asked = run(UnitEngine(UpperCase(20, splits=False), retries=1), Unit("row", TWELVE), answers)
    assert [r.max_tokens for r in asked] == [20, 40] and result.text == TWELVE.upper()
    assert result.rejected == [Reason.REQUEST_REFUSED] and result.usage == [12, 12, 1]  # the refusal cost nothing


# -- reasons the engine finds for every task ---------------------------------------------------------------------------
def test_truncation_and_refusal_are_rejected_whatever_the_task_says_and_never_kept():
    engine = UnitEngine(UpperCase(), retries=1)
    unit = Unit("row", "a b")
    cut = engine.verdict(unit, Reply("A B", "length", Usage()))  # the task's check alone would accept it
    assert (cut.accepted, cut.value, cut.candidate, cut.reasons) == (False, None, None, [Reason.TRUNCATED])
    assert cut.message == MESSAGES[Reason.TRUNCATED] == "the answer was cut off by the token limit; answer shorter"
    refused = engine.verdict(unit, Reply("no", "stop", Usage(), refusal="I can't help with that."))
    assert refused.reasons == [Reason.REFUSED, "not_upper"] and refused.candidate is None
    assert refused.message == "the model refused: I can't help with that."
    both = engine.verdict(unit, Reply("A", "length", Usage(), refusal="No."))
    assert both.reasons == ["refusal", "truncated", "not_upper"] and both.message == "the model refused: No."


def test_retries_spent_keep_the_last_soft_candidate_and_the_message():
    result, asked = run(UnitEngine(UpperCase(), retries=2), Unit("row", "a b"),
                        lambda r: Reply("a b", "stop", Usage(2, 2)))
    assert len(asked) == 3 and result.text is None and result.candidate == "a b"
    assert (result.reasons, result.message, result.attempts) == (["not_upper"], "not upper-cased", 3)


def test_a_request_without_an_answer_never_spends_a_retry_and_never_concludes_the_unit():
    """The Batch driver: a round without an answer is the transport's failure, asked again up to
    ``transport_attempts`` in a row (as the live client retries one request), then left unconcluded (UNANSWERED:
    a rerun asks again); the unit's answers and their retries are counted as in a run without the fault."""
    engine, unit = UnitEngine(UpperCase(), retries=1, transport_attempts=2), Unit("row", "a b")
    attempts = Attempts()
    engine.request(unit, attempts)
    assert engine.record(unit, attempts, Reason.TRANSPORT) is Step.AGAIN
    assert engine.record(unit, attempts, Reply("a b", "stop", Usage(2, 2))) is Step.AGAIN  # rejected: retry 1 of 1
    assert engine.record(unit, attempts, Reason.TRANSPORT) is Step.AGAIN  # an answer came between: a new count
    assert engine.record(unit, attempts, Reason.TRANSPORT) is Step.UNANSWERED
    assert (attempts.attempts, attempts.unanswered, attempts.rejected, attempts.usage) == (1, 2, ["not_upper"],
                                                                                           [2, 2, 1])
    spent = Attempts()
    for step in (Step.AGAIN, Step.SPENT):
        assert engine.record(unit, spent, Reply("a b", "stop", Usage())) is step


# -- spend and budget ------------------------------------------------------------------------------------------------
class ScriptedLLM(LLM):
    """An LLM answering with ``answer(llm, request)`` in process (whatever the transport does on the way, e.g. a
    retry it records on ``llm.meter``, happens inside the answer)."""

    backend, model, location = "scripted", "scripted", "memory"

    def __init__(self, answer, meter: UsageMeter | None = None):
        super().__init__(meter)
        self.answer = answer

    def describe(self):
        return {"backend": self.backend}

    async def _answer(self, request: Request) -> Reply:
        return self.answer(self, request)


def test_what_a_unit_spends_goes_to_the_meter_its_caller_passes_transport_retries_included():
    def answer(llm, request):
        if request.max_tokens == 8:
            llm.meter.retried("rate_limited")  # the transport's record of a retry, on the request's meter
        return upper_case_model(request)

    with ScriptedLLM(answer) as llm:
        meter = UsageMeter()
        engine = UnitEngine(UpperCase(8, splits=False), retries=1)

        async def ask(request):
            return await llm.acall(request, meter=meter)

        result = llm.schedule(engine.run(Unit("row", TWELVE), ask)).result()
        assert result.text == TWELVE.upper()
        snapshot = meter.snapshot()
        assert (snapshot["requests"], snapshot["prompt_tokens"], snapshot["completion_tokens"]) == (2, 24, 8 + 12)
        assert (snapshot["retries"], snapshot["transient_failures"]) == (1, {"rate_limited": 1})
        assert result.usage == [24, 20, 2]  # the unit's own account agrees with the meter
        assert llm.meter.snapshot()["requests"] == 0 == llm.meter.retries  # the LLM's own meter: untouched
        with pytest.raises(AttributeError):
            llm.meter = UsageMeter()  # a budget is passed with the call, never set on a shared LLM
        assert llm.call_many([Request.completion("a b", max_tokens=4)], meter=meter)[0].text == "A B"
        assert meter.requests == 3 and llm.meter.requests == 0


def test_the_spending_cap_stops_a_unit_before_it_is_exceeded_and_its_cost_is_kept():
    """Output at USD 1 a token: each request reserves its max_tokens (8) first; the cap (12) lets the first
    through (5 spent), not the retry (5 + 8 > 12). The unit is not concluded; what it cost is known."""
    meter = UsageMeter(Prices(0.0, 1_000_000.0), max_cost=12.0)
    with ScriptedLLM(lambda llm, request: Reply("wrong", "stop", Usage(3, 5))) as llm:
        engine, attempts = UnitEngine(UpperCase(8), retries=3), Attempts()

        async def ask(request):
            return await llm.acall(request, meter=meter)

        with pytest.raises(BudgetExceeded, match="stopping before --max-cost USD 12.0000 would be exceeded"):
            llm.schedule(engine.run(Unit("row", "a b"), ask, attempts)).result()
    assert meter.spent == 5.0 <= meter.max_cost and meter.requests == 1
    assert attempts.attempts == 1 and attempts.usage == [3, 5, 1] and attempts.text is None


# -- resume ------------------------------------------------------------------------------------------------------------
def test_a_unit_resumes_from_its_saved_attempts_as_if_never_stopped():
    """The Batch executor saves each open unit's attempts as JSON between rounds: a run killed after any answer
    and resumed from the file asks the same next request and ends in the same state."""
    engine, unit = UnitEngine(UpperCase(8, splits=False), retries=3, transport_attempts=2), Unit("row", TWELVE)
    answers = [Reason.TRANSPORT, Reply("nope", "stop", Usage(12, 1)), None, None]  # None: the model's own answer

    def drive(resume: bool) -> tuple[Attempts, list[Request]]:
        attempts, asked = Attempts(), []
        for answer in answers:
            if resume:
                attempts = Attempts(**json.loads(json.dumps(asdict(attempts))))
            request = engine.request(unit, attempts)
            asked.append(request)
            step = engine.record(unit, attempts, answer or upper_case_model(request))
            if step is not Step.AGAIN:
                break
        return attempts, asked

    straight, resumed = drive(False), drive(True)
    assert asdict(resumed[0]) == asdict(straight[0]) and resumed[1] == straight[1]
    attempts, asked = straight
    # a lost round, a wrong answer (asked again naming why), a truncated one (twice the limit), then accepted
    assert [r.max_tokens for r in asked] == [8, 8, 8, 16] and attempts.text == TWELVE.upper()
    assert attempts.attempts == 3 and attempts.rejected == ["not_upper", "truncated", "not_upper"]


def test_a_split_unit_resumes_with_its_halves():
    from beirx.translate.execution.openai_batch import _Open

    engine = UnitEngine(UpperCase(8), retries=1)
    whole = _Open(Unit("document", TWELVE))
    assert engine.record(whole.unit, whole.attempts, upper_case_model(engine.request(whole.unit, whole.attempts))) \
        is Step.SPLIT
    left, gap, right = engine.split(whole.unit)
    whole.gap, whole.halves = gap, [_Open(left), _Open(right)]
    half = whole.halves[0]
    half.done = engine.record(half.unit, half.attempts,
                              upper_case_model(engine.request(half.unit, half.attempts))) is Step.ACCEPTED
    saved = json.loads(json.dumps(asdict(whole)))  # killed here: the right half never asked
    back = _Open.load(saved, "document", TWELVE)
    assert [cid for cid, _ in back.leaves("u")] == ["u/1"] and back.result(engine) is None
    rest = back.halves[1]
    rest.done = engine.record(rest.unit, rest.attempts,
                              upper_case_model(engine.request(rest.unit, rest.attempts))) is Step.ACCEPTED
    joined = back.result(engine)
    assert joined.text == TWELVE.upper() and joined.rejected == ["truncated", "not_upper", "resplit"]
    assert joined.attempts == 2 and joined.usage == [12 + 6 + 6, 8 + 6 + 6, 3]


# -- the judge: a cut-off answer gets the longer limit -------------------------------------------------------------
def test_a_judge_answer_cut_off_is_asked_again_with_twice_the_max_tokens(tmp_path, fake_llm_factory):
    from beirx.translate.quality.judge import LLMJudge
    from beirx.translate.quality.run import run_quality

    source, translated = translated_pair(tmp_path, ["Cats hunt mice at night."],
                                         ["Los gatos cazan ratones por la noche."])

    def judge(call):  # the first answer stops at the token limit, mid-JSON
        if len(call.body["messages"]) == 2:
            return '{"errors": [], "sco', "length"
        return '{"errors": [], "score": 90}'

    server = fake_llm_factory(responder=judge)
    method = LLMJudge(server.model, base_url=server.url, sample=None, retries=1, max_tokens=64, use_cache=False)
    report = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es", methods=[method],
                         fields=("queries",), show_progress=False)
    first, second = server.calls
    assert (first.body["max_tokens"], second.body["max_tokens"]) == (64, 128)
    assert second.body["messages"][2] == {"role": "assistant", "content": '{"errors": [], "sco'}
    assert "the answer was cut off by the token limit; answer shorter" in second.body["messages"][3]["content"]
    summary = report.fields["queries"].methods["judge"].summary
    assert (summary["judged"], summary["malformed"], summary["answers_asked_again"]) == (1, 0, 1)
    assert summary["usage"]["requests"] == 2 and report.fields["queries"].methods["judge"].scored == 1


# -- the in-process LLM is metered like a server ------------------------------------------------------------------
def test_local_label_logprobs_charge_the_meter_with_the_prompt_tokens_and_one_answer_token(tiny_causal_lm):
    from beirx.models.causal_lm import encode, prompt_text
    from beirx.models.llm import LocalLLM

    llm = LocalLLM(str(tiny_causal_lm), device="cpu", batch_size=2)
    requests = [Request.chat([{"role": "user", "content": text}])
                for text in ("The cat sleeps.", "Vaccines reduce the risk.", "El gato duerme.")]
    labels = {"cat": ["cat"], "gato": ["gato"]}
    meter = UsageMeter(Prices(1_000_000.0, 1_000_000.0))  # USD 1 a token
    scores = llm.label_logprobs(requests, labels, meter=meter)
    tokenizer = llm.loaded()[0]
    prompt_tokens = sum(len(encode(tokenizer, prompt_text(tokenizer, r))) for r in requests)
    assert len(scores) == 3 and meter.requests == 3
    assert (meter.usage.prompt_tokens, meter.usage.completion_tokens) == (prompt_tokens, 3)
    assert meter.spent == prompt_tokens + 3 and llm.meter.requests == 0
    capped = UsageMeter(Prices(1_000_000.0, 1_000_000.0), max_cost=prompt_tokens / 2)
    with pytest.raises(BudgetExceeded):
        llm.label_logprobs(requests, labels, meter=capped)
    assert capped.requests <= 2 and capped.spent <= capped.max_cost
    llm.label_logprobs(requests[:1], labels)  # no meter passed: the LLM's own
    assert llm.meter.requests == 1
    llm.close()
