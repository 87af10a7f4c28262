"""``generation.json``: the manifest of a synthetic training split made by ``beirx generate-queries``.

A typed artifact (:class:`beirx.artifacts.base.Artifact`: validated on load, errors name the file and the
field, written atomically), the counterpart of a translation's ``translation.json``: the corpus the queries
were generated from (with its checksum), the generator (model, revision, sampling, seed), the split written,
the cache, counts, timings and versions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.artifacts.base import Artifact, fld, utc_now

SCHEMA = "beirx.generation/1"
FILENAME = "generation.json"


@dataclass(kw_only=True)
class SourceCorpus:
    """The dataset whose documents the queries were generated from."""

    path: str = fld("the source folder")
    name: str = fld("the dataset's (family) name")
    lang: str = fld("language of the corpus and of the generated queries, ISO 639-1")
    corpus_checksum: str = fld("'sha256:<hex>' of the corpus file")


@dataclass(kw_only=True)
class GeneratedSplit:
    """What was written: a BEIR folder whose qrels split pairs each generated query with its document."""

    path: str = fld("the folder written")
    split: str = fld("the qrels split (train)")
    query_ids: str = fld("how query IDs derive from document IDs")
    files: dict[str, str] = fld("relative path -> 'generated', 'linked' or 'copied'")


@dataclass(kw_only=True)
class GenerationManifest(Artifact):
    """``generation.json``: a synthetic training split's provenance."""

    SCHEMA = SCHEMA
    KIND = "query-generation manifest"

    schema_version: str = fld("format identifier", default=SCHEMA)
    kind: str = fld("always 'beirx generate-queries'", default="beirx generate-queries")
    source: SourceCorpus = fld("the corpus")
    output: GeneratedSplit = fld("the split written")
    generator: dict[str, Any] = fld("model, revision, queries per document, sampling parameters, seed")
    cache: dict[str, str] = fld("the SQLite cache ('path') and the generator's key in it ('generator')")
    counts: dict[str, int] = fld("documents, skipped (empty) documents, queries, from cache, generated")
    timings: dict[str, float] = fld("seconds per step and in total")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    created: str = fld("UTC time the manifest was written (ISO 8601)", default_factory=utc_now)

    @classmethod
    def path_in(cls, root: Path | str) -> Path:
        return Path(root) / FILENAME
