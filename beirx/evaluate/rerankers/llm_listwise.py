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

Where the LLM runs (:mod:`.llm_common`; the connection's options: :mod:`beirx.models.llm.connection`): a
server (``base_url``, ``model`` its served name) or a causal LM in this process (greedy, its chat template), through the same code; usage, cost and ``max_cost`` metered alike.

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
from dataclasses import asdict, dataclass, replace
from typing import Any

from beirx.argtypes import positive_int
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.evaluate.rerankers.base import Reranker
from beirx.evaluate.rerankers.llm_common import RERANKING, LLMReranker, shared_options
from beirx.evaluate.rerankers.permutation import PermutationStats, parse_permutation
from beirx.models.llm import LLM, LLMRequestError, Request, UsageMeter
from beirx.models.llm.connection import ConnectionSettings
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
    #: A window of 20 passages is a long prompt: the connection waits 300 s for progress by default.
    ROLE = replace(RERANKING, defaults={"timeout": 300.0})
    OPTIONS = (
        Option("window", positive_int, 20, "passages per window", flag="--llm-window", metavar="N"),
        Option("step", positive_int, 10, "window step", flag="--llm-step", metavar="N"),
        Option("passage_words", positive_int, 100, "words kept of each passage", flag="--llm-passage-words",
               metavar="N"),
        Option("max_tokens", positive_int, None, "answer length limit (default 8 x window + 16)", flag=""),
        Option("chunk_queries", positive_int, 32, "queries whose windows are sent together", flag=""),
        Option("batch_size", positive_int, 4, "requests generated together by a model in this process", flag=""),
        *shared_options(ROLE),
    )

    def __init__(self, model: str, *, lang: str = "en", base_url: str | None = None, backend: str | None = None,
                 window: int = 20, step: int = 10, passage_words: int = 100, max_tokens: int | None = None,
                 concurrency: int = 8, timeout: float = 300.0, deadline: float | None = None, attempts: int = 6,
                 backoff: float = 1.0, breaker_failures: int = 10, breaker_seconds: float = 30.0,
                 price_input: float = 0.0, price_output: float = 0.0,
                 max_cost: float | None = None, prompt_file: str | None = None, batch_size: int = 4,
                 device: str | None = None, revision: str | None = None, chunk_queries: int = 32,
                 show_progress: bool = True, use_cache: bool = True, llm: LLM | None = None):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        if not 1 <= step <= window:
            raise BeirxError(f"the window step must be between 1 and the window ({window}), got {step}")
        self.window, self.step, self.passage_words = int(window), int(step), int(passage_words)
        self.max_tokens = int(max_tokens or 8 * self.window + 16)  # "[12] > " is about 5 tokens
        connection = ConnectionSettings.read(
            {"backend": backend, "base_url": base_url, "concurrency": concurrency, "timeout": timeout,
             "deadline": deadline, "attempts": attempts, "backoff": backoff, "breaker_failures": breaker_failures,
             "breaker_seconds": breaker_seconds, "price_input": price_input, "price_output": price_output,
             "max_cost": max_cost}, f"{self.name}: ", self.ROLE)
        self.prices, self.max_cost = connection.prices(), connection.max_cost
        self.chunk_queries = int(chunk_queries)
        self._connect(model, llm, prompt_file, connection, device=device, batch_size=batch_size, revision=revision)
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
        # this call's usage and spending cap, passed with each request
        stats, meter, waited = PermutationStats(), UsageMeter(self.prices, self.max_cost), 0.0
        try:
            with progress(total=sum(len(lists[q]) for q in todo), desc=f"rerank {self.name}", unit="pair",
                          enabled=self.show_progress) as bar:
                for start in range(0, len(todo), self.chunk_queries):
                    chunk = [_Ranking(queries[q], lists[q], windows(len(lists[q]), self.window, self.step),
                                      list(range(len(lists[q])))) for q in todo[start:start + self.chunk_queries]]
                    waited += self._run_windows(chunk, stats, meter)
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

    def _run_windows(self, chunk: list[_Ranking], stats: PermutationStats, meter: UsageMeter) -> float:
        """Apply every window of every query in ``chunk``; returns the seconds spent waiting for answers."""
        waited = 0.0
        for round_ in range(max((len(r.spans) for r in chunk), default=0)):
            active = [r for r in chunk if round_ < len(r.spans)]
            requests = []
            for ranking in active:
                start, end = ranking.spans[round_]
                requests.append(self.request(ranking.query, [ranking.docs[p] for p in ranking.order[start:end]]))
            began = time.perf_counter()
            replies = self.llm.call_many(requests, return_exceptions=True, meter=meter)
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
