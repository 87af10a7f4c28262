"""One LLM layer (:class:`beirx.models.llm.LLM`): the LLM judge and the listwise and pointwise rerankers each run
once on a server (the fake OpenAI-compatible one) and once in this process (a tiny random causal LM) through the
same code: the same requests are asked, the same re-ask, permutation and label-score logic reads the answers."""

from __future__ import annotations

import json
import math

import pytest
from artifact_fixtures import row_values
from conftest import translated_pair

from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.evaluate.rerankers.llm_listwise import LLMListwiseReranker
from beirx.evaluate.rerankers.llm_pointwise import LLMPointwiseReranker
from beirx.models.llm import LLMAnswerError, LocalLLM
from test_llm_rerankers import yes_no_lm  # noqa: F401  (a tiny causal LM with yes/no tokens of their own)
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
    # the same requests: first round identical to the server's; the re-ask quotes the model's own answer, which
    # random weights never end before the limit: cut off, it is asked again with twice the max_tokens
    first = lambda requests: sorted(json.dumps(r, ensure_ascii=False) for r in requests)  # noqa: E731
    assert first(list(r.messages) for r in asked_in_process[:3]) == first(c.body["messages"] for c in server.calls[:3])
    for retry in asked_in_process[3:]:
        assert len(retry.messages) == 4 and retry.messages[2]["role"] == "assistant" and retry.max_tokens == 32
        assert "the answer was cut off by the token limit" in retry.messages[3]["content"]
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


# each document's P(yes) and P(no) (summed over yes, Yes, " yes", " Yes" and the no's): the LLM's answers, known
MASSES = {"Cats purr.": (0.4, 0.2), "Dogs bark.": (0.1, 0.6), "Birds sing.": (0.3, 0.3)}
YES, NO = ("yes", "Yes", " yes", " Yes"), ("no", "No", " no", " No")


def _masses(text: str) -> tuple[float, float]:
    return next(masses for document, masses in MASSES.items() if document in text)


def test_the_pointwise_reranker_runs_on_a_server_and_in_process_through_the_same_code(fake_llm_factory, yes_no_lm,
                                                                                      monkeypatch):
    """Both LLMs give each label token a quarter of its label's mass; the scores are then computed by hand:
    ``yes`` is log P(yes), ``yes-no`` the log-softmax over the two labels, log(P(yes) / (P(yes) + P(no)))."""
    import torch

    from beirx.models import causal_lm

    query = Query("q", "which animal makes a sound?")
    docs = [Doc(f"d{i}", text) for i, text in enumerate(MASSES)]
    expected = {"yes": [math.log(y) for y, _ in MASSES.values()],
                "yes-no": [math.log(y / (y + n)) for y, n in MASSES.values()]}

    def next_tokens(call):  # the server's first-token alternatives; the rest of the mass on two other tokens
        yes, no = _masses(call.body["messages"][-1]["content"])
        rest = (1 - yes - no) / 2
        return {**{t: math.log(yes / 4) for t in YES}, **{t: math.log(no / 4) for t in NO},
                "The": math.log(rest), "It": math.log(rest)}

    server = fake_llm_factory(next_tokens=next_tokens)
    local_texts = []

    def next_token_logprobs(tokenizer, model, texts, device):  # the same distribution over the local vocabulary
        local_texts.extend(texts)
        rows = []
        for text in texts:
            yes, no = _masses(text)
            row = torch.full((len(tokenizer),), math.log((1 - yes - no) / (len(tokenizer) - 8)))
            row[local.llm.first_tokens(["yes", "Yes"])] = math.log(yes / 4)
            row[local.llm.first_tokens(["no", "No"])] = math.log(no / 4)
            rows.append(row)
        return torch.stack(rows)

    monkeypatch.setattr(causal_lm, "next_token_logprobs", next_token_logprobs)
    options = dict(use_cache=False, show_progress=False, batch_size=2)
    for kind in ("yes", "yes-no"):
        remote = LLMPointwiseReranker(server.model, base_url=server.url, score=kind, **options)
        local = LLMPointwiseReranker(str(yes_no_lm), device="cpu", score=kind, **options)
        for reranker, backend in ((remote, "openai"), (local, "transformers")):
            assert reranker.score(query, docs) == pytest.approx(expected[kind], abs=1e-6)
            assert (reranker.describe()["backend"], reranker.describe()["score"]) == (backend, kind)
        assert remote.describe()["score_formula"] == local.describe()["score_formula"] and \
            remote.describe()["score_formula"].startswith("log P(yes)" + (" - log(" if kind == "yes-no" else ":"))
    # the same requests: one user message per pair; the server is asked for one token and its top 20 alternatives
    asked = [remote.request(query.text, d.joined()) for d in docs]
    assert sorted(json.dumps(c.body["messages"]) for c in server.calls[-3:]) == \
        sorted(json.dumps(list(r.messages)) for r in asked)
    assert all((c.body["max_tokens"], c.body["logprobs"], c.body["top_logprobs"]) == (1, True, 20)
               for c in server.calls)
    tokenizer = local.llm.loaded()[0]
    assert sorted(local_texts[-3:]) == sorted(causal_lm.prompt_text(tokenizer, r) for r in asked)


def test_pointwise_on_a_server_bounds_unlisted_labels_and_needs_logprobs(fake_llm_factory, caplog):
    query, doc = Query("q", "a query"), Doc("d", "Cats purr.")
    # no "no" token among the alternatives: its mass is bounded by the lowest listed, P = 0.1
    server = fake_llm_factory(next_tokens=lambda call: {" yes": math.log(0.5), "The": math.log(0.1)})
    reranker = LLMPointwiseReranker(server.model, base_url=server.url, score="yes-no", use_cache=False,
                                    show_progress=False)
    with caplog.at_level("INFO"):
        assert reranker.score(query, [doc]) == pytest.approx([math.log(0.5 / 0.6)])
    assert "1 labels not among the top 20 tokens, bounded by the lowest listed" in caplog.text
    # a server's tokenizer is not at hand: the document is cut so the prompt's approximate count (4 characters a
    # token, plus 4 of chat framing) fits max_length exactly
    request, cut = reranker.llm.fit(lambda text: reranker.request("q", text), "word " * 1000, 100)
    assert cut and request.worst_case().prompt_tokens == 100 and "word word" in request.text
    assert reranker.llm.fit(lambda text: reranker.request("q", text), "word", 100)[1] is False

    without = fake_llm_factory(responder=lambda call: "yes")  # a server that sends "logprobs": null
    reranker = LLMPointwiseReranker(without.model, base_url=without.url, use_cache=False, show_progress=False)
    with pytest.raises(LLMAnswerError, match=r"LLM server http://127\.0\.0\.1:\d+/v1 \(model fake-llm\) sent no "
                                             "top_logprobs: label log-probabilities need a server that supports "
                                             "OpenAI's logprobs"):
        reranker.score(query, [doc])
    with pytest.raises(BeirxError, match="--llm-score must be one of yes, yes-no, got 'maybe'"):
        LLMPointwiseReranker(without.model, base_url=without.url, score="maybe")
