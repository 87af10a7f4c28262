"""The one retry decision (beirx.retry.Retrying) in its two forms, and the Batch API going through it against the
fake OpenAI-compatible server on 127.0.0.1: 429 (with retry-after-ms) and 503 answers to the upload and to the
polls are retried, the batch finishes, and each endpoint gets exactly one more request per injected fault."""

from __future__ import annotations

import asyncio
import random

import pytest

from beirx.errors import BeirxError
from beirx.retry import Retrying, RetryPolicy, Transient, retry_after, transient_status
from extras import needs
from fake_openai import FakeOpenAI, word_map


# -- the decision itself -------------------------------------------------------------------------------------------
class Flaky:
    """Fails with the given outcomes (exceptions raised, anything else returned) and then answers "ok"."""

    def __init__(self, *outcomes):
        self.outcomes, self.attempts = list(outcomes), []

    def __call__(self, attempt: int):
        self.attempts.append(attempt)
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def classify(outcome) -> Transient | None:
    """ConnectionError is transient; "busy N" is a transient answer asking to wait N s; the rest is final."""
    if isinstance(outcome, ConnectionError):
        return Transient(f"dropped: {outcome}", "connection")
    if isinstance(outcome, str) and outcome.startswith("busy"):
        return Transient(outcome, "rate_limited", float(outcome.split()[1]))
    return None


def policy(attempts: int, waits: list[float]) -> RetryPolicy:
    return RetryPolicy(attempts=attempts, base_delay=1.0, max_delay=8.0, sleep=waits.append, rng=random.Random(0))


def test_transient_outcomes_are_retried_waiting_the_server_or_the_backoff():
    waits, retried = [], []
    flaky = Flaky(ConnectionError("reset"), "busy 2.5", ConnectionError("reset"))
    decision = Retrying(policy(4, waits), retried=lambda n, t, w: retried.append((n, t.kind, w)))
    assert decision.call(flaky, classify) == "ok"
    assert flaky.attempts == [1, 2, 3, 4]
    backoff = policy(4, [])  # the same seeded jitter (a server's wait draws none): retry 0 from d=1, retry 2 from d=4
    first, third = backoff.delay(0), backoff.delay(2)
    assert waits == [first, 2.5, third] and 0.5 <= first <= 1.0 and 2.0 <= third <= 4.0
    assert [(n, kind) for n, kind, _ in retried] == [(1, "connection"), (2, "rate_limited"), (3, "connection")]


def test_a_final_outcome_is_raised_as_it_is_or_returned_at_once():
    waits = []
    with pytest.raises(ValueError, match="bad request"):
        Retrying(policy(5, waits)).call(Flaky(ConnectionError("x"), ValueError("bad request")), classify)
    assert len(waits) == 1
    assert Retrying(policy(5, waits)).call(Flaky("final answer"), classify) == "final answer"


def test_out_of_attempts_raises_the_transports_error_after_telling_its_breaker():
    failed = []
    decision = Retrying(policy(3, []), failed=lambda t, last: failed.append(last),
                        exhausted=lambda t, n: BeirxError(f"gave up after {n} ({t.reason})"))
    with pytest.raises(BeirxError, match=r"gave up after 3 \(dropped: reset\)"):
        decision.call(Flaky(*[ConnectionError("reset")] * 5), classify)
    assert failed == [False, False, True]
    with pytest.raises(BeirxError, match=r"failed after 2 attempts \(last: busy 0\)"):  # the default error
        Retrying(policy(2, [])).call(Flaky("busy 0", "busy 0"), classify)


def test_the_async_form_makes_the_same_decisions():
    sync_waits, async_waits = [], []
    outcomes = (ConnectionError("reset"), "busy 0.25", ConnectionError("reset"))
    Retrying(policy(4, sync_waits)).call(Flaky(*outcomes), classify)

    async def asleep(seconds: float) -> None:
        async_waits.append(seconds)

    async def run():
        flaky = Flaky(*outcomes)

        async def attempt(n):
            return flaky(n)

        return await Retrying(policy(4, []), asleep=asleep).acall(attempt, classify)

    assert asyncio.run(run()) == "ok"
    assert async_waits == sync_waits


def test_the_server_wait_is_read_once_from_either_header():
    assert retry_after({"retry-after-ms": "20", "retry-after": "1"}) == 0.02
    assert retry_after({"retry-after": "3"}) == 3.0
    assert transient_status(503, {"retry-after": "2"}, "HTTP 503") == Transient("HTTP 503", "server_error", 2.0)
    assert transient_status(429, {}, "HTTP 429").kind == "rate_limited"
    assert transient_status(400, {"retry-after": "2"}, "HTTP 400") is None
    assert transient_status(456, {"retry-after-ms": "5"}, "HTTP 456", retry=True) == \
        Transient("HTTP 456", "server_error", 0.005)  # a status the transport knows to be temporary


# -- the Batch API through it --------------------------------------------------------------------------------------
class Sleeps:
    """Records the client's backoff waits instead of sleeping them."""

    def __init__(self):
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def run_batch(server: FakeOpenAI, texts: list[str], sleep: Sleeps) -> tuple[dict, dict]:
    """Upload, create, poll until done and download a batch translating ``texts``; ``(replies, usage)``."""
    from beirx.models.llm import Endpoint, LLMClient, Request
    from beirx.models.llm.batch_api import DONE, BatchAPI

    requests = [(f"r{i}", Request.chat([{"role": "system", "content": "Translate English to Spanish."},
                                        {"role": "user", "content": f"<text>\n{text}\n</text>"}], max_tokens=64))
                for i, text in enumerate(texts)]
    with LLMClient(Endpoint.resolve(server.model, server.url, backoff=0.01, attempts=4), sleep=sleep) as llm:
        api = BatchAPI(llm)
        batch_id = api.create(api.upload(api.jsonl(requests)), "chat")
        for _ in range(20):
            batch = api.retrieve(batch_id)
            if batch["status"] in DONE:
                break
        assert batch["status"] == "completed"
        replies = api.results(batch, "chat")
        return {cid: replies[cid].text for cid, _ in requests}, llm.meter.snapshot()


def test_a_batch_answered_429_and_503_on_upload_and_polls_finishes(tmp_path):
    needs("openai", "llm")
    texts = ["Cats hunt mice.", "Dogs are loyal."]
    with FakeOpenAI(translate=word_map()) as clean, FakeOpenAI(translate=word_map()) as faulty:
        expected, _ = run_batch(clean, texts, Sleeps())
        faulty.batch_faults = {"upload": [429, 503], "poll": [503, 429]}
        sleep = Sleeps()
        replies, usage = run_batch(faulty, texts, sleep)
        assert replies == expected and all(replies.values())
        assert dict(clean.batch_requests) == {"upload": 1, "create": 1, "poll": 3, "content": 1}
        assert dict(faulty.batch_requests) == {"upload": 3, "create": 1, "poll": 5, "content": 1}
        assert not any(faulty.batch_faults.values())
    # a 429 waits the server's retry-after-ms (20 ms), a 503 the backoff (equal jitter of 10 ms, then 20 ms)
    upload_429, upload_503, poll_503, poll_429 = sleep.waits
    assert upload_429 == poll_429 == faulty.retry_after_ms / 1000
    assert 0.005 <= upload_503 <= 0.02 and 0.005 <= poll_503 <= 0.01
    assert (usage["retries"], usage["transient_failures"]) == (4, {"rate_limited": 2, "server_error": 2})
