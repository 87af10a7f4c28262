#!/usr/bin/env python
"""LLM rerankers' plumbing on real SciFact queries: windows, malformed permutations, tokens, cost, latency.

Usage: python benchmarks/llm_rerank_plumbing.py [--queries 20] [--depth 20] [--window 20 --step 10]
                                                [--gemma-url http://127.0.0.1:8080/v1] [--pointwise]

BM25 retrieves each of the first ``--queries`` SciFact test queries' top ``--depth`` documents; then
``llm-listwise`` reranks them

1. through the fake OpenAI-compatible server of the tests (tests/fake_openai.py, real HTTP on 127.0.0.1),
   answering as a toy LLM would: passages ranked by words shared with the query, and, for a seeded
   ``--malformed`` share of windows, a broken answer (an identifier dropped, one repeated, an unknown one, or
   prose without brackets);
2. with ``--gemma-url``: a running llama.cpp server (``python -m llama_cpp.server --model gemma.gguf
   --model_alias gemma --chat_format gemma --n_ctx 4096 ...``) with Gemma 3 270M, passages cut to
   ``--gemma-words`` words so a window fits its context.

Printed per run: windows, malformed windows and their missing/repeated/unknown identifiers, answers cut by
``max_tokens``, prompt and completion tokens, cost at the given prices, seconds waiting for the LLM per
window, and nDCG@10 before and after. With ``--pointwise``: ``llm-pointwise`` with a tiny random-weight
causal LM (tests/tiny_models.py) on the same pairs, pairs per CPU second (plumbing only: its scores are noise).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import REPO, SCIFACT  # noqa: E402

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
_WORD = re.compile(r"\w+")


def toy_ranker(malformed: float, seed: int):
    """A fake LLM: ranks passages by words shared with the query; a seeded share of answers is broken."""
    def answer(call) -> str:
        content = call.body["messages"][-1]["content"]
        query = set(_WORD.findall(content.rsplit("Search query:", 1)[-1].split("\n")[0].lower()))
        passages = [(int(i), len(query & set(_WORD.findall(text.lower())))) for i, text in _PASSAGE.findall(content)]
        ranked = [i for i, _ in sorted(passages, key=lambda p: -p[1])]
        rng = random.Random(f"{seed}:{call.n}")
        if rng.random() < malformed:
            kind = rng.choice(["drop", "repeat", "unknown", "prose"])
            if kind == "drop":
                ranked = ranked[:-1]
            elif kind == "repeat":
                ranked = ranked[:2] + ranked[:1] + ranked[2:]
            elif kind == "unknown":
                ranked = ranked + [len(ranked) + 7]
            else:
                return "The most relevant passage is " + " then ".join(str(i) for i in ranked[:3]) + "."
        return " > ".join(f"[{i}]" for i in ranked)

    return answer


def report(name: str, reranker, before: float, after: float) -> None:
    usage = reranker.describe()["usage"]
    windows = usage["windows"] or 1
    print(f"\n{name}")
    print(f"  windows {usage['windows']}, malformed {usage['malformed_windows']} "
          f"(missing IDs {usage['missing_ids']}, repeated {usage['repeated_ids']}, unknown {usage['unknown_ids']}), "
          f"answers cut by max_tokens {usage['truncated_answers']}")
    print(f"  tokens: {usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion "
          f"({usage['prompt_tokens'] / windows:.0f} + {usage['completion_tokens'] / windows:.0f} per window); "
          f"cost USD {usage['cost_usd']:.6f} at {usage['usd_per_million_input_tokens']}/"
          f"{usage['usd_per_million_output_tokens']} per million")
    print(f"  waiting for the LLM: {usage['llm_seconds']:.1f} s, {usage['llm_seconds'] / windows:.2f} s per window; "
          f"nDCG@10 {before:.4f} (BM25) -> {after:.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--step", type=int, default=10)
    parser.add_argument("--malformed", type=float, default=0.3, help="share of broken fake answers (default 0.3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--price-input", type=float, default=0.15, help="USD per million prompt tokens")
    parser.add_argument("--price-output", type=float, default=0.60, help="USD per million completion tokens")
    parser.add_argument("--gemma-url", default=None, help="base URL of a running llama.cpp server (model 'gemma')")
    parser.add_argument("--gemma-model", default="gemma")
    parser.add_argument("--gemma-queries", type=int, default=5)
    parser.add_argument("--gemma-window", type=int, default=10)
    parser.add_argument("--gemma-step", type=int, default=5)
    parser.add_argument("--gemma-words", type=int, default=40)
    parser.add_argument("--pointwise", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    os.environ["BEIRX_HOME"] = tempfile.mkdtemp(prefix="beirx-llm-rerank-")

    from beirx.data.dataset import BeirDataset
    from beirx.data.doc_store import DocStore
    from beirx.evaluate.metrics import evaluate
    from beirx.evaluate.rerankers.llm_listwise import LLMListwiseReranker
    from beirx.evaluate.retrievers.bm25 import BM25Retriever
    from beirx.language_packs import get_pack
    from fake_openai import FakeOpenAI

    dataset = BeirDataset(args.dataset)
    queries, qrels = dataset.queries_for_split("test")
    chosen = sorted(qrels, key=int)[:args.queries]
    queries = {q: queries[q] for q in chosen}
    qrels = {q: qrels[q] for q in chosen}
    bm25 = BM25Retriever(get_pack("en"), show_progress=False)
    bm25.index(dataset)
    first = bm25.search(queries, k=args.depth)
    ndcg = lambda run, subset=qrels: evaluate(subset, {q: run[q] for q in subset}).metrics["NDCG@10"]  # noqa: E731
    print(f"{dataset.root}: {len(queries)} test queries, BM25 top {args.depth}")

    with DocStore.for_dataset(dataset) as corpus, FakeOpenAI(responder=toy_ranker(args.malformed, args.seed)) as fake:
        reranker = LLMListwiseReranker("fake-llm", base_url=fake.url, window=args.window, step=args.step,
                                       price_input=args.price_input, price_output=args.price_output,
                                       show_progress=False, use_cache=False)
        run = reranker.rerank(queries, corpus, first, depth=args.depth)
        report(f"llm-listwise, fake server (toy ranker, {args.malformed:.0%} broken answers), window {args.window} "
               f"step {args.step}", reranker, ndcg(first), ndcg(run))

        if args.gemma_url:
            subset = {q: queries[q] for q in chosen[:args.gemma_queries]}
            gemma = LLMListwiseReranker(args.gemma_model, base_url=args.gemma_url, window=args.gemma_window,
                                        step=args.gemma_step, passage_words=args.gemma_words, concurrency=1,
                                        show_progress=False, use_cache=False)
            run = gemma.rerank(subset, corpus, first, depth=args.depth)
            report(f"llm-listwise, llama.cpp Gemma 3 270M, {len(subset)} queries, window {args.gemma_window} step "
                   f"{args.gemma_step}, {args.gemma_words} words per passage", gemma,
                   ndcg(first, {q: qrels[q] for q in subset}), ndcg(run, {q: qrels[q] for q in subset}))

        if args.pointwise:
            from beirx.evaluate.rerankers.llm_pointwise import LLMPointwiseReranker
            from tiny_models import build_tiny_causal_lm

            folder = build_tiny_causal_lm(Path(os.environ["BEIRX_HOME"]), [d.joined() for _, d in
                                                                          zip(range(200), dataset.iter_corpus())])
            pointwise = LLMPointwiseReranker(str(folder), max_length=512, show_progress=False, use_cache=False)
            start = time.process_time()
            pointwise.rerank(queries, corpus, first, depth=args.depth)
            seconds = time.process_time() - start
            pairs = sum(min(args.depth, len(first[q])) for q in queries)
            print(f"\nllm-pointwise, tiny random causal LM: {pairs} pairs in {seconds:.1f} CPU s "
                  f"({pairs / seconds:.1f} pairs per CPU second), "
                  f"{pointwise.truncated['document']} documents cut to 512 tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
