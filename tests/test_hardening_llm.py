"""Hostile and faulty LLM servers, hostile answers and careless options (issue 34): transport faults never
become final rows, timeouts bound time, malformed answers and bad options are one clear message (exit 2),
validation rejects additions, dead batches go back to pending, translators are closed.

The fake server (tests/fake_openai.py) translates word by word, answers at once and injects the faults."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from beirx.cli import main
from beirx.models.llm import Endpoint, EndpointDown, LLMClient, LLMError, Reply, Request, Usage
from beirx.models.llm.breaker import CircuitBreaker
from beirx.translate.llm.validator import Validator
from conftest import REPO, write_beir
from extras import needs
from fake_openai import MALFORMED, FakeOpenAI, on_source, word_map

KEY = "sk-hostile-SECRET-7f3a"
CORPUS = [
    {"_id": "d1", "title": "Cats", "text": "Cats hunt mice at night."},
    {"_id": "d2", "title": "Dogs", "text": "Dogs are loyal animals and good companions."},
    {"_id": "d3", "title": "Whales", "text": "Whales are the largest animals in the ocean."},
    {"_id": "d4", "title": "Birds", "text": "Birds can fly and sing."},
    {"_id": "d5", "title": "Exercise", "text": "Regular exercise lowers blood pressure."},
    {"_id": "d6", "title": "Vaccines", "text": "Vaccines reduce the risk of severe disease in children."},
]
QUERIES = [{"_id": "q1", "text": "which animals hunt mice at night"}, {"_id": "q2", "text": "do dogs sing"}]
QRELS = {"test": [("q1", "d1", 1), ("q2", "d2", 1)]}
UNITS = len(CORPUS) + len(QUERIES)


@pytest.fixture
def source(tmp_path) -> Path:
    return write_beir(tmp_path / "src", CORPUS, QUERIES, QRELS)


@pytest.fixture
def openai():
    return needs("openai", "llm")


@pytest.fixture
def server(openai):
    with FakeOpenAI(translate=word_map()) as fake:
        yield fake


def translate(source: Path, server: FakeOpenAI | str, out: Path, *extra: str, options=("backoff=0.01",)) -> int:
    url = server if isinstance(server, str) else server.url
    args = ["translate", "--dataset", str(source), "--lang", "es", "--translator", "openai", "--model", "fake-llm",
            "--base-url", url, "--output", str(out), "--memory", str(out.parent / f"{out.name}.sqlite"),
            "--no-quality", "--no-progress", *extra]
    for option in options:
        args += ["--translator-option", option]
    return main(args)


def error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def client(server: FakeOpenAI, **limits) -> LLMClient:
    limits.setdefault("backoff", 0.01)
    return LLMClient(Endpoint.resolve(server.model, server.url, **limits))


def chat(text: str) -> Request:
    return Request.chat([{"role": "user", "content": f"<text>\n{text}\n</text>"}])


OUTPUT_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "translation_flags.jsonl")


# -- 1. transient faults never become final rows ---------------------------------------------------------------
def test_dropped_answers_leave_units_pending_and_a_rerun_equals_a_clean_run(source, tmp_path, capsys, openai):
    clean = FakeOpenAI(translate=word_map()).start()
    try:
        assert translate(source, clean, tmp_path / "clean") == 0
        capsys.readouterr()
        with FakeOpenAI(translate=word_map()) as flaky:
            flaky.faults = lambda call: "drop" if call.n > 3 else None  # every answer after the first 3 is cut
            url = flaky.url
            code = translate(source, flaky, tmp_path / "out", "--concurrency", "1",
                             options=("backoff=0.01", "attempts=2"))
        err = error(capsys)
        assert code == 2
        assert f"LLM server {url} (model fake-llm)" in err and "connection failed" in err
        assert f"{UNITS - 3} of {UNITS} segments are pending" in err and "rerun the same command" in err
        assert not (tmp_path / "out" / "corpus.jsonl").exists()
        clean.calls.clear()
        assert translate(source, clean, tmp_path / "out") == 0
        assert len(clean.calls) == UNITS - 3  # exactly the pending units were sent
        for name in OUTPUT_FILES:
            assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "clean" / name).read_bytes(), name
        flags = (tmp_path / "out" / "translation_flags.jsonl").read_bytes()  # the word map leaves a few untranslated
        assert flags == (tmp_path / "clean" / "translation_flags.jsonl").read_bytes() and b"server_error" not in flags
    finally:
        clean.stop()


def test_a_unit_whose_retries_all_time_out_is_not_written_as_its_source(source, tmp_path, capsys, server):
    server.hang_seconds = 3.0
    server.faults = on_source({"Birds can fly": ["hang"] * 9})
    code = translate(source, server, tmp_path / "out", "--timeout", "0.5", options=("backoff=0.01", "attempts=2"))
    err = error(capsys)
    assert code == 2 and "request failed after 2 attempts" in err and "1 of 8 segments are pending" in err
    server.faults = None
    assert translate(source, server, tmp_path / "out") == 0
    corpus = [json.loads(line) for line in (tmp_path / "out" / "corpus.jsonl").read_text().splitlines()]
    assert corpus[3]["text"] == word_map()("Birds\nBirds can fly and sing.").split("\n")[1]


def test_the_breaker_opens_when_a_request_spends_its_retries_in_a_run_of_failures():
    breaker = CircuitBreaker(threshold=3, min_seconds=30.0)
    assert not breaker.failure("HTTP 500") and not breaker.failure("HTTP 500")
    assert not breaker.failure("HTTP 500")  # 30 s have not passed, and the request still has attempts
    assert breaker.failure("HTTP 500", gave_up=True)
    assert CircuitBreaker(threshold=3).failure("x", gave_up=True) is False  # one request alone is not a run


def test_a_server_failing_every_attempt_trips_the_breaker_for_the_other_requests(server):
    server.faults = lambda call: "500"
    with client(server, attempts=3, breaker_failures=3) as llm:
        with pytest.raises(EndpointDown, match="3 failed attempts in a row"):
            llm.call_many([chat("Cats hunt mice.")])  # its retries are spent: the breaker opens
        with pytest.raises(EndpointDown, match="3 failed attempts in a row .* rerun the same command to resume"):
            llm.call_many([chat("Dogs are loyal.")])  # at once, not after 30 s without a success
    assert len(server.calls) == 3


# -- 2. timeouts that bound time ---------------------------------------------------------------------------------
def test_a_body_dripping_a_byte_a_second_is_ended_by_the_timeout(server):
    server.faults = lambda call: "drip"
    started = time.monotonic()
    with client(server, timeout=2, attempts=1) as llm, pytest.raises(LLMError, match="no progress within 2 s"):
        llm.call_many([chat("Cats hunt mice.")])
    assert time.monotonic() - started < 4


def test_a_stream_that_keeps_producing_tokens_is_not_hung_but_the_deadline_bounds_it(server):
    server.stream_delay = 0.4  # 4 words: about 1.6 s, each token within the 1 s timeout
    with client(server, timeout=1, attempts=1) as llm:
        reply, = llm.call_many([chat("Cats hunt mice.")])
    assert reply.text == "Los gatos cazan ratones." and reply.attempts == 1
    with client(server, timeout=1, deadline=1.0, attempts=1) as llm, pytest.raises(LLMError, match="within 1 s"):
        llm.call_many([chat("Cats hunt mice.")])


def test_a_timed_out_attempt_stops_the_server_before_the_retry_is_sent(server):
    server.hang_seconds = 5.0
    server.faults = on_source({"Cats hunt mice.": ["hang", None]})
    with client(server, timeout=0.5, backoff=0.3) as llm:  # (tests elsewhere back off 0.01 s; the default is 1 s)
        reply, = llm.call_many([chat("Cats hunt mice.")])
    first, retry = server.calls
    assert reply.attempts == 2 and first.body["stream"] is True
    assert first.ended - first.started < 1.0  # the server saw the client leave: it stopped "generating"
    assert retry.started > first.ended  # (it notices at its next token, every 0.05 s; the backoff is longer)


def test_usage_of_a_streamed_answer(server):
    with client(server) as llm:
        reply, = llm.call_many([chat("Cats hunt mice.")])
    assert reply == Reply("Los gatos cazan ratones.", "stop", Usage(8, 6))  # as the server counted them


# -- 3. malformed answers and refusals of the key ------------------------------------------------------------------
WHAT = {"not_json": "a body that is not JSON ('<html><body>502 Bad Gateway</body></html>')",
        "content_number": "choices[0].message.content is a int, not a string",
        "content_list": "choices[0].message.content is a list, not a string",
        "message_string": "choices[0].message is a str, not an object",
        "choices_dict": "'choices' is a dict, not a list",
        "body_array": "a JSON list instead of an object"}


@pytest.mark.parametrize("fault", MALFORMED)
def test_a_malformed_answer_names_the_server_and_what_is_wrong(source, tmp_path, capsys, server, fault):
    server.faults = lambda call: fault
    assert translate(source, server, tmp_path / "out", "--concurrency", "1") == 2
    err = error(capsys)
    assert f"LLM server {server.url} (model fake-llm) answered /v1/chat/completions with something that is not a " \
           f"completion: {WHAT[fault]}" in err
    assert "fix or delete" not in err and len(server.calls) == 1


def test_batch_against_a_server_without_the_batch_api(source, tmp_path, capsys, server):
    server.batch_api = False
    assert translate(source, server, tmp_path / "out", "--batch", "--batch-poll", "0.01") == 2
    err = error(capsys)
    assert f"LLM server {server.url} (model fake-llm) has no Batch API" in err and "HTTP 404" in err
    assert "run without --batch" in err


def test_a_port_out_of_range_in_the_base_url(source, tmp_path, capsys):
    assert translate(source, "http://127.0.0.1:99999/v1", tmp_path / "out") == 2
    assert "the LLM base URL must be http(s)://HOST[:PORT]/PATH, got 'http://127.0.0.1:99999/v1' (Port out of range" \
        in error(capsys)


def test_a_refused_key_stops_the_run_at_the_first_answer(source, tmp_path, capsys, server, monkeypatch):
    server.require_key = "the-right-key"
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.latency = 0.2
    assert translate(source, server, tmp_path / "out", "--concurrency", "3") == 2
    err = error(capsys)
    assert "HTTP 401 (Incorrect API key provided)" in err and KEY not in err
    assert server.calls == []  # every request was refused at the key check: none reached the model
    assert 1 <= len(server.seen_headers) <= 3  # only the requests already in flight when the first 401 came


# -- 4. validation rejects additions -----------------------------------------------------------------------------
SOURCE = "Cats hunt mice at night. They are small animals."
GOOD = "Los gatos cazan ratones por la noche. Son animales pequeños."


@pytest.mark.parametrize("answer, reason", [
    (GOOD + " Visite nuestra tienda para más ofertas.", "added_sentences"),
    (GOOD.replace("Son", "Son 12"), "added_numbers"),
    (GOOD + " https://evil.example/x", "added_urls"),
    ("<script>alert(1)</script>" + GOOD, "added_markup"),
    ('<img src=x onerror="alert(1)">' + GOOD, "added_markup"),
    ("<b>" + GOOD + "</b>", "added_markup"),
    (GOOD + "<!-- ignore previous instructions -->", "added_markup"),
])
def test_validation_rejects_what_the_source_does_not_have(answer, reason):
    verdict = Validator("en", "es", "Spanish").check("document", SOURCE, Reply(answer, "stop", Usage(0, 0)))
    assert reason in verdict.reasons
    plain = Validator("en", "es", "Spanish").check("document", SOURCE, Reply(GOOD, "stop", Usage(0, 0)))
    assert plain.accepted


def test_markup_the_source_has_is_kept():
    source = "Use <b>bold</b> text. See https://example.org for 3 examples."
    answer = "Use texto <b>negrita</b>. Vea https://example.org para 3 ejemplos."
    assert Validator("en", "es", "Spanish").check("document", source, Reply(answer, "stop", Usage(0, 0))).accepted


def test_an_addition_is_asked_again_and_flagged_when_it_persists(source, tmp_path, server):
    server.faults = None
    server.responder = lambda call: (word_map()(call.source) + " <script>x()</script>"
                                     if call.source.startswith("Cats") else word_map()(call.source))
    assert translate(source, server, tmp_path / "out", "--retries", "1") == 0
    assert sum(1 for c in server.calls if c.source.startswith("Cats")) == 2
    flags = [json.loads(line) for line in (tmp_path / "out" / "translation_flags.jsonl").read_text().splitlines()]
    assert [(f["id"], f["outcome"], f["reasons"]) for f in flags] == [("d1", "flagged", ["added_markup"])]
    corpus = (tmp_path / "out" / "corpus.jsonl").read_text()
    assert "<script>" not in corpus and "Cats hunt mice at night." in corpus  # the source is kept, flagged


# -- 5. options and files ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("toml, message", [
    ('version = "x"\n[chat]\nquery = "Translate this query."\n',
     "prompt file {path} over beirx:beirx.translate.llm/prompts.toml: chat.query has no {{text}} field: the unit's "
     "text would never be sent"),
    ('version = "x"\n[chat]\ndocument = "Translate {txt}"\n',
     "prompt file {path} over beirx:beirx.translate.llm/prompts.toml: chat.document: unknown field {{txt}}"),
    ('version = "x"\n[chat]\nsystem = 5\n',
     "prompt file {path} over beirx:beirx.translate.llm/prompts.toml: chat.system must be a string, got 5"),
])
def test_a_bad_prompt_file_is_refused_before_any_request(source, tmp_path, capsys, server, toml, message):
    prompts = tmp_path / "prompts.toml"
    prompts.write_text(toml, encoding="utf-8")
    assert translate(source, server, tmp_path / "out", "--prompt-file", str(prompts)) == 2
    assert message.format(path=prompts) in error(capsys) and server.calls == []


@pytest.mark.parametrize("option, message", [
    ("max_cost=nan", "openai: option max_cost: expected a finite number, got 'nan'"),
    ("timeout=nan", "openai: option timeout: expected a finite number, got 'nan'"),
    ("price_in=inf", "openai: option price_in: expected a finite number, got 'inf'"),
    ("deadline=0", "openai: option deadline: must be more than 0, got 0.0"),
    ("retries=two", "openai: option retries: expected an integer, got 'two'"),
])
def test_non_finite_options_are_refused_naming_the_option(source, tmp_path, capsys, server, option, message):
    assert translate(source, server, tmp_path / "out", options=(option,)) == 2
    assert message in error(capsys) and server.calls == []


def test_concurrency_is_bounded(source, tmp_path, capsys, server):
    assert translate(source, server, tmp_path / "out", "--concurrency", "100000") == 2
    assert "concurrency must be at most 256 requests in flight, got 100000" in error(capsys)


def test_a_glossary_that_is_not_utf8_is_named(source, tmp_path, capsys, server):
    glossary = tmp_path / "terms.tsv"
    glossary.write_bytes("café\tcafé\n".encode("latin-1"))
    assert translate(source, server, tmp_path / "out", "--glossary", str(glossary)) == 2
    err = error(capsys)
    assert f"{glossary}:1: the glossary is not UTF-8" in err and server.calls == []


def test_verbose_logs_never_show_the_key_even_when_the_server_echoes_it(source, tmp_path, server):
    server.echo_key = True
    env = {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "beirx", "-vv", "translate", "--dataset", str(source), "--lang", "es",
                           "--translator", "openai", "--model", "fake-llm", "--base-url", server.url, "--output",
                           str(tmp_path / "out"), "--no-quality", "--memory", str(tmp_path / "tm.sqlite"),
                           "--no-progress"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert server.seen_headers and all(h["authorization"] == f"Bearer {KEY}" for h in server.seen_headers)
    logs = done.stdout + done.stderr
    assert "x-echo-authorization" in logs.lower() and "Bearer ***" in logs  # the header was logged ...
    assert KEY not in logs  # ... without the key


# -- 6. dead batches ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("outcome", ["failed", "expired", "cancelled"])
def test_a_dead_batch_puts_its_units_back_to_pending(source, tmp_path, capsys, server, outcome):
    server.batch_outcome = outcome
    assert translate(source, server, tmp_path / "out", "--batch", "--batch-poll", "0.01") == 2
    err = error(capsys)
    assert f"batch batch_1 ended {outcome} without results" in err and f"{UNITS} of {UNITS} segments are pending" in err
    server.batch_outcome = "completed"
    assert translate(source, server, tmp_path / "out", "--batch", "--batch-poll", "0.01") == 0
    assert len(server._batches) == 2  # a new batch, not the dead one polled again


def test_a_batch_request_without_an_answer_is_left_pending_never_written(source, tmp_path, capsys, server):
    server.faults = on_source({"Cats hunt": ["500"] * 9})  # its line in the error file, every round
    # rounds without an answer are bounded by the connection's transport attempts, as the live client's retries
    assert translate(source, server, tmp_path / "out", "--batch", "--batch-poll", "0.01",
                     options=("backoff=0.01", "attempts=2")) == 2
    err = error(capsys)
    assert "1 units got no answer in 2 batches (last: HTTP 500: The server had an error" in err
    assert "1 of 8 segments are pending" in err
    server.faults = None
    assert translate(source, server, tmp_path / "out", "--batch", "--batch-poll", "0.01") == 0
    first = json.loads((tmp_path / "out" / "corpus.jsonl").read_text().splitlines()[0])
    assert first["text"] == word_map()("Cats\nCats hunt mice at night.").split("\n")[1] == \
        "los gatos cazan ratones por la noche."  # (the word map capitalises only the unit's first letter)


# -- 7. translators are closed -------------------------------------------------------------------------------------
def llm_loop_threads() -> int:
    from beirx.models.llm.loop import THREAD_NAME

    return len([t for t in threading.enumerate() if t.name == THREAD_NAME])


def test_the_cli_closes_the_llm_client(source, tmp_path, server, monkeypatch):
    """Every client the command opened is closed (its connections), on success and on failure; the process
    runs one LLM loop thread, however many clients it made."""
    clients = []
    start = LLMClient._start
    monkeypatch.setattr(LLMClient, "_start", lambda self: (clients.append(self), start(self))[1])
    assert translate(source, server, tmp_path / "out") == 0
    assert clients and all(c.closed for c in clients)
    server.faults = lambda call: "500"
    assert translate(source, server, tmp_path / "again", options=("backoff=0.01", "attempts=1")) == 2
    assert all(c.closed for c in clients) and len({id(c) for c in clients}) >= 2
    assert llm_loop_threads() == 1


# -- 8. a listwise window the server refuses ------------------------------------------------------------------------
def ranked(call) -> str:
    """A perfect ranker by each passage's "value N"."""
    passages = [(int(i), int(v)) for i, v in re.findall(r"^\[(\d+)\] value (\d+)", call.body["messages"][-1]["content"],
                                                        re.MULTILINE)]
    return " > ".join(f"[{i}]" for i, _ in sorted(passages, key=lambda p: -p[1]))


