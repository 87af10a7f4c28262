"""The translation manifest (``translation.json``, format 2): what ``beirx translate`` made and how.

It sits in a translated dataset's folder and names its source (family name, language, checksum), the
translator (backend, model, revision and options), the translation memory, the options, what was counted
and timed, and the versions. Readers (quality, publishing, the results document's family name) read its
fields. Format-1 manifests (no ``schema_version``, ``format: 1``) have the same fields and load as format 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.artifacts.base import Artifact, fld, optional, utc_now

SCHEMA = "beirx.translation/2"
FORMAT = 2
FILENAME = "translation.json"


@dataclass(kw_only=True)
class DatasetSide:
    """One side of a translation: a dataset folder, its name, language and content checksum."""

    path: str = fld("the folder")
    name: str = fld("the dataset's name (for a source: the family name results use)")
    lang: str = fld("language, ISO 639-1")
    checksum: str = fld("'sha256:<hex>' over the data files")


@dataclass(kw_only=True)
class TargetSide:
    """The translated folder and how each of its files was produced."""

    path: str = fld("the folder written")
    lang: str = fld("language of the translation, ISO 639-1")
    files: dict[str, str] = fld("relative path -> 'translated', 'copied' or 'flags' (an LLM backend's "
                                "translation_flags.jsonl)")


@dataclass(kw_only=True)
class MemoryRef:
    """The translation memory the segments were served from and committed to."""

    path: str = fld("the SQLite file")
    system: str = fld("the translator's key in the memory")


@dataclass(kw_only=True)
class TranslationOptions:
    """The options that shaped the output."""

    fields: list[str] = fld("fields translated (corpus, queries)")
    limit: int | None = fld("records per field when the translation is a preview, else null")
    batch_size: int = fld("segments per backend call")
    verbatim: str = fld("how URLs, e-mails, numbers and code are kept (beirx.translate.planning.placeholders)")
    verbatim_kinds: list[str] = fld("which kinds are kept verbatim")
    max_segment_tokens: int | None = fld("segment length limit in the model's tokens, null when none")
    segmenter: str = fld("the sentence segmenter")
    shards: int | None = optional("shard memories merged by --assemble (beirx.translate.execution.shards); null for one run")


@dataclass(kw_only=True)
class HumanCorrections:
    """Corrections native speakers typed in ``beirx review``, written into the data by ``beirx review apply``."""

    records: dict[str, int] = fld("records changed per field (queries, corpus)")
    log: str = fld("the file (relative to the dataset) keeping each record's machine output and its correction")
    annotators: list[str] = fld("whose corrections were applied")
    applied: str = fld("UTC time of the last apply (ISO 8601)")
    checksum: str | None = optional("content checksum of the data the last apply wrote (null: written by an older "
                                    "beirx, which did not record it); a change to the data since makes the review "
                                    "no longer describe it")


@dataclass(kw_only=True)
class TranslationManifest(Artifact):
    """``translation.json``: a translated dataset's provenance."""

    SCHEMA = SCHEMA
    KIND = "translation manifest"

    schema_version: str = fld("format identifier", default=SCHEMA)
    format: int = fld("format number (1: before schema_version existed)", default=FORMAT)
    kind: str = fld("always 'beirx translation'", default="beirx translation")
    source: DatasetSide = fld("the dataset translated")
    target: TargetSide = fld("the translation written")
    translator: dict[str, Any] = fld("the backend's description: backend, model, revision and options")
    memory: MemoryRef = fld("the translation memory")
    options: TranslationOptions = fld("the options")
    partial: bool = fld("true when --limit made a preview, not a full translation")
    untranslated_fields: list[str] = fld("fields copied unchanged")
    counts: dict[str, int] = fld("segments total/unique/from memory/translated, batches, records per field ...")
    timings: dict[str, float] = fld("seconds per step and in total")
    cost: dict[str, Any] | None = optional("paid backends: estimated_usd, max_cost_usd, characters_estimated, "
                                           "characters_sent, spent_usd (list price)")
    llm: dict[str, Any] | None = optional(
        "LLM backends (beirx.translate.llm): endpoint, api, prompt (version, sha256, source), glossary, retries, "
        "fallback; this_run: units by outcome (accepted, retried, fallback, flagged), rejection reasons, requests, "
        "tokens, transport retries and failures, cost_usd; output: records that fell back or were flagged, by field "
        "and reason (listed in translation_flags.jsonl)")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    created: str = fld("UTC time the manifest was written (ISO 8601)", default_factory=utc_now)
    corrections: HumanCorrections | None = optional("human corrections applied after the machine translation")

    @property
    def family(self) -> str:
        """The dataset family: the source's name (``scifact`` for ``scifact-pl``)."""
        return self.source.name

    @property
    def source_language(self) -> str:
        return self.source.lang

    @property
    def target_language(self) -> str:
        return self.target.lang

    @property
    def backend(self) -> str | None:
        return _text(self.translator.get("backend") or self.translator.get("name"))

    @property
    def model(self) -> str | None:
        return _text(self.translator.get("model"))

    @property
    def revision(self) -> str | None:
        return _text(self.translator.get("revision"))

    @classmethod
    def _upgrade(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        if "schema_version" not in data and data.get("format") == 1:
            return {"schema_version": SCHEMA, **{k: v for k, v in data.items() if k != "format"}, "format": FORMAT}
        return super()._upgrade(data, source)

    @classmethod
    def path_in(cls, root: Path | str) -> Path:
        return Path(root) / FILENAME

    @classmethod
    def find(cls, root: Path | str) -> "TranslationManifest | None":
        """The manifest of the dataset folder ``root``, or None when it is not a beirx translation.

        A manifest that is there but malformed raises :class:`~beirx.errors.DataError` (file and field).
        """
        path = cls.path_in(root)
        return cls.load(path) if path.is_file() else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
