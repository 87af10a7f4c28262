"""LLM rerankers: ``llm-pointwise`` scores equal log P(yes) computed pair by pair with transformers (a tiny
random-weight causal LM, so batching and left padding change nothing); ``llm-listwise`` slides RankGPT's
window as the paper does, survives and counts malformed permutations (the fake OpenAI-compatible server
answering as told), reports tokens and cost, caches per candidate list, runs a local causal LM too, and
works against a real llama.cpp server with Gemma 3 270M (whose answers are often malformed: the parser's
real test).
"""

from __future__ import annotations

import hashlib
import json
import math
import re

import pytest

from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.evaluate.rerankers import RERANKERS
from beirx.evaluate.rerankers.llm_listwise import LLMListwiseReranker, windows
from beirx.evaluate.rerankers.llm_pointwise import LLMPointwiseReranker
from beirx.evaluate.rerankers.permutation import parse_permutation
from beirx.evaluate.runs import read_trec
from beirx.models.causal_lm import prompt_text
from test_dense import scifact_slice  # noqa: F401  (a session fixture: 300 real SciFact documents)
from extras import needs

torch = needs("torch", "neural")
transformers = needs("transformers", "neural")

DOCS = [Doc("d1", "The cat sleeps on the warm roof.", "Cats"), Doc("d2", "Vaccines reduce the risk of severe disease."),
        Doc("d3", "El gato duerme en el tejado caliente.", ""),
        Doc("d4", "Las vacunas reducen el riesgo de enfermedad grave en los niños. " * 6)]
QUERY = Query("q1", "Do vaccines reduce severe disease?")


