"""The shared OpenAI-compatible client (beirx.models.llm) against the fake server over real HTTP, and once
against a real llama.cpp server with Gemma 3 270M."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from beirx.errors import BeirxError
from beirx.models.llm import (BudgetExceeded, Endpoint, EndpointDown, LLMClient, LLMError, LLMRequestError, Prices,
                              PromptFile, Reply, Request, Usage, UsageMeter, approx_tokens)
from beirx.retry import retry_after
from extras import needs
from fake_openai import ANSWER, FakeOpenAI, extract_source, fault_mix, on_calls, on_source, word_map

KEY = "sk-test-SECRET-7f3a9c"


def chat(text: str, **params) -> Request:
    return Request.chat([{"role": "system", "content": "Translate English to Spanish."},
                         {"role": "user", "content": f"<text>\n{text}\n</text>"}], max_tokens=64, **params)


class Sleeps:
    """Records backoff waits instead of sleeping them."""

    def __init__(self):
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def openai():
    return needs("openai", "llm")


@pytest.fixture
def server(openai):
    with FakeOpenAI(translate=word_map()) as fake:
        yield fake


def client(server, meter=None, sleep=None, **limits) -> LLMClient:
    limits.setdefault("backoff", 0.01)
    return LLMClient(Endpoint.resolve(server.model, server.url, **limits), meter=meter, sleep=sleep)


def test_chat_and_completions_replies_and_usage_with_cost(server):
    meter = UsageMeter(Prices(input_per_million=2.0, output_per_million=8.0))
    with client(server, meter) as llm:
        reply, = llm.call_many([chat("Cats hunt mice.")])
        few_shot = "English: Dogs are loyal.\nSpanish: Los perros son leales.\n\nEnglish: Birds can fly.\nSpanish:"
        replies = llm.call_many([Request.completion(few_shot, max_tokens=32, stop=("\n",))] * 2)
    assert reply == Reply("Los gatos cazan ratones.", "stop", Usage(approx_tokens(
        "Translate English to Spanish.\n<text>\nCats hunt mice.\n</text>"), approx_tokens("Los gatos cazan ratones.")))
    assert [r.text for r in replies] == [" Los pájaros pueden volar."] * 2
    body = server.calls[1].body
    assert body["prompt"] == few_shot and body["stop"] == ["\n"] and body["temperature"] == 0 and body["seed"] == 0
    assert server.calls[0].body["messages"][1] == {"role": "user", "content": "<text>\nCats hunt mice.\n</text>"}
    prompt = sum(c.usage.prompt_tokens for c in [reply, *replies])
    completion = sum(c.usage.completion_tokens for c in [reply, *replies])
    snap = meter.snapshot()
    assert (snap["requests"], snap["prompt_tokens"], snap["completion_tokens"]) == (3, prompt, completion)
    assert snap["cost_usd"] == round((prompt * 2.0 + completion * 8.0) / 1e6, 6)


def test_429_honours_retry_after_and_500_backs_off(server):
    server.faults = on_calls({1: "429", 2: "500", 3: "500"})
    meter, sleeps = UsageMeter(), Sleeps()
    with client(server, meter, sleeps, backoff=0.5) as llm:
        reply, = llm.call_many([chat("Dogs are loyal.")])
    assert reply.text == "Los perros son leales." and reply.attempts == 4
    assert sleeps.waits[0] == pytest.approx(0.020)  # retry-after-ms: 20 (Retry-After says 1 s)
    assert 0.5 <= sleeps.waits[1] <= 1.0 and 1.0 <= sleeps.waits[2] <= 2.0  # backoff 0.5 * 2**n, equal jitter
    snap = meter.snapshot()
    assert snap["retries"] == 3 and snap["transient_failures"] == {"rate_limited": 1, "server_error": 2}
    assert snap["requests"] == 1


def test_retry_after_header_forms():
    assert retry_after({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({}) is None


def test_a_hang_past_the_timeout_is_retried(server):
    server.hang_seconds = 3.0
    server.faults = on_source({"Birds can fly.": ["hang", None]})
    meter = UsageMeter()
    started = time.monotonic()
    with client(server, meter, timeout=0.5) as llm:
        reply, = llm.call_many([chat("Birds can fly.")])
    assert reply.text == "Los pájaros pueden volar." and reply.attempts == 2
    assert time.monotonic() - started < 2.5
    assert meter.snapshot()["transient_failures"] == {"timeout": 1}


def test_concurrency_is_bounded_and_used(server):
    server.latency = 0.05
    with client(server, concurrency=4) as llm:
        replies = llm.call_many([chat(f"Cats hunt {i} mice.") for i in range(16)])
    assert [r.text for r in replies] == [f"Los gatos cazan {i} ratones." for i in range(16)]
    assert server.max_in_flight == 4


def test_acall_from_another_event_loop(server):
    with client(server) as llm:
        async def main():
            return await asyncio.gather(llm.acall(chat("Whales are large.")), llm.acall(chat("Birds can fly.")))

        first, second = asyncio.run(main())
    assert (first.text, second.text) == ("Las ballenas son large.", "Los pájaros pueden volar.")


def test_a_dead_server_opens_the_breaker_with_a_clear_error(openai):
    with FakeOpenAI() as fake:
        url = fake.url
    sleeps = Sleeps()
    llm = LLMClient(Endpoint.resolve("m", url, attempts=6, breaker_failures=5, breaker_seconds=0, concurrency=2),
                    sleep=sleeps)
    with llm, pytest.raises(EndpointDown, match=r"LLM server http://127\.0\.0\.1:\d+/v1 \(model m\) is not answering: "
                                                r"5 failed attempts in a row .*connection.*rerun the same command"):
        llm.call_many([chat(f"text {i}") for i in range(20)])
    assert len(sleeps.waits) < 10  # the 20 requests did not each go through 6 attempts


def test_the_breaker_waits_for_min_seconds_without_success():
    from beirx.models.llm.breaker import CircuitBreaker

    breaker = CircuitBreaker(threshold=2, min_seconds=60)
    assert not breaker.failure("timeout") and not breaker.failure("timeout")  # a stall, not yet a dead server
    breaker._last_success -= 61
    assert breaker.failure("timeout") and breaker.open and breaker.consecutive == 3
    breaker.success()
    assert breaker.open  # once open, it stays open: the run stops


def test_persistent_server_errors_exhaust_the_attempts(server):
    server.faults = lambda call: "500"
    with client(server, attempts=3, breaker_failures=100) as llm, \
            pytest.raises(LLMError, match="request failed after 3 attempts .*HTTP 500"):
        llm.call_many([chat("Cats hunt mice.")])
    assert len(server.calls) == 3


def test_refused_requests_are_not_retried(server):
    server.faults = on_calls({1: "400"})
    with client(server) as llm:
        with pytest.raises(LLMRequestError, match="HTTP 400 .*maximum context length") as info:
            llm.call_many([chat("Cats hunt mice.")])
    assert info.value.status == 400 and len(server.calls) == 1


def test_the_key_travels_only_in_the_header_and_never_in_messages_or_logs(server, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    with client(server) as llm:
        assert llm.call_many([chat("Dogs are loyal.")])[0].text == "Los perros son leales."
        described = str(llm.describe())
    assert server.seen_headers[-1]["authorization"] == f"Bearer {KEY}"
    server.require_key = "another-key"
    with client(server, attempts=1) as llm, pytest.raises(LLMRequestError) as info:
        llm.call_many([chat("Dogs are loyal.")])
    assert info.value.status == 401
    assert KEY not in str(info.value) and KEY not in described and KEY not in caplog.text
    assert "Incorrect API key" in str(info.value)


def test_hosted_api_without_a_key_names_the_variable(monkeypatch, openai):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    endpoint = Endpoint.resolve("gpt-4o-mini")
    assert endpoint.base_url == "https://api.openai.com/v1"
    with LLMClient(endpoint) as llm, pytest.raises(BeirxError, match="set the environment variable OPENAI_API_KEY"):
        llm.call_many([chat("x")])


def test_endpoint_from_environment_and_validation(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:pw@127.0.0.1:9/v1/")
    endpoint = Endpoint.resolve("m")
    assert endpoint.base_url == "http://user:pw@127.0.0.1:9/v1"
    assert endpoint.describe() == {"base_url": "http://user:***@127.0.0.1:9/v1", "model": "m"}
    assert Endpoint.resolve("m", "http://h:1/v1").base_url == "http://h:1/v1"
    with pytest.raises(BeirxError, match="base URL must be"):
        Endpoint.resolve("m", "localhost:8000")
    with pytest.raises(BeirxError, match="concurrency must be at least 1"):
        Endpoint.resolve("m", "http://h/v1", concurrency=0)


def test_max_cost_stops_before_it_would_be_exceeded(server):
    server.latency = 0.02
    # every request's worst case: its prompt estimate at $1M/M tokens... a cap that fits about 3 of them
    request = chat("Cats hunt mice.")
    worst = Prices(1e6, 1e6).cost(request.worst_case())
    meter = UsageMeter(Prices(1e6, 1e6), max_cost=3.5 * worst)
    with client(server, meter, concurrency=1) as llm:
        results = llm.call_many([request] * 8, return_exceptions=True)
    sent = [r for r in results if isinstance(r, Reply)]
    stopped = [r for r in results if isinstance(r, BudgetExceeded)]
    assert len(sent) + len(stopped) == 8 and len(stopped) >= 4 and len(server.calls) == len(sent)
    assert meter.spent <= meter.max_cost
    assert "stopping before --max-cost" in str(stopped[0])


def test_usage_meter_reservations():
    meter = UsageMeter(Prices(1.0, 2.0), max_cost=10e-6)
    held = meter.reserve(Usage(2, 2))  # 6e-6
    with pytest.raises(BudgetExceeded):
        meter.reserve(Usage(2, 2))
    meter.settle(held, Usage(1, 1))  # 3e-6 spent, nothing held
    meter.settle(meter.reserve(Usage(2, 2)), None)  # failed: nothing billed
    assert meter.spent == pytest.approx(3e-6) and meter.snapshot()["requests"] == 1


def test_fake_server_fault_plans_and_source_extraction():
    chat_body = {"messages": [{"role": "user", "content": "Translate <text>\nA b.\n</text>"}]}
    assert extract_source("chat", chat_body) == "A b."
    assert extract_source("completions", {"prompt": "Do it.\n\nEnglish: one\nSpanish: uno\n\nEnglish: two\nSpanish:"}) \
        == "two"
    mix = fault_mix(0.5, ("500", "echo"), seed=1)
    from fake_openai import Call

    picks = [mix(Call(1, "chat", f"s{i}", 1, {}, {})) for i in range(400)]
    assert 150 < sum(p is not None for p in picks) < 250 and {p for p in picks if p} == {"500", "echo"}
    assert picks == [mix(Call(9, "chat", f"s{i}", 1, {}, {})) for i in range(400)]  # order-independent
    assert ANSWER.startswith("Sí.")


def test_prompt_files_merge_a_user_override_and_hash_what_is_sent(tmp_path, monkeypatch):
    package = tmp_path / "promptpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "p.toml").write_text('version = "p-1"\n[chat]\nsystem = "Translate {src} to {tgt}."\nuser = "{text}"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    default = PromptFile.load("promptpkg", "p.toml")
    assert default.fill("chat", "system", src="English", tgt="Spanish") == "Translate English to Spanish."
    assert default.describe()["prompt_source"] == "beirx:promptpkg/p.toml" and default.version == "p-1"
    user = tmp_path / "mine.toml"
    user.write_text('version = "mine-1"\n[chat]\nsystem = "Render {src} as {tgt}; keep {{braces}}."\n')
    merged = PromptFile.load("promptpkg", "p.toml", user)
    assert merged.get("chat", "user") == "{text}" and merged.sha256 != default.sha256
    assert merged.fill("chat", "system", src="en", tgt="es") == "Render en as es; keep {braces}."
    with pytest.raises(BeirxError, match=r"mine.toml over beirx:promptpkg/p.toml: chat.system: unknown field \{tgt\}"):
        merged.fill("chat", "system", src="en")
    user.write_text('version = \n')
    with pytest.raises(BeirxError, match="mine.toml is not valid TOML"):
        PromptFile.load("promptpkg", "p.toml", user)
    with pytest.raises(BeirxError, match="cannot read the prompt file"):
        PromptFile.load("promptpkg", "p.toml", tmp_path / "absent.toml")


def test_real_llama_cpp_server_answers_through_the_client(llama_server):
    """Gemma 3 270M in llama.cpp: a few-shot plain completion gives Spanish; usage is counted."""
    meter = UsageMeter()
    endpoint = Endpoint.resolve(llama_server.model, llama_server.url, timeout=120, concurrency=1)
    prompt = ("English: The cat sleeps on the warm roof.\nSpanish: El gato duerme en el tejado caliente.\n\n"
              "English: Hello world.\nSpanish:")
    with LLMClient(endpoint, meter=meter) as llm:
        reply, = llm.call_many([Request.completion(prompt, max_tokens=8, stop=("\n",))])
    assert reply.text.strip() == "Hola mundo." and reply.finish_reason == "stop"
    assert meter.usage.prompt_tokens > 20 and 0 < meter.usage.completion_tokens <= 8


def test_tiny_causal_lm_folder_has_a_chat_template_and_generates(tiny_causal_lm):
    transformers = needs("transformers", "neural")
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_causal_lm)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_causal_lm)
    text = tokenizer.apply_chat_template([{"role": "system", "content": "Translate."},
                                          {"role": "user", "content": "Cats hunt mice."}],
                                         tokenize=False, add_generation_prompt=True)
    assert text == "<bos><start_of_turn>user\nTranslate.\n\nCats hunt mice.<end_of_turn>\n<start_of_turn>model\n"
    tokenizer.padding_side = "left"
    batch = tokenizer([text, text + "x"], return_tensors="pt", padding=True, add_special_tokens=False)
    out = model.generate(**batch, max_new_tokens=4, do_sample=False)
    assert out.shape == (2, batch["input_ids"].shape[1] + 4)


def test_every_client_runs_on_the_process_one_loop(server):
    """Two clients, one loop thread: closing one closes its connections only; the other keeps answering, and
    a closed client opens new connections at its next request."""
    import threading

    from beirx.models.llm.loop import THREAD_NAME, shared_loop, stop

    first, second = client(server), client(server)
    assert first.call_many([chat("Cats hunt mice.")])[0].text == second.call_many([chat("Cats hunt mice.")])[0].text
    threads = [t for t in threading.enumerate() if t.name == THREAD_NAME]
    assert len(threads) == 1
    async def running_loop():
        return asyncio.get_running_loop()

    assert first.schedule(running_loop()).result() is second.schedule(running_loop()).result() is shared_loop()
    first.close()
    assert first.closed and not second.closed
    assert second.call_many([chat("Dogs are loyal.")])[0].text
    assert first.call_many([chat("Dogs are loyal.")])[0].text and not first.closed
    assert [t for t in threading.enumerate() if t.name == THREAD_NAME] == threads and shared_loop().is_running()
    first.close()
    second.close()
    stop()  # what exit does: the thread ends; a later request starts the loop again
    assert not threads[0].is_alive()
    assert first.call_many([chat("Cats hunt mice.")])[0].text
    assert len([t for t in threading.enumerate() if t.name == THREAD_NAME]) == 1
    first.close()
