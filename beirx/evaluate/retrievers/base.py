"""The retriever interface: index a dataset's corpus once, then search a batch of queries.

A retriever also declares its own command-line flags (:meth:`Retriever.add_arguments`) and turns parsed
flags into its constructor parameters (:meth:`Retriever.params_from_args`), so adding a retriever is one
module plus one registry line; and it reports what the runner records as efficiency (index location,
device, whether the index came from the cache, corpus encoding time).
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.evaluate.runs import Run


class Retriever(ABC):
    """First-stage retrieval. Subclasses are registered by name in :mod:`beirx.evaluate.retrievers`."""

    name: ClassVar[str]
    #: The :mod:`beirx.models.checks` kind of its ``model`` folder, checked before any work (None: no model folder).
    model_kind: ClassVar[str | None] = None
    #: Constructor parameter -> its argparse type (:mod:`beirx.argtypes`) or a tuple of choices: how its flag, a
    #: system's spelling and a grid file read it (:func:`beirx.evaluate.params.checked_params`). Declared once:
    #: the flags take their types from here.
    PARAMS: ClassVar[dict[str, Any]] = {}
    #: Constructor parameters beirx sets itself, never a system's spelling.
    INTERNAL: ClassVar[tuple[str, ...]] = ("pack", "use_cache", "show_progress")
    loaded_from_cache: bool = False
    """True when :meth:`index` loaded a cached index instead of building one."""
    encode_seconds: float | None = None
    """Seconds spent encoding the corpus in :meth:`index` (neural retrievers), None when nothing was encoded."""
    index_location: Path | None = None
    """The index (or embeddings) on disk after :meth:`index`, for its size; None for remote or in-memory ones."""
    device_name: str = "cpu"
    """Where the search runs (``cpu``, ``cuda:0``, ``remote`` ...)."""
    corpus_statistics: ClassVar[bool] = True
    """Whether a document's score depends on the rest of the corpus (BM25's IDF and average length). False when
    it is a function of the query and the document alone (dense, SPLADE): the run on any part of the corpus is
    then the full run restricted to that part, which pooled subsets use instead of encoding again."""

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """Add this retriever's ``beirx eval`` flags to ``group`` (none by default)."""

    @classmethod
    def param_types(cls) -> dict[str, Any]:
        """:attr:`PARAMS`."""
        return dict(cls.PARAMS)

    @classmethod
    def params_from_args(cls, args: argparse.Namespace) -> dict[str, Any]:
        """Constructor parameters from parsed flags; leave out what is at its default (it stays out of tags)."""
        return {}

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Everything that determines the scores (name, model and revision, parameters) for results files."""

    @abstractmethod
    def index(self, dataset: BeirDataset) -> None:
        """Prepare ``dataset``'s corpus (build or load a cached index)."""

    @abstractmethod
    def search(self, queries: dict[str, Query], k: int) -> Run:
        """Top ``k`` documents per query; queries that match nothing get an empty dict."""