def test_a_refused_listwise_window_keeps_its_order_and_transport_faults_stop(server, beirx_home):
    from beirx.data.records import Doc, Query
    from beirx.evaluate.rerankers.llm_listwise import LLMListwiseReranker

    server.responder = ranked
    server.faults = lambda call: "400" if "value 0 " in call.body["messages"][-1]["content"] else None
    values = {"good": [3, 1, 4, 9], "bad": [5, 0, 6, 7]}  # one window each; the server refuses "bad"'s
    queries = {q: Query(q, "find high values") for q in values}
    corpus = {f"{q}-d{i}": Doc(f"{q}-d{i}", f"value {v} text") for q, vs in values.items() for i, v in enumerate(vs)}
    first = {q: {f"{q}-d{i}": 100.0 - i for i in range(4)} for q in values}
    reranker = LLMListwiseReranker("fake-llm", base_url=server.url, window=4, step=2, show_progress=False)
    run = reranker.rerank(queries, corpus, first, depth=4)
    assert sorted(run["good"], key=lambda d: -run["good"][d]) == ["good-d3", "good-d2", "good-d0", "good-d1"]
    assert sorted(run["bad"], key=lambda d: -run["bad"][d]) == ["bad-d0", "bad-d1", "bad-d2", "bad-d3"]
    usage = reranker.describe()["usage"]
    assert (usage["windows"], usage["refused_windows"], usage["requests"]) == (1, 1, 1)  # requests: answered

    server.faults = lambda call: "drop"  # a transport fault is never a kept order
    again = LLMListwiseReranker("fake-llm", base_url=server.url, window=4, step=2, show_progress=False,
                                use_cache=False)
    again.llm.endpoint = dataclasses.replace(again.llm.endpoint, attempts=2, backoff=0.01)  # the client's limits
    with pytest.raises(LLMError, match="connection failed"):
        again.rerank(queries, corpus, first, depth=4)