# -- pointwise ---------------------------------------------------------------------------------------------------
def direct_log_p_yes(folder, text: str, yes_words: list[str], no_words: list[str] = ()) -> float:
    """log P(yes) for one prompt, unbatched and unpadded, straight from transformers; with ``no_words``,
    log(P(yes) / (P(yes) + P(no))) from the probabilities themselves."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    inputs = tokenizer(text, return_tensors="pt", add_special_tokens=not text.startswith(tokenizer.bos_token))
    with torch.no_grad():
        probs = torch.softmax(model(**inputs).logits[0, -1].double(), dim=-1)

    def mass(words):
        return probs[sorted({tokenizer(v, add_special_tokens=False)["input_ids"][0] for w in words
                             for v in (w, " " + w)})].sum().item()

    yes = mass(yes_words)
    return math.log(yes / (yes + mass(no_words))) if no_words else math.log(yes)


def rendered(reranker: LLMPointwiseReranker, query: str, document: str) -> str:
    """What the in-process model reads for one pair (its chat template over the reranker's request)."""
    return prompt_text(reranker.llm.loaded()[0], reranker.request(query, document))


def test_pointwise_scores_are_log_p_yes_pair_by_pair(tiny_causal_lm):
    assert RERANKERS.get("llm-pointwise") is LLMPointwiseReranker
    reranker = LLMPointwiseReranker(str(tiny_causal_lm), batch_size=3, show_progress=False, use_cache=False)
    scores = reranker.score(QUERY, DOCS)
    description = reranker.describe()
    assert description["backend"] == "transformers" and description["yes_words"] == ["yes", "Yes"]
    assert description["prompt"] == "pointwise" and description["prompt_version"] == "beirx-rerank-2"
    assert description["score"] == "yes" and "no_words" not in description
    for doc, score in zip(DOCS, scores):
        text = rendered(reranker, QUERY.text, doc.joined())
        assert text.startswith("<bos><start_of_turn>user\nDecide whether the document is relevant") and \
            "The query and the document are in English." in text and text.endswith("Answer:<end_of_turn>\n"
                                                                                     "<start_of_turn>model\n")
        assert score == pytest.approx(direct_log_p_yes(tiny_causal_lm, text, ["yes", "Yes"]), abs=1e-5)
    assert all(s < 0 for s in scores) and len(set(scores)) == len(scores)


@pytest.fixture(scope="module")
def yes_no_lm(tmp_path_factory):
    """A tiny random causal LM whose vocabulary has the answer words with and without a leading space as
    tokens of their own (in tiny_causal_lm's, " yes" and " no" both start with the space token)."""
    from tiny_models import build_tiny_causal_lm

    lines = [d.joined() for d in DOCS] + ["Answer yes or no. yes no Yes No tak nie Tak Nie"] * 40
    return build_tiny_causal_lm(tmp_path_factory.mktemp("yes-no-lm"), lines)


def test_pointwise_yes_no_score_is_normalised_over_the_label_tokens(yes_no_lm, tiny_causal_lm, tmp_path):
    reranker = LLMPointwiseReranker(str(yes_no_lm), batch_size=3, score="yes-no", show_progress=False,
                                    use_cache=False)
    description = reranker.describe()
    assert (description["score"], description["no_words"]) == ("yes-no", ["no", "No"])
    assert description["score_formula"].startswith("log P(yes) - log(P(yes) + P(no))")
    # yes, Yes, " yes", " Yes" (and the no's)
    assert [len(reranker.llm.first_tokens(words)) for words in reranker.labels.values()] == [4, 4]
    plain = LLMPointwiseReranker(str(yes_no_lm), show_progress=False, use_cache=False)
    assert reranker.cache_identity() != plain.cache_identity()  # the two scores are never mixed in the cache
    scores = reranker.score(QUERY, DOCS)
    for doc, score, unnormalised in zip(DOCS, scores, plain.score(QUERY, DOCS)):
        text = rendered(reranker, QUERY.text, doc.joined())
        assert score == pytest.approx(direct_log_p_yes(yes_no_lm, text, ["yes", "Yes"], ["no", "No"]), abs=1e-5)
        assert unnormalised < score < 0  # P(yes) / (P(yes) + P(no)) > P(yes) over the whole vocabulary
    polish = LLMPointwiseReranker(str(yes_no_lm), lang="pl", score="yes-no", show_progress=False,
                                  use_cache=False)
    assert polish.labels == {"yes": ["tak", "Tak"], "no": ["nie", "Nie"]}

    # words that share a first token are refused (tiny_causal_lm's " yes" and " no" both start with " ")
    with pytest.raises(BeirxError, match=r"the yes words \['yes', 'Yes'\] and the no words \['no', 'No'\] share "
                                         r"the first token\(s\) \[\d+\] in .*tiny-chat-lm's vocabulary: "
                                         "they cannot be told apart"):
        LLMPointwiseReranker(str(tiny_causal_lm), score="yes-no", show_progress=False)
    with pytest.raises(BeirxError, match=r"--llm-score must be one of yes, yes-no, got 'no'"):
        LLMPointwiseReranker(str(tiny_causal_lm), score="no", show_progress=False)


def test_pointwise_language_prompts_truncation_and_prompt_file(tiny_causal_lm, tmp_path, caplog):
    polish = LLMPointwiseReranker(str(tiny_causal_lm), lang="pl", show_progress=False, use_cache=False)
    assert polish.describe()["prompt"] == "pointwise.languages.pl" and polish.labels == {"yes": ["tak", "Tak"]}
    assert "Czy dokument jest istotny dla zapytania?" in rendered(polish, "q", "d")
    spanish = LLMPointwiseReranker(str(tiny_causal_lm), lang="es", show_progress=False, use_cache=False)
    assert "The query and the document are in Spanish." in rendered(spanish, "q", "d")

    tokenizer = spanish.llm.loaded()[0]

    def length(text: str) -> int:  # + 1: a BOS the tokenizer may add
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) + 1

    lengths = [length(rendered(spanish, QUERY.text, d.joined())) for d in DOCS]
    limit = max(lengths[:3])  # the first three fit exactly; the long d4 does not
    assert lengths[3] > limit
    short = LLMPointwiseReranker(str(tiny_causal_lm), max_length=limit, show_progress=False, use_cache=False)
    with caplog.at_level("INFO"):
        short.score(QUERY, DOCS)
    assert "1 of 4 pairs had the document truncated" in caplog.text
    request, cut = short.llm.fit(lambda text: short.request(QUERY.text, text), DOCS[3].joined(), limit)
    fitted = prompt_text(tokenizer, request)
    assert cut and limit - 3 <= length(fitted) <= limit and fitted.endswith("<start_of_turn>model\n")
    assert short.llm.fit(lambda text: short.request(QUERY.text, text), DOCS[0].joined(), limit)[1] is False

    custom = tmp_path / "prompts.toml"
    custom.write_text('version = "mine-1"\n[pointwise]\ntemplate = "Q: {query} D: {document} Relevant?"\n'
                      'yes = ["yes"]\n', encoding="utf-8")
    mine = LLMPointwiseReranker(str(tiny_causal_lm), prompt_file=str(custom), show_progress=False, use_cache=False)
    assert mine.describe()["prompt_version"] == "mine-1" and "Q: q D: d Relevant?" in rendered(mine, "q", "d")
    assert mine.cache_identity()["prompt_sha256"] != polish.cache_identity()["prompt_sha256"]


