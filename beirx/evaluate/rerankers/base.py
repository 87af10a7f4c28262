"""The reranker interfaces: rescore the first-stage candidates of each query.

:class:`Reranker` takes each query's candidate *list* (a listwise LLM ranks a window of candidates at once);
:class:`PairwiseReranker` scores each (query, document) pair on its own and gathers the pairs of *all*
queries, so a subclass batches across queries (and by length, which is where the speed is). Pair scores go
through an on-disk pair cache (:mod:`beirx.evaluate.rerankers.score_cache`), committed chunk by chunk: a
killed rerank resumes where it stopped, and a rerun (another depth, another first stage, another metric)
recomputes only new pairs.
"""

from __future__ import annotations

import functools
import logging
import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from beirx.argtypes import positive_int
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.evaluate.defaults import RERANK_DEPTH
from beirx.evaluate.runs import Run, ranked
from beirx.options import Option, defaults
from beirx.progress import progress

log = logging.getLogger(__name__)

Pair = tuple[Query, Doc]


def common_options(batch_size: int | None = 32, max_length: int | None = None,
                   max_length_flag: str = "") -> tuple[Option, ...]:
    """The options most rerankers take, with that reranker's defaults: the device (``beirx eval --device``), the
    batch size and the length limit (a grid file's unless ``max_length_flag``)."""
    return (Option("device", help="cpu, cuda, cuda:1 ... (default: cuda when available)"),
            Option("batch_size", positive_int, default=batch_size, flag=""),
            Option("max_length", positive_int, default=max_length, flag=max_length_flag,
                   help="tokens per prompt; longer documents are cut" if max_length_flag else ""))