def test_a_round_trip_closes_its_back_translator(server):
    from beirx.translate.backends.openai import OpenAITranslator
    from beirx.translate.quality.roundtrip import RoundTrip

    method = RoundTrip(OpenAITranslator("es", "en", "fake-llm", base_url=server.url), 10)
    assert method.translator.translate_batch(["⟪query⟫ los gatos"])  # its client's connections are open
    assert not method.translator.llm.closed and llm_loop_threads() == 1
    method.close()
    assert method.translator.llm.closed and llm_loop_threads() == 1  # the process's loop is shared, not closed


# -- advice that fits where the numbers came from ---------------------------------------------------------------
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_log_probability_from_a_server_names_the_server_not_a_dtype(server, value):
    from beirx.data.records import Doc, Query
    from beirx.evaluate.rerankers.llm_pointwise import LLMPointwiseReranker
    from beirx.models.llm import LLMAnswerError

    server.next_tokens = lambda call: {" yes": value, "The": -2.0}
    reranker = LLMPointwiseReranker(server.model, base_url=server.url, use_cache=False, show_progress=False)
    with pytest.raises(LLMAnswerError) as found:
        reranker.score(Query("q", "a query"), [Doc("d", "Cats purr.")])
    message = str(found.value)
    assert f"LLM server {server.url} (model fake-llm) returned a log-probability that is not a finite number " \
           f"({value}) for the token ' yes'" in message
    assert "a fault of the server: rerun to retry, or use another server" in message
    assert "half precision" not in message and "dtype" not in message


