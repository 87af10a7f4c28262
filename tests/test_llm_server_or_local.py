"""One LLM layer (:class:`beirx.models.llm.LLM`): the LLM judge and the listwise reranker each run once on a server
(the fake OpenAI-compatible one) and once in this process (the tiny random causal LM) through the same code: the
same requests are asked, the same re-ask and permutation logic reads the answers, the same meter counts them."""

from __future__ import annotations

import json

import pytest
from artifact_fixtures import row_values
from conftest import translated_pair

from beirx.data.records import Doc, Query
from beirx.evaluate.rerankers.llm_listwise import LLMListwiseReranker
from beirx.models.llm import LocalLLM
from beirx.translate.quality.judge import LLMJudge
from beirx.translate.quality.run import run_quality

ENGLISH = ["Vitamin D deficiency is common.", "Antibiotics do not work against viruses.", "Smoking harms the baby."]
SPANISH = ["La deficiencia de vitamina D es común.", "Los antibióticos no funcionan contra los virus.",
           "Fumar daña al bebé."]


@pytest.fixture
def asked_in_process(monkeypatch):
    """Every request the in-process LLM generates, in order."""
    asked = []
    generate = LocalLLM._generate

    def recording(self, requests, *sampling):
        asked.extend(requests)
        return generate(self, requests, *sampling)

    monkeypatch.setattr(LocalLLM, "_generate", recording)
    return asked


def _pair(tmp_path):
    return translated_pair(tmp_path, ENGLISH, SPANISH)


def _judge(judge, source, translated, out):
    report = run_quality(source, translated, out, src_lang="en", tgt_lang="es", methods=[judge],
                         fields=("queries",), show_progress=False)
    return report


def test_the_judge_runs_on_a_server_and_in_process_through_the_same_code(fake_llm_factory, tiny_causal_lm, tmp_path,
                                                                          asked_in_process, beirx_home):
    source, translated = _pair(tmp_path)
    # the server answers prose first and a judgement when asked again: the engine's re-ask, quoting the answer
    server = fake_llm_factory(responder=lambda call: '{"errors": [], "score": 90}' if len(call.body["messages"]) > 2
                              else "It reads well.")
    remote = _judge(LLMJudge(server.model, base_url=server.url, sample=None, retries=1, max_tokens=16),
                    source, translated, tmp_path / "server")
    assert row_values(remote, "queries", "judge_da") == {"q0": 90.0, "q1": 90.0, "q2": 90.0}
    summary = remote.fields["queries"].methods["judge"].summary
    assert (summary["judged"], summary["malformed"], summary["answers_asked_again"], summary["usage"]["requests"]) == \
        (3, 0, 3, 6) and len(server.calls) == 6

    # in process: random weights never answer a judgement; each row is asked again once, then recorded missing
    local = _judge(LLMJudge(str(tiny_causal_lm), backend="transformers", device="cpu", sample=None, retries=1,
                            max_tokens=16), source, translated, tmp_path / "local")
    assert row_values(local, "queries", "judge_da") == {"q0": None, "q1": None, "q2": None}
    summary = local.fields["queries"].methods["judge"].summary
    assert (summary["judged"], summary["malformed"], summary["answers_asked_again"], summary["usage"]["requests"]) == \
        (0, 3, 3, 6) and summary["usage"]["prompt_tokens"] > 0 and summary["usage"]["completion_tokens"] > 0
    assert len(asked_in_process) == 6
    # the same requests: first round identical to the server's; the re-ask quotes the model's own answer
    first = lambda requests: sorted(json.dumps(r, ensure_ascii=False) for r in requests)  # noqa: E731
    assert first(list(r.messages) for r in asked_in_process[:3]) == first(c.body["messages"] for c in server.calls[:3])
    for retry in asked_in_process[3:]:
        assert len(retry.messages) == 4 and retry.messages[2]["role"] == "assistant" and retry.max_tokens == 16
        assert "JSON" in retry.messages[3]["content"] or "json" in retry.messages[3]["content"].lower()
    described = json.loads((tmp_path / "local" / "quality.json").read_text())["methods"]["judge"]["description"]
    assert described["backend"] == "transformers" and described["model"] == str(tiny_causal_lm)


def test_the_listwise_reranker_runs_on_a_server_and_in_process_through_the_same_code(fake_llm_factory, tiny_causal_lm,
                                                                                     asked_in_process):
    queries = {q: Query(q, f"find {q}") for q in ("a", "b")}
    corpus = {f"{q}{i}": Doc(f"{q}{i}", f"passage {i} about {q}") for q in queries for i in range(4)}
    first = {q: {f"{q}{i}": 10.0 - i for i in range(4)} for q in queries}
    server = fake_llm_factory(responder=lambda call: "[2] > [1] > [3]")
    options = dict(window=3, step=2, max_tokens=12, use_cache=False, show_progress=False)
    remote = LLMListwiseReranker("fake-llm", base_url=server.url, **options)
    run = remote.rerank(queries, corpus, first, depth=4)
    # windows [1,4) then [0,3), each answered "[2] > [1] > [3]": 0 1 2 3 -> 0 2 1 3 -> 2 0 1 3, scored n - rank
    assert run == {q: {f"{q}2": 4.0, f"{q}0": 3.0, f"{q}1": 2.0, f"{q}3": 1.0} for q in queries}
    assert remote.describe()["backend"] == "openai" and remote.describe()["usage"]["requests"] == 4 == len(server.calls)

    local = LLMListwiseReranker(str(tiny_causal_lm), batch_size=2, device="cpu", **options)
    run = local.rerank(queries, corpus, first, depth=4)
    for q in queries:  # whatever random weights answer, each query keeps its candidates, scored 4..1
        assert sorted(run[q].values()) == [1.0, 2.0, 3.0, 4.0] and set(run[q]) == {f"{q}{i}" for i in range(4)}
    usage = local.describe()["usage"]
    assert local.describe()["backend"] == "transformers" and (usage["windows"], usage["requests"]) == (4, 4)
    assert usage["prompt_tokens"] > 0 and len(asked_in_process) == 4
    # the first windows (before any answer reorders them) are the very requests the server got
    assert sorted(json.dumps(list(r.messages)) for r in asked_in_process[:2]) == \
        sorted(json.dumps(c.body["messages"]) for c in server.calls[:2])
    assert all(r.max_tokens == 12 for r in asked_in_process)
