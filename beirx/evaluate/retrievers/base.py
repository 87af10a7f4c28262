"""The retriever interface: index a dataset's corpus once, then search a batch of queries."""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.evaluate.runs import Run


class Retriever(ABC):
    """First-stage retrieval. Subclasses are registered by name in :mod:`beirx.evaluate.retrievers`."""

    name: ClassVar[str]

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Everything that determines the scores (name, model and revision, parameters) for results files."""

    @abstractmethod
    def index(self, dataset: BeirDataset) -> None:
        """Prepare ``dataset``'s corpus (build or load a cached index)."""

    @abstractmethod
    def search(self, queries: dict[str, Query], k: int) -> Run:
        """Top ``k`` documents per query; queries that match nothing get an empty dict."""


def cache_key(*parts: Any) -> str:
    """A short stable hash of JSON-able parts, used to name on-disk caches."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
