"""A BEIR folder on disk: lazy access to corpus, queries and qrels, plus a content checksum.

The checksum (SHA-256 over every data file's relative path and bytes) identifies the exact data a
result was computed on; it keys on-disk caches (indexes, embeddings, runs) and is written into every
results file and translation manifest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

from beirx.artifacts.manifest import TranslationManifest
from beirx.artifacts.subset import SubsetManifest
from beirx.checksums import files_checksum
from beirx.data import beir_io
from beirx.data.records import Doc, Qrels, Query
from beirx.errors import DataError

log = logging.getLogger(__name__)

class BeirDataset:
    """A BEIR-layout folder. ``name`` and ``lang`` are labels used in results and cache keys.

    ``name`` defaults to the dataset family: the source's name recorded in ``translation.json`` for a beirx
    translation (``scifact`` for a folder ``scifact-pl``), the name in ``subset.json`` for a beirx subset
    (``scifact-subset``), else the folder's name.
    """

    def __init__(self, root: Path | str, name: str | None = None, lang: str = "en", source: str | None = None):
        self.root = Path(root)
        if not self.root.is_dir():
            raise DataError(self.root, "dataset folder not found")
        self.name = name or (self.translation.family if self.translation else
                             self.subset.name if self.subset else self.root.name)
        self.lang = lang
        self.source = source or str(self.root)

    def __repr__(self) -> str:
        return f"BeirDataset({str(self.root)!r}, name={self.name!r}, lang={self.lang!r})"

    # -- files -------------------------------------------------------------------------------
    @property
    def corpus_path(self) -> Path:
        path = beir_io.find_file(self.root, "corpus")
        if path is None:
            raise DataError(self.root / "corpus.jsonl", "corpus file not found (corpus.jsonl or corpus.jsonl.gz)")
        return path

    @property
    def queries_path(self) -> Path:
        path = beir_io.find_file(self.root, "queries")
        if path is None:
            raise DataError(self.root / "queries.jsonl", "queries file not found (queries.jsonl or queries.jsonl.gz)")
        return path

    def qrels_path(self, split: str) -> Path:
        from beirx.paths import check_segment, confined

        path = confined(self.root / "qrels", f"{check_segment(split, 'split')}.tsv")
        if not path.is_file():
            have = ", ".join(self.splits()) or "none"
            raise DataError(path, f"no qrels for split {split!r} (available: {have})")
        return path

    def splits(self) -> list[str]:
        qdir = self.root / "qrels"
        return sorted(p.stem for p in qdir.glob("*.tsv")) if qdir.is_dir() else []

    def data_files(self) -> list[Path]:
        files = [self.corpus_path, self.queries_path]
        files += sorted((self.root / "qrels").glob("*.tsv")) if (self.root / "qrels").is_dir() else []
        return files

    # -- content -----------------------------------------------------------------------------
    def iter_corpus(self) -> Iterator[Doc]:
        return beir_io.iter_corpus(self.corpus_path)

    @cached_property
    def corpus(self) -> dict[str, Doc]:
        return {d.id: d for d in self.iter_corpus()}

    @cached_property
    def queries(self) -> dict[str, Query]:
        return {q.id: q for q in beir_io.iter_queries(self.queries_path)}

    def qrels(self, split: str) -> Qrels:
        return beir_io.read_qrels(self.qrels_path(split))

    def queries_for_split(self, split: str) -> tuple[dict[str, Query], Qrels]:
        """The queries judged in ``split`` and their qrels, as BEIR's loader selects them.

        Judged queries with no text are logged with a count (they cannot be run) rather than dropped silently.
        """
        qrels = self.qrels(split)
        queries = {qid: self.queries[qid] for qid in qrels if qid in self.queries}
        missing = [qid for qid in qrels if qid not in self.queries]
        if missing:
            log.warning("%s: %d judged queries have no text in %s (e.g. %s); they score 0",
                        self.name, len(missing), self.queries_path.name, missing[0])
        return queries, qrels

    # -- identity ----------------------------------------------------------------------------
    @cached_property
    def translation(self) -> TranslationManifest | None:
        """The ``translation.json`` beirx translate left here, or None (a malformed one raises DataError)."""
        return TranslationManifest.find(self.root)

    @cached_property
    def subset(self) -> SubsetManifest | None:
        """The ``subset.json`` beirx subset left here, or None (a malformed one raises DataError)."""
        return SubsetManifest.find(self.root)

    def checksum(self) -> str:
        """``sha256:<hex>`` over the data files (see :mod:`beirx.checksums`)."""
        return files_checksum(self.root, self.data_files())