def test_the_cli_says_it_in_one_line_with_exit_2(source, tmp_path, capsys, server):
    server.next_tokens = lambda call: {" yes": float("nan"), "The": -2.0}
    assert main(["eval", "--dataset", str(source), "--reranker", "llm-pointwise", "--reranker-model", "fake-llm",
                 "--llm-base-url", server.url, "--output", str(tmp_path / "out"), "--no-progress"]) == 2
    err = error(capsys)
    assert f"LLM server {server.url} (model fake-llm) returned a log-probability that is not a finite number (nan)" \
        in err and "dtype" not in err


@pytest.mark.parametrize("dtype,advice", [("float16", "a numerical overflow in float16? rerun with dtype='float32'"),
                                          ("float32", "the model's output is not a number (its weights?)")])
def test_a_non_finite_score_in_process_gets_advice_for_its_dtype(dtype, advice):
    """The same reranker code with the model in this process: half precision can overflow, float32 cannot."""
    from beirx.data.records import Doc, Query
    from beirx.evaluate.rerankers.llm_pointwise import LLMPointwiseReranker
    from beirx.errors import BeirxError

    class InProcess:  # an LLM in this process whose next-token log-probabilities overflowed
        backend, device = "transformers", "cpu"

        def describe(self):
            return {"backend": "transformers", "model": "tiny", "dtype": dtype, "device": "cpu"}

        def label_logprobs(self, requests, labels):
            return [{name: float("nan") for name in labels} for _ in requests]

        def fit(self, build, text, limit):
            return build(text), False

        def close(self):
            pass

    reranker = LLMPointwiseReranker("tiny", llm=InProcess(), use_cache=False, show_progress=False)
    with pytest.raises(BeirxError, match=re.escape(f"llm-pointwise produced a score that is not a finite number "
                                                   f"(nan): {advice}")):
        reranker.score(Query("q", "a query"), [Doc("d", "Cats purr.")])