def test_pointwise_reranks_bm25_through_the_cli(yes_no_lm, tiny_dataset, tmp_path):
    out = tmp_path / "out"
    assert main(["eval", "--dataset", str(tiny_dataset), "--retriever", "bm25", "--reranker", "llm-pointwise",
                 "--reranker-model", str(yes_no_lm), "--rerank-depth", "3", "--llm-score", "yes-no",
                 "--output", str(out), "--no-progress"]) == 0
    [results] = [json.loads(p.read_text()) for p in out.glob("*llm-pointwise*.json")]
    [bm25_path] = [p for p in out.glob("*.trec") if "rerank" not in p.name]
    bm25 = read_trec(bm25_path)
    reranked = read_trec(out / results["run_file"])
    for qid, docs in reranked.items():  # only the first stage's top 3, reordered
        assert set(docs) == set(list(bm25[qid])[:3])
    description = results["system"]["description"]
    assert description["reranker"]["reranker"] == "llm-pointwise" and description["reranker"]["score"] == "yes-no"
    # the first stage it reranked: BM25, 3 deep, and the checksum of exactly the run written beside it
    lines = sorted((line.split() for line in bm25_path.read_text().splitlines()), key=lambda f: f[0])
    digest = hashlib.sha256("".join(f"{f[0]}\t{f[2]}\t{f[4]}\n" for f in lines).encode()).hexdigest()
    assert description["first_stage_run"] == {"retriever": "bm25", "system": "bm25 fields=multifield", "depth": 3,
                                              "top_k": 1000, "run_checksum": f"sha256:{digest}"}


# -- listwise: the parts -------------------------------------------------------------------------------------------
def test_windows_slide_bottom_to_top():
    assert windows(100, 20, 10) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60), (30, 50), (20, 40), (10, 30),
                                    (0, 20)]
    assert windows(15, 20, 10) == [(0, 15)]  # shorter than a window: one window (RankGPT's loop would skip it)
    assert windows(25, 20, 10) == [(5, 25), (0, 15)]  # the end moves by the step; the last window starts at 0
    assert windows(0, 20, 10) == []


@pytest.mark.parametrize("answer,size,order,missing,repeated,unknown", [
    ("[2] > [3] > [1]", 3, [1, 2, 0], 0, 0, 0),
    ("[2] > [2] > [7] > [1]", 3, [1, 0, 2], 1, 1, 1),  # 3 missing: appended in its original place
    ("Passage 3 is the best, then passage 1.", 3, [2, 0, 1], 1, 0, 0),  # no brackets: bare numbers
    ("[ 4 ]>[1]>[0]", 4, [3, 0, 1, 2], 2, 0, 1),  # [0] is not an identifier
    ("I cannot rank these passages.", 3, [0, 1, 2], 3, 0, 0),
    ("", 2, [0, 1], 2, 0, 0),
])
def test_malformed_permutations_are_completed_and_counted(answer, size, order, missing, repeated, unknown):
    permutation = parse_permutation(answer, size)
    assert (permutation.order, permutation.missing, permutation.repeated, permutation.unknown) == \
        (order, missing, repeated, unknown)
    assert sorted(permutation.order) == list(range(size))
    assert permutation.malformed == bool(missing or repeated or unknown)


# -- listwise through the fake server --------------------------------------------------------------------------------
_PASSAGE = re.compile(r"^\[(\d+)\] value (\d+)", re.MULTILINE)


