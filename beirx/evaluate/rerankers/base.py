"""The reranker interface: rescore the first-stage candidates of each query."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from beirx.data.records import Doc, Query
from beirx.evaluate.runs import Run, ranked


class Reranker(ABC):
    """Scores (query, document) pairs; :meth:`rerank` reorders only the given candidates, never adds any."""

    name: ClassVar[str]

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Model, revision and scoring parameters, for results files and cache keys."""

    @abstractmethod
    def score(self, query: Query, docs: list[Doc]) -> list[float]:
        """One relevance score per document, in the given order."""

    def rerank(self, queries: dict[str, Query], corpus: dict[str, Doc], first_stage: Run, depth: int = 100) -> Run:
        """Rescore each query's top ``depth`` first-stage documents (evaluation order); the rest are dropped."""
        run: Run = {}
        for qid, query in queries.items():
            candidates = [did for did, _ in ranked(first_stage.get(qid, {}))[:depth]]
            scores = self.score(query, [corpus[did] for did in candidates]) if candidates else []
            run[qid] = dict(zip(candidates, map(float, scores)))
        return run
