"""One options record for an LLM connection (beirx.models.llm.connection) wherever an LLM is used: the
translators (``beirx translate``), the quality judge (``beirx quality``) and the LLM rerankers (``beirx eval``).

- the prefix rule holds for every role: each connection option's flag is ``--<role>-<option>``;
- the older spellings parse to the same values (and a reranker's run keeps its file name);
- the transport retries and the circuit breaker given as flags reach the client of each role (a fake
  OpenAI-compatible server answering 500 counts the attempts)."""

from __future__ import annotations

import pytest

from beirx.cli import build_parser
from beirx.cli.flags import given
from beirx.errors import BeirxError
from beirx.evaluate.rerankers.llm_common import RERANKING
from beirx.evaluate.rerankers.llm_listwise import LLMListwiseReranker
from beirx.evaluate.rerankers.llm_pointwise import LLMPointwiseReranker
from beirx.models.llm import EndpointDown, Request, TransportError
from beirx.models.llm.connection import CONNECTION_OPTIONS, ConnectionSettings, Role
from beirx.translate.backends.openai import OpenAITranslator
from beirx.translate.llm.translator import TRANSLATION, LLMTranslator
from beirx.translate.quality.judge import LLMJudge
from extras import needs
from fake_openai import FakeOpenAI

TRANSLATE = ["translate", "--dataset", "d", "--lang", "es", "--translator", "openai", "--model", "fake-llm"]
QUALITY = ["quality", "translated", "--judge-model", "fake-llm"]
EVAL = ["eval", "--dataset", "d", "--reranker", "llm-listwise", "--reranker-model", "fake-llm"]

# (command line, component, its role, how the component is built from its options' values)
ROLES = {
    "translation": (TRANSLATE, OpenAITranslator, TRANSLATION,
                    lambda values: OpenAITranslator("en", "es", "fake-llm", **values)),
    "judge": (QUALITY, LLMJudge, LLMJudge.ROLE, lambda values: LLMJudge.configured(values)),
    "llm-pointwise": (EVAL, LLMPointwiseReranker, RERANKING, lambda values: LLMPointwiseReranker("fake-llm", **values)),
    "llm-listwise": (EVAL, LLMListwiseReranker, LLMListwiseReranker.ROLE,
                     lambda values: LLMListwiseReranker("fake-llm", **values)),
}
SAMPLE_VALUES = {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "concurrency": "3", "timeout": "7.5",
                 "deadline": "30", "attempts": "4", "backoff": "0.5", "breaker_failures": "3", "breaker_seconds": "2",
                 "price_in": "0.25", "price_out": "1.5", "max_cost": "9"}


def _parse(argv: list[str]):
    return build_parser(argv).parse_args(argv)


@pytest.mark.parametrize("role_name", ROLES)
def test_every_role_spells_each_connection_option_prefix_plus_option(role_name):
    argv, component, role, _ = ROLES[role_name]
    declared = {option.name: option for option in component.OPTIONS}
    assert set(SAMPLE_VALUES) == {option.name for option in CONNECTION_OPTIONS}
    for option in CONNECTION_OPTIONS:
        mine = declared[role.option_name(option.name)]  # every connection option, under the component's name
        assert (mine.type, mine.choices) == (option.type, option.choices)
        if option.name in role.unflagged:
            assert mine.flag_name() is None
            continue
        flag = mine.flag_name()
        assert flag == f"--{role.prefix}{option.name.replace('_', '-')}"
        args = _parse(argv + [flag, SAMPLE_VALUES[option.name]])  # the command line really has that flag
        expected = mine.read(SAMPLE_VALUES[option.name])
        assert given(args, component.OPTIONS)[mine.name] == expected
    if role_name != "translation":  # the judge's and the rerankers' flags are all their role's (--device: the command's)
        assert all(o.flag_name().startswith(f"--{role.prefix}") for o in component.OPTIONS
                   if o.flag_name() and o.flag_name() != "--device")


def test_the_translations_spending_cap_is_the_commands_max_cost():
    """The one exception to the rule: ``beirx translate --max-cost`` caps the paid NMT backends too."""
    assert TRANSLATION.unflagged == ("max_cost",)
    assert "--llm-max-cost" not in " ".join(_parse(TRANSLATE).__dict__)
    assert _parse(TRANSLATE + ["--max-cost", "2"]).max_cost == 2.0


@pytest.mark.parametrize("argv, old, new, value", [
    (TRANSLATE, "--base-url", "--llm-base-url", "http://h:8000/v1"),
    (TRANSLATE, "--concurrency", "--llm-concurrency", "3"),
    (TRANSLATE, "--timeout", "--llm-timeout", "5"),
    (TRANSLATE, "--price-in", "--llm-price-in", "0.5"),
    (TRANSLATE, "--price-out", "--llm-price-out", "1.5"),
    (QUALITY, "--judge", "--judge-backend", "transformers"),
    (EVAL, "--llm-price-input", "--llm-price-in", "0.5"),
    (EVAL, "--llm-price-output", "--llm-price-out", "2"),
])
def test_old_spellings_parse_to_the_same_values(argv, old, new, value):
    component = {"translate": LLMTranslator, "quality": LLMJudge, "eval": LLMListwiseReranker}[argv[0]]
    before, after = given(_parse(argv + [old, value]), component.OPTIONS), given(_parse(argv + [new, value]),
                                                                                component.OPTIONS)
    assert before == after and len(after) == (2 if argv is QUALITY else 1)