def value_ranker(call) -> str:
    """Answers like a perfect ranker by each passage's "value N"; windows holding value 0 get a malformed answer."""
    passages = [(int(i), int(v)) for i, v in _PASSAGE.findall(call.body["messages"][-1]["content"])]
    if any(v == 0 for _, v in passages):
        return "[1] > [1] > [42] and the rest"
    return " > ".join(f"[{i}]" for i, _ in sorted(passages, key=lambda p: -p[1]))


def candidates(values: list[int]) -> list[Doc]:
    return [Doc(f"d{i}", f"value {v} text about things", "") for i, v in enumerate(values)]


def test_listwise_through_the_fake_server(fake_llm_factory, beirx_home):
    server = fake_llm_factory(responder=value_ranker)
    reranker = LLMListwiseReranker("fake-llm", base_url=server.url, window=4, step=2, price_input=2.0,
                                   price_output=10.0, show_progress=False)
    assert RERANKERS.get("llm-listwise") is LLMListwiseReranker and not reranker.model_is_local(
        {"base_url": server.url})
    good = candidates([3, 1, 4, 9, 5, 2, 6, 8, 7, 10])  # first-stage order d0..d9
    bad = candidates([5, 0, 6, 7])  # its one window holds value 0: the answer is malformed
    queries = {"good": Query("good", "find high values"), "bad": Query("bad", "anything")}
    corpus = {f"{q}-{d.id}": d for q, docs in (("good", good), ("bad", bad)) for d in docs}
    corpus = {k: Doc(k, d.text) for k, d in corpus.items()}
    first = {q: {f"{q}-d{i}": 100.0 - i for i in range(n)} for q, n in (("good", 10), ("bad", 4))}
    run = reranker.rerank(queries, corpus, first, depth=10)

    order = [d for d, _ in sorted(run["good"].items(), key=lambda x: -x[1])]
    # windows [6,10) [4,8) [2,6) [0,4), each sorted by value: the two best climb to the top
    assert order[:2] == ["good-d9", "good-d3"] and sorted(run["good"].values()) == list(range(1, 11))
    assert sorted(run["bad"], key=lambda d: -run["bad"][d]) == ["bad-d0", "bad-d1", "bad-d2", "bad-d3"]
    assert len(server.calls) == 4 + 1
    request = server.calls[0].body
    assert request["messages"][0]["role"] == "system" and request["temperature"] == 0
    assert "4 passages in English" in request["messages"][1]["content"]
    assert request["messages"][1]["content"].count("\n[") == 4

    usage = reranker.describe()["usage"]
    assert (usage["windows"], usage["malformed_windows"], usage["repeated_ids"], usage["unknown_ids"],
            usage["missing_ids"]) == (5, 1, 1, 1, 3)
    prompt_tokens = sum(c_usage(c)[0] for c in server.calls)
    completion_tokens = sum(c_usage(c)[1] for c in server.calls)
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["requests"]) == \
        (prompt_tokens, completion_tokens, 5)
    assert usage["cost_usd"] == pytest.approx((2.0 * prompt_tokens + 10.0 * completion_tokens) / 1e6)
    assert usage["llm_seconds"] > 0 and usage["queries_ranked"] == 2

    again = LLMListwiseReranker("fake-llm", base_url=server.url, window=4, step=2, show_progress=False)
    assert again.rerank(queries, corpus, first, depth=10) == run and len(server.calls) == 5  # all from the cache
    assert again.describe()["usage"]["queries_from_cache"] == 2
    with pytest.raises(BeirxError, match="window step must be between 1 and the window"):
        LLMListwiseReranker("fake-llm", base_url=server.url, window=4, step=5)


def c_usage(call) -> tuple[int, int]:
    from fake_openai import approx_tokens

    prompt = "\n".join(m["content"] for m in call.body["messages"])
    return approx_tokens(prompt), approx_tokens(value_ranker(call))