# -- the Batch API retries as the live path does ------------------------------------------------------------------
def _batch_run(source: Path, server: FakeOpenAI, out: Path) -> int:
    server.batch_polls = 1
    return translate(source, server, out, "--batch", "--batch-poll", "0.01")


def test_the_batch_api_retries_429_and_5xx_on_upload_create_polls_and_downloads(source, tmp_path, capsys, openai):
    """The same run, once clean and once with 429 (Retry-After) and 5xx answers at every Batch API endpoint: the
    faulty run makes exactly one more request per injected fault and writes the same dataset."""
    with FakeOpenAI(translate=word_map()) as clean, FakeOpenAI(translate=word_map()) as faulty:
        assert _batch_run(source, clean, tmp_path / "clean") == 0
        faulty.batch_faults = {"upload": [429, 503], "create": [502], "poll": [503, 429], "content": [500]}
        assert _batch_run(source, faulty, tmp_path / "faulty") == 0, error(capsys)
        injected = {"upload": 2, "create": 1, "poll": 2, "content": 1}
        assert {k: faulty.batch_requests[k] - clean.batch_requests[k] for k in injected} == injected
        assert all(clean.batch_requests[k] >= 1 for k in injected) and not any(faulty.batch_faults.values())
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "faulty" / name).read_bytes() == (tmp_path / "clean" / name).read_bytes()


def test_a_batch_upload_refused_for_good_is_not_retried(source, tmp_path, capsys, server):
    server.batch_faults = {"upload": [400]}
    assert _batch_run(source, server, tmp_path / "out") == 2
    assert "Batch API request failed with HTTP 400" in error(capsys)
    assert server.batch_requests["upload"] == 1


def test_a_batch_endpoint_failing_every_attempt_stops_after_the_retries(source, tmp_path, capsys, server):
    server.batch_faults = {"poll": [503] * 50}
    assert _batch_run(source, server, tmp_path / "out") == 2
    err = error(capsys)
    assert f"LLM server {server.url} (model fake-llm)" in err and "HTTP 503" in err
    assert 2 <= server.batch_requests["poll"] < 50  # retried, then given up (rerunning resumes the batch)
