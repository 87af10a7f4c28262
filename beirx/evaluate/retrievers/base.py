"""The retriever interface: index a dataset's corpus once, then search a batch of queries.

A retriever also declares its options once (:attr:`Retriever.OPTIONS`: :class:`beirx.options.Option` records),
from which ``beirx eval``'s flags and the reading of a system's spelling or a grid file are generated, so adding a
retriever is one module plus one registry line; and it reports what the runner records as efficiency (index location,
device, whether the index came from the cache, corpus encoding time).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.evaluate.runs import Run
from beirx.options import Option, defaults


class Retriever(ABC):
    """First-stage retrieval. Subclasses are registered by name in :mod:`beirx.evaluate.retrievers`."""

    name: ClassVar[str]
    #: The :mod:`beirx.models.checks` kind of its ``model`` folder, checked before any work (None: no model folder).
    model_kind: ClassVar[str | None] = None
    #: Its options, declared once: each names a constructor parameter, its type or choices, its default (the
    #: constructor's) and its flag; ``beirx eval``'s flags (:mod:`beirx.cli.flags`), a system's spelling and a grid
    #: file (:func:`beirx.evaluate.params.checked_params`) are read by them. Options several retrievers share
    #: (``--model``, ``--device``) are one flag.
    OPTIONS: ClassVar[tuple[Option, ...]] = ()
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
    def flag_options(cls) -> tuple[Option, ...]:
        """The options whose flags :meth:`flag_params` reads: :attr:`OPTIONS` (a retriever that also reads
        another's flags, as Elasticsearch reads BM25's preset, adds them)."""
        return cls.OPTIONS

    @classmethod
    def flag_params(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """Constructor parameters from the options given as flags (by name, as :func:`beirx.cli.flags.given`
        returns them); a value equal to its default is left out, so it stays out of tags and file names."""
        declared = defaults(cls.OPTIONS)
        return {key: value for key, value in given.items() if key not in declared or value != declared[key]}

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Everything that determines the scores (name, model and revision, parameters) for results files."""

    @abstractmethod
    def index(self, dataset: BeirDataset) -> None:
        """Prepare ``dataset``'s corpus (build or load a cached index)."""

    @abstractmethod
    def search(self, queries: dict[str, Query], k: int) -> Run:
        """Top ``k`` documents per query; queries that match nothing get an empty dict."""