class Reranker(ABC):
    """Reorders each query's candidates (:meth:`rerank`), never adds any. Subclasses implement
    :meth:`describe` and :meth:`score_lists`."""

    name: ClassVar[str]
    #: The :mod:`beirx.models.checks` kind of its model folder, checked before any work (None: not checked there).
    model_kind: ClassVar[str | None] = None
    #: :meth:`describe` keys that do not change a score, so they stay out of the cache identity.
    not_score_defining: ClassVar[tuple[str, ...]] = ("batch_size", "sort_by_length", "device")

    #: Its options, declared once (:class:`beirx.options.Option`): each names a constructor parameter, its type or
    #: choices, its default (the constructor's) and its ``beirx eval`` flag (``flag=""``: none, a grid file sets
    #: it); the model, depth and device are common flags. The flags, a grid file and :meth:`flag_params` read
    #: them; an option several rerankers declare with one flag (the LLM connection's) is one flag, its help
    #: naming them all.
    OPTIONS: ClassVar[tuple[Option, ...]] = ()
    #: Constructor parameters beirx sets itself, never a grid file.
    INTERNAL: ClassVar[tuple[str, ...]] = ("lang", "show_progress", "use_cache", "llm")

    @classmethod
    def flag_params(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """Constructor parameters from the options given as flags (by name, as :func:`beirx.cli.flags.given`
        returns them); a value equal to its default is left out."""
        declared = defaults(cls.OPTIONS)
        return {key: value for key, value in given.items() if key not in declared or value != declared[key]}

    @classmethod
    def model_is_local(cls, params: dict[str, Any]) -> bool:
        """Whether the model is a folder or Hub id to check before any work (False: a server's model name)."""
        return True

    device: Any = None
    """The torch device the model runs on (set by subclasses)."""

    def not_finite_advice(self) -> str:
        """What to do about a score that is not a finite number, which no ranking can use: half precision can
        overflow (float32 cannot); a server's answers are its own (the LLM client names a broken one first)."""
        description = self.describe()
        dtype = str(description.get("dtype") or "")
        if dtype in ("float16", "bfloat16"):
            return f"a numerical overflow in {dtype}? rerun with dtype='float32'"
        if self.device_name is None and description.get("base_url"):
            return (f"the server {description['base_url']} (model {description.get('model')}) sent it: rerun to retry, "
                    "or use another server")
        return "the model's output is not a number (its weights?)"

    @property
    def device_name(self) -> str | None:
        return None if self.device is None else str(self.device)

    def __init__(self, *, lang: str = "en", show_progress: bool = True, use_cache: bool = True):
        self.lang = lang
        self.show_progress = show_progress
        self.use_cache = use_cache

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Model, revision and scoring parameters, for results files and cache keys."""

    @abstractmethod
    def score_lists(self, queries: dict[str, Query], lists: dict[str, list[Doc]]) -> dict[str, list[float]]:
        """One relevance score per document of each query's list, in the list's order."""

    def score(self, query: Query, docs: list[Doc]) -> list[float]:
        """One relevance score per document, in the given order."""
        return self.score_lists({query.id: query}, {query.id: docs})[query.id]

    def rerank(self, queries: dict[str, Query], corpus: Mapping[str, Doc], first_stage: Run,
               depth: int = RERANK_DEPTH) -> Run:
        """Rescore each query's top ``depth`` first-stage documents (evaluation order); the rest are dropped.

        Every query in ``queries`` gets an entry (empty when the first stage found nothing); document IDs
        are the first stage's own (all must be in ``corpus``), so reranking can only reorder a query's candidates.
        ``corpus`` is any mapping by ID: a dict, or a :class:`~beirx.data.doc_store.DocStore` reading
        documents from disk.
        """
        if depth < 1:
            raise BeirxError(f"rerank depth must be at least 1, got {depth}")
        candidates: dict[str, list[str]] = {}
        for qid in queries:
            candidates[qid] = [did for did, _ in ranked(first_stage.get(qid, {}))[:depth]]
            missing = [did for did in candidates[qid] if did not in corpus]
            if missing:
                raise BeirxError(f"the first-stage run ranks document {missing[0]!r} for query {qid!r}, but the "
                                 f"corpus has no such document ({len(missing)} missing for this query): was the "
                                 "run made on another dataset?")
        scores = self.score_lists(queries, {qid: [corpus[did] for did in dids] for qid, dids in candidates.items()})
        return {qid: dict(zip(dids, scores[qid])) for qid, dids in candidates.items()}

    def cache_identity(self) -> dict[str, Any]:
        """:meth:`describe` without the settings that cannot change a score (batch size, device...)."""
        return {k: v for k, v in self.describe().items() if k not in self.not_score_defining}

    @functools.cached_property
    def _cache(self):
        """The score cache of this configuration, opened on first use (None without ``use_cache``)."""
        from beirx.evaluate.rerankers.score_cache import PairScoreCache

        return PairScoreCache.for_reranker(self.name, self.cache_identity()) if self.use_cache else None


class PairwiseReranker(Reranker):
    """Scores (query, document) pairs one by one. Subclasses implement :meth:`describe` and
    :meth:`score_pairs`; caching, chunking, progress and the truncation report live here."""

    chunk_size: ClassVar[int] = 2048
    """Pairs scored (and committed to the cache) per step: bounds memory and the work a crash can lose."""

    @abstractmethod
    def score_pairs(self, pairs: list[Pair], progress: Callable[[int], None]) -> list[float]:
        """Uncached scores, one per pair in order; call ``progress(n)`` after each batch of ``n`` pairs, and count
        truncations in ``self.truncated`` (``self.truncated["document"] += 1``: logged after the call)."""

    def score_lists(self, queries: dict[str, Query], lists: dict[str, list[Doc]]) -> dict[str, list[float]]:
        scores = iter(self._scores([(queries[qid], doc) for qid, docs in lists.items() for doc in docs]))
        return {qid: [next(scores) for _ in docs] for qid, docs in lists.items()}

    # -- scoring with cache ----------------------------------------------------------------------
    def _scores(self, pairs: list[Pair]) -> list[float]:
        from beirx.evaluate.rerankers.score_cache import pair_key

        keys = [pair_key(query, doc) for query, doc in pairs]
        unique = dict(zip(keys, pairs))
        cache = self._cache
        known = cache.get_many(unique) if cache is not None else {}
        # Grouped by document so that a document's pairs share a chunk (ColBERT encodes it once).
        todo = sorted((k for k in unique if k not in known), key=lambda k: (unique[k][1].id, unique[k][0].id))
        if not todo:
            return [known[k] for k in keys]
        self.truncated: Counter[str] = Counter()
        with progress(total=len(todo), desc=f"rerank {self.name}", unit="pair", enabled=self.show_progress) as bar:
            for start in range(0, len(todo), self.chunk_size):
                chunk = todo[start:start + self.chunk_size]
                scores = [float(s) for s in self.score_pairs([unique[k] for k in chunk], bar.update)]
                if len(scores) != len(chunk):
                    raise RuntimeError(f"{type(self).__name__}.score_pairs returned {len(scores)} scores "
                                       f"for {len(chunk)} pairs")
                broken = next((s for s in scores if not math.isfinite(s)), None)
                if broken is not None:
                    raise BeirxError(f"{self.name} produced a score that is not a finite number ({broken}): "
                                     f"{self.not_finite_advice()}")
                chunk_scores = dict(zip(chunk, scores))
                if cache is not None:
                    cache.put_many(chunk_scores)
                known.update(chunk_scores)
        for what, count in sorted(self.truncated.items()):
            log.info("%s: %d of %d pairs had the %s truncated to fit the model's maximum length",
                     self.name, count, len(todo), what)
        log.info("%s: scored %d pairs (%d from cache)", self.name, len(todo), len(unique) - len(todo))
        return [known[k] for k in keys]
