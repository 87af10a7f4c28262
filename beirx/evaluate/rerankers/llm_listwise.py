"""Listwise LLM reranking with RankGPT's sliding window (Sun et al., 2023, "Is ChatGPT Good at Search?
Investigating Large Language Models as Re-Ranking Agents").

An LLM reads a *window* of ``window`` passages (default 20) and answers with their order (``[3] > [1] > ...``).
The window slides from the bottom of the candidate list to the top by ``step`` (default 10): ranks
``n-20..n``, then ``n-30..n-10``, ..., then ``0..20``, each window re-ordered in place, so a relevant
passage can climb from the bottom to the top in one pass. A list shorter than the window is one window.
Answers are read by :mod:`beirx.evaluate.rerankers.permutation`: missing, repeated and unknown identifiers
never break a window (missing ones keep their original order) and are counted. A window the server refuses
(e.g. HTTP 400, over its context) keeps its input order and is counted (``refused_windows``); any other
failure (the server down, a bad key) stops the rerank, keeping the chunks of queries already cached.

Where the LLM runs (:mod:`.llm_common`): a server (``base_url``, ``model`` its served name) or a causal LM in
this process (greedy, its chat template), through the same code; usage, cost and ``max_cost`` metered alike.

Windows of different queries are independent: the k-th window of every query in a chunk of queries is
sent together (concurrently to a server, in batches of ``batch_size`` to a local model). Final scores are
``n - rank`` (n candidates), so the run keeps the LLM's order. They are cached per (query, candidate list,
document): a killed run keeps every finished chunk of queries, a rerun sends nothing. Passages are cut to
``max_passage_words`` words (RankGPT cuts them too, so 20 fit one context). Token usage, cost, the
permutation counts and the time spent waiting for the LLM are the ``usage`` of :meth:`describe`.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

from beirx.argtypes import non_negative_float, positive_float, positive_int
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.evaluate.rerankers.base import Reranker, common_options
from beirx.evaluate.rerankers.llm_common import LLM_OPTIONS, LLMReranker
from beirx.evaluate.rerankers.permutation import PermutationStats, parse_permutation
from beirx.models.llm import LLM, LLMRequestError, Prices, Request, UsageMeter
from beirx.options import Option
from beirx.progress import progress

log = logging.getLogger(__name__)


def windows(size: int, window: int, step: int) -> list[tuple[int, int]]:
    """RankGPT's windows ``[start, end)`` over ``size`` candidates, bottom first."""
    spans = []
    for end in range(size, 0, -step):
        spans.append((max(0, end - window), end))
        if end <= window:  # this window reaches the top
            break
    return spans


@dataclass
class _Ranking:
    """One query's candidates being re-ordered window by window."""

    query: Query
    docs: list[Doc]
    spans: list[tuple[int, int]]
    order: list[int]  # positions into ``docs``, best first