def test_listwise_cli_with_a_server_and_with_a_local_model(fake_llm_factory, tiny_causal_lm, tiny_dataset, tmp_path):
    server = fake_llm_factory(responder=lambda call: "[2] > [1]")
    out = tmp_path / "out"
    assert main(["eval", "--dataset", str(tiny_dataset), "--retriever", "bm25", "--reranker", "llm-listwise",
                 "--reranker-model", "served-name", "--llm-base-url", server.url, "--llm-window", "2",
                 "--llm-step", "1", "--rerank-depth", "3", "--output", str(out), "--no-progress"]) == 0
    [results] = [json.loads(p.read_text()) for p in out.glob("*llm-listwise*.json")]
    description = results["system"]["description"]["reranker"]
    assert description["backend"] == "openai" and description["model"] == "served-name"
    assert description["usage"]["windows"] == len(server.calls) > 0 and "api_key" not in json.dumps(description)

    local = LLMListwiseReranker(str(tiny_causal_lm), window=3, step=2, batch_size=2, max_tokens=12,
                                show_progress=False, use_cache=False)
    dataset = BeirDataset(tiny_dataset)
    queries = {q: dataset.queries[q] for q in ("q1", "q2")}
    first = {q: {d: 1.0 for d in dataset.corpus} for q in queries}
    run = local.rerank(queries, dataset.corpus, first, depth=5)
    usage = local.describe()["usage"]
    assert usage["windows"] == 2 * len(queries) and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    for qid in queries:  # random weights: whatever it answered, each query keeps its 5 candidates, scored 5..1
        assert sorted(run[qid].values()) == [1.0, 2.0, 3.0, 4.0, 5.0] and set(run[qid]) == set(dataset.corpus)
    assert local.describe()["backend"] == "transformers"


def test_listwise_with_llama_cpp_gemma(llama_server, scifact_slice, beirx_home):
    """Gemma 3 270M is a small base model: its answers are often malformed, and the rerank must still finish."""
    from beirx.data.doc_store import DocStore
    from beirx.evaluate.retrievers.bm25 import BM25Retriever
    from beirx.language_packs import get_pack

    queries, qrels = scifact_slice.queries_for_split("test")
    queries = {q: queries[q] for q in sorted(qrels, key=int)[:1]}
    bm25 = BM25Retriever(get_pack("en"), show_progress=False)
    bm25.index(scifact_slice)
    first = bm25.search(queries, k=10)
    reranker = LLMListwiseReranker(llama_server.model, base_url=llama_server.url, window=5, step=5,
                                   passage_words=30, max_tokens=40, concurrency=1, show_progress=False)
    with DocStore.for_dataset(scifact_slice) as corpus:
        run = reranker.rerank(queries, corpus, first, depth=10)
    usage = reranker.describe()["usage"]
    assert usage["windows"] == 2 and usage["requests"] == 2
    assert usage["prompt_tokens"] > 2 * 100 and usage["completion_tokens"] > 0 and usage["llm_seconds"] > 0
    assert usage["malformed_windows"] <= usage["windows"]
    for qid in queries:
        assert set(run[qid]) == set(first[qid]) and sorted(run[qid].values()) == [float(i) for i in range(1, 11)]


def test_pointwise_yes_no_with_llama_cpp_gemma(llama_server, scifact_slice, beirx_home):
    """The label log-probabilities from a real llama.cpp server: log P(yes) and log P(yes) - log(P(yes) + P(no))
    are log-probabilities (<= 0), and the normalised one is never below the raw one."""
    from beirx.data.doc_store import DocStore
    from beirx.evaluate.retrievers.bm25 import BM25Retriever
    from beirx.language_packs import get_pack

    queries, qrels = scifact_slice.queries_for_split("test")
    queries = {q: queries[q] for q in sorted(qrels, key=int)[:1]}
    bm25 = BM25Retriever(get_pack("en"), show_progress=False)
    bm25.index(scifact_slice)
    first = bm25.search(queries, k=3)
    runs = {}
    for score in ("yes", "yes-no"):
        reranker = LLMPointwiseReranker(llama_server.model, base_url=llama_server.url, max_length=256, batch_size=1,
                                        concurrency=1, score=score, show_progress=False, use_cache=False)
        with DocStore.for_dataset(scifact_slice) as corpus:
            runs[score] = reranker.rerank(queries, corpus, first, depth=3)
        assert reranker.describe()["score"] == score
    for qid in queries:
        assert set(runs["yes"][qid]) == set(first[qid]) == set(runs["yes-no"][qid])
        for did, raw in runs["yes"][qid].items():
            assert raw <= 0 and raw <= runs["yes-no"][qid][did] <= 0