def test_a_rerankers_run_keeps_its_file_name_whichever_price_spelling():
    """The rerankers' parameters are part of the run and results file names: the price stays ``price_input``."""
    from beirx.cli.eval import systems_from_args

    def tags(*extra):
        argv = ["eval", "--dataset", "d", "--retriever", "bm25", "--reranker", "llm-listwise", "--reranker-model",
                "m", "--llm-base-url", "http://h/v1", *extra]
        return [system.tag() for system in systems_from_args(_parse(argv)).values()]

    old, new = tags("--llm-price-input", "0.5", "--llm-concurrency", "8"), tags("--llm-price-in", "0.5")
    assert old == new and "price_input_0.5" in old[-1] and "concurrency" not in old[-1]  # the default left out


def test_the_old_judge_spelling_still_runs_a_server_judge_and_a_model_alone_picks_by_the_url():
    assert given(_parse(QUALITY + ["--judge", "openai"]), LLMJudge.OPTIONS)["backend"] == "openai"
    for extra, backend in (([], "transformers"), (["--judge-base-url", "http://h/v1"], "openai"),
                           (["--judge-backend", "openai"], "openai")):
        values = given(_parse(QUALITY + extra), LLMJudge.OPTIONS)
        values.pop("model")
        assert ConnectionSettings.read(values, role=LLMJudge.ROLE).chosen_backend("--judge") == backend
    with pytest.raises(BeirxError, match="--judge openai needs --judge-model"):
        LLMJudge.configured({"backend": "openai"})
    with pytest.raises(BeirxError, match="--judge-timeout without --judge-model"):
        LLMJudge.configured({"timeout": 5.0})
    assert LLMJudge.configured({}) is None


def test_llm_backend_names_the_llm_translator():
    from beirx.cli.translate import translator_name

    base = ["translate", "--dataset", "d", "--lang", "es"]
    assert translator_name(_parse(base)) == "hf"
    assert translator_name(_parse(base + ["--llm-backend", "transformers"])) == "hf-llm"
    assert translator_name(_parse(base + ["--llm-backend", "openai"])) == "openai"
    with pytest.raises(BeirxError, match="--llm-backend openai is for the LLM translators"):
        translator_name(_parse(base + ["--llm-backend", "openai", "--translator", "hf"]))
    with pytest.raises(BeirxError, match="--llm-backend transformers is --translator hf-llm, not openai"):
        OpenAITranslator("en", "es", "m", backend="transformers")


def test_a_bad_value_is_refused_naming_the_option_and_the_role():
    with pytest.raises(BeirxError, match="llm-listwise: option price_input: expected a finite number"):
        LLMListwiseReranker("m", base_url="http://h/v1", price_input="nan")
    with pytest.raises(BeirxError, match="judge: option attempts: must be at least 1"):
        LLMJudge("m", base_url="http://h/v1", attempts=0)
    assert ConnectionSettings.read({"price_input": "2"}, role=Role("x-", "", names={"price_in": "price_input"})
                                   ).price_in == 2.0


@pytest.fixture
def failing_server():
    needs("openai", "llm")
    with FakeOpenAI(faults=lambda call: "500") as server:
        yield server


def _one_request(component):
    llm = component.llm
    try:
        return llm.call_many([Request.chat([{"role": "user", "content": "<text>\nhello\n</text>"}], max_tokens=8)],
                             return_exceptions=True)[0]
    finally:
        llm.close()


@pytest.mark.parametrize("role_name", ROLES)
def test_retries_and_the_breaker_given_as_flags_reach_each_roles_client(role_name, failing_server):
    argv, component, role, build = ROLES[role_name]

    def built(**flags):
        extra = ["--" + role.prefix + "base-url", failing_server.url, "--" + role.prefix + "backoff", "0"]
        for name, value in flags.items():
            extra += [f"--{role.prefix}{name.replace('_', '-')}", value]
        return build(given(_parse(argv + extra), component.OPTIONS))

    failing_server.calls.clear()
    error = _one_request(built(attempts="3", breaker_failures="50"))
    assert isinstance(error, TransportError) and not isinstance(error, EndpointDown)
    assert len(failing_server.calls) == 3  # --<role>-attempts 3: three tries of one request

    failing_server.calls.clear()
    error = _one_request(built(attempts="5", breaker_failures="2", breaker_seconds="0"))
    assert isinstance(error, EndpointDown)
    assert len(failing_server.calls) == 2  # the breaker opened after two failures: no third try


def test_judge_sample_all_reaches_the_judge_as_every_row():
    """A generated flag's None means "not given": ``--judge-sample all`` must still mean every row."""
    values = given(_parse(QUALITY + ["--judge-sample", "all", "--judge-base-url", "http://h/v1"]), LLMJudge.OPTIONS)
    assert "sample" in values and values["sample"] is None and LLMJudge.configured(values).sample is None
    values = given(_parse(QUALITY + ["--judge-base-url", "http://h/v1"]), LLMJudge.OPTIONS)
    assert LLMJudge.configured(values).sample == 200


@pytest.mark.parametrize("component", [OpenAITranslator, LLMJudge, LLMPointwiseReranker, LLMListwiseReranker])
def test_each_constructor_default_is_the_declared_one(component):
    import inspect

    parameters = inspect.signature(component.__init__).parameters
    for klass in component.__mro__:  # the LLM translators' options are their base's constructor's
        if "__init__" in klass.__dict__ and klass is not component:
            parameters = {**inspect.signature(klass.__init__).parameters, **parameters}
    for option in component.OPTIONS:
        default = parameters[option.name].default
        assert default is inspect.Parameter.empty or default == option.default, option.name