class LLMListwiseReranker(LLMReranker, Reranker):
    name = "llm-listwise"
    not_score_defining = (*Reranker.not_score_defining, "usage")
    OPTIONS = (*common_options(batch_size=4)[:2],  # no length limit: passages are cut by words
               Option("max_tokens", positive_int, flag=""), Option("timeout", positive_float, default=300.0, flag=""),
               Option("chunk_queries", positive_int, default=32, flag=""),
               Option("window", positive_int, default=20, flag="--llm-window", help="passages per window"),
               Option("step", positive_int, default=10, flag="--llm-step", help="window step"),
               Option("passage_words", positive_int, default=100, flag="--llm-passage-words",
                      help="words kept of each passage"),
               Option("concurrency", positive_int, default=8, flag="--llm-concurrency",
                      help="requests in flight to the server"),
               Option("price_input", non_negative_float, default=0.0, flag="--llm-price-input",
                      help="USD per million prompt tokens, for the cost reported"),
               Option("price_output", non_negative_float, default=0.0, flag="--llm-price-output",
                      help="USD per million generated tokens"),
               Option("max_cost", non_negative_float, flag="--llm-max-cost",
                      help="stop before the reported cost could exceed this many USD"),
               *LLM_OPTIONS)

    def __init__(self, model: str, *, lang: str = "en", base_url: str | None = None, backend: str | None = None,
                 window: int = 20, step: int = 10, passage_words: int = 100, max_tokens: int | None = None,
                 concurrency: int = 8, timeout: float = 300.0, price_input: float = 0.0, price_output: float = 0.0,
                 max_cost: float | None = None, prompt_file: str | None = None, batch_size: int = 4,
                 device: str | None = None, revision: str | None = None, chunk_queries: int = 32,
                 show_progress: bool = True, use_cache: bool = True, llm: LLM | None = None):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        if not 1 <= step <= window:
            raise BeirxError(f"the window step must be between 1 and the window ({window}), got {step}")
        self.window, self.step, self.passage_words = int(window), int(step), int(passage_words)
        self.max_tokens = int(max_tokens or 8 * self.window + 16)  # "[12] > " is about 5 tokens
        self.prices, self.max_cost = Prices(float(price_input), float(price_output)), max_cost
        self.chunk_queries = int(chunk_queries)
        self._connect(model, llm, prompt_file, backend=backend, base_url=base_url, concurrency=concurrency,
                      timeout=timeout, device=device, batch_size=batch_size, revision=revision)
        if self.llm.backend == "transformers":
            self.llm.loaded()  # load now: a bad model folder fails before any work
        self.last_usage: dict[str, Any] | None = None

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.name, **self.llm.describe(), **self.prompts.describe(), "language": self.language.code,
                "method": "RankGPT sliding window (bottom to top)", "window": self.window, "step": self.step,
                "passage_words": self.passage_words, "max_tokens": self.max_tokens, "temperature": 0.0,
                "score": "n - rank after the final window", "usage": self.last_usage}

    # -- prompts -------------------------------------------------------------------------------
    def request(self, query: Query, docs: list[Doc]) -> Request:
        """The chat request ranking ``docs`` (one window) for ``query``."""
        passages = "\n".join(self.prompts.fill("listwise", "passage", id=i + 1,
                                                text=" ".join(d.joined().split()[:self.passage_words]))
                             for i, d in enumerate(docs))
        user = self.prompts.fill("listwise", "user", query=query.text, num=len(docs), passages=passages,
                                 language=self.language.name)
        messages = [{"role": "system", "content": self.prompts.get("listwise", "system")},
                    {"role": "user", "content": user}]
        return Request.chat(messages, max_tokens=self.max_tokens)

    # -- ranking -------------------------------------------------------------------------------
    def score_lists(self, queries: dict[str, Query], lists: dict[str, list[Doc]]) -> dict[str, list[float]]:
        """Scores for each query's candidate list: from the cache, else ranked by the LLM chunk by chunk."""
        cache = self._cache
        keys = {qid: _list_keys(queries[qid], docs) for qid, docs in lists.items()}
        run: dict[str, list[float]] = {}
        todo = []
        for qid, docs in lists.items():
            known = cache.get_many(keys[qid]) if cache is not None and docs else {}
            if len(known) == len(docs):
                run[qid] = [known[k] for k in keys[qid]]
            else:
                todo.append(qid)
        stats, meter, waited = PermutationStats(), UsageMeter(self.prices, self.max_cost), 0.0
        self.llm.meter = meter  # this call's usage and spending cap
        try:
            with progress(total=sum(len(lists[q]) for q in todo), desc=f"rerank {self.name}", unit="pair",
                          enabled=self.show_progress) as bar:
                for start in range(0, len(todo), self.chunk_queries):
                    chunk = [_Ranking(queries[q], lists[q], windows(len(lists[q]), self.window, self.step),
                                      list(range(len(lists[q])))) for q in todo[start:start + self.chunk_queries]]
                    waited += self._run_windows(chunk, stats)
                    scores = {}
                    for ranking in chunk:
                        n, qid = len(ranking.docs), ranking.query.id
                        run[qid] = [float(n - ranking.order.index(i)) for i in range(n)]  # n - its rank
                        scores.update(zip(keys[qid], run[qid]))
                        bar.update(n)
                    if cache is not None:
                        cache.put_many(scores)  # one transaction per chunk: a killed run keeps finished chunks
        finally:
            self.llm.close()
        self.last_usage = {**asdict(stats), **meter.snapshot(), "llm_seconds": round(waited, 3),
                           "queries_ranked": len(todo), "queries_from_cache": len(lists) - len(todo)}
        if todo:
            log.info("%s: %d windows for %d queries, %d malformed (%d missing, %d repeated, %d unknown IDs), "
                     "%d prompt + %d completion tokens, USD %.4f, %.1f s waiting for the LLM", self.name,
                     stats.windows, len(todo), stats.malformed_windows, stats.missing_ids, stats.repeated_ids,
                     stats.unknown_ids, meter.usage.prompt_tokens, meter.usage.completion_tokens, meter.spent, waited)
        return {qid: run[qid] for qid in lists}

    def _run_windows(self, chunk: list[_Ranking], stats: PermutationStats) -> float:
        """Apply every window of every query in ``chunk``; returns the seconds spent waiting for answers."""
        waited = 0.0
        for round_ in range(max((len(r.spans) for r in chunk), default=0)):
            active = [r for r in chunk if round_ < len(r.spans)]
            requests = []
            for ranking in active:
                start, end = ranking.spans[round_]
                requests.append(self.request(ranking.query, [ranking.docs[p] for p in ranking.order[start:end]]))
            began = time.perf_counter()
            replies = self.llm.call_many(requests, return_exceptions=True)
            waited += time.perf_counter() - began
            for error in (r for r in replies if isinstance(r, BaseException) and not _refused(r)):
                raise error  # the server down, timing out, answering nonsense: finished chunks are cached
            for ranking, reply in zip(active, replies):
                start, end = ranking.spans[round_]
                if isinstance(reply, BaseException):
                    log.warning("%s: a window of query %s keeps its order: %s", self.name, ranking.query.id, reply)
                    stats.refused_windows += 1
                    continue
                permutation = parse_permutation(reply.text, end - start)
                stats.add(permutation, truncated=reply.finish_reason == "length")
                window = ranking.order[start:end]
                ranking.order[start:end] = [window[p] for p in permutation.order]
        return waited


def _refused(error: BaseException) -> bool:
    """Whether the server refused this one window (e.g. 400: over its context), not every request and not for a
    transport reason: the window then keeps its input order."""
    return isinstance(error, LLMRequestError) and error.about_this_request


def _list_keys(query: Query, docs: list[Doc]) -> list[bytes]:
    """Cache keys of a query's candidates: a document's score depends on the whole list it was ranked in (and
    on its place there, so two documents with the same text keep two keys)."""
    from beirx.evaluate.rerankers.score_cache import pair_key

    digest = hashlib.blake2b(digest_size=16)
    for doc in docs:
        digest.update(pair_key(query, doc))
    prefix = digest.digest()
    return [hashlib.blake2b(prefix + i.to_bytes(4, "big"), digest_size=16).digest() for i in range(len(docs))]
