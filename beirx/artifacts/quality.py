"""The translation-quality report (``quality/quality.json``) that ``beirx quality`` writes.

Quality is measured by *methods* (``beirx.translate.quality``: rule checks, cross-lingual embedding
similarity, back-translation, COMET, an LLM judge...), each declaring the per-row scores it produces
and the reasons it flags a row with. The report stores them generically, so a new method needs no new
field here:

- ``methods``: what ran (model, revision, options), the scores it produced and the flags it can raise;
- ``scores``: what each score means (its method, scale, direction);
- per field (``queries``, ``corpus``): every score's distribution, the flag counts and each method's own
  summary (rows scored and missing, corpus-level figures).

Every row's scores and flag reasons are in the sidecar ``rows.jsonl`` beside ``quality.json``
(:mod:`beirx.artifacts.quality_rows`), which readers stream (:meth:`QualityReport.rows`,
:meth:`QualityReport.worst`): per-row data grows with the corpus, the report does not. The report records the
sidecar's lines and SHA-256 (``sidecar``), and :meth:`QualityReport.rows`, the one way to read the rows, verifies
them (:mod:`beirx.artifacts.quality_sidecar`).

BEIR-PL's headline figure has properties (``FieldQuality.similarity``, ``QualityReport.per_query_similarity``,
``.encoder``). Each method's headline figures of a field (``MethodField.figures``) and whether its scored rows
verify the translation (``MethodInfo.verifies``) are recorded when the report is written, so a dataset card
reads them here without knowing the methods. Reports of formats 1 to 5 load as well: format 5 with its sidecar
checked by each field's row count (``pairs``) and line syntax, as it recorded no digest; format 4 with the figures
and verification its methods gave then (:meth:`FieldQuality.figures`,
:meth:`QualityReport.verifying`), format 3 (:mod:`beirx.artifacts.quality_v3`)
with its inline rows held in memory, formats 1 and 2 (:mod:`beirx.artifacts.quality_v2`) with their similarity
distribution, flags, language check, length rule and round-trip chrF in the generic places (format 1 has no
per-query similarity, format 2 has it for queries).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from beirx.artifacts import quality_rows, quality_sidecar
from beirx.artifacts.base import Artifact, fld, optional
from beirx.artifacts.manifest import DatasetSide
from beirx.artifacts.quality_parts import Distribution, TableRow, TranslationSummary
from beirx.artifacts.quality_sidecar import Sidecar

SCHEMA = "beirx.quality/6"
V5 = "beirx.quality/5"
V4 = "beirx.quality/4"
V3 = "beirx.quality/3"
V2 = "beirx.quality/2"
FILENAME = "quality.json"  # in the report folder, by default <translated dataset>/quality
FOLDER = "quality"


@dataclass(kw_only=True)
class QualityParameters:
    fields: list[str] = fld("fields scored")
    sample_size: int = fld("pairs per field in the manual-review sample")
    seed: int = fld("seed of every random sample")
    max_items: int | None = fld("at most this many items scored per field, null = all")


@dataclass(kw_only=True)
class ScoreInfo:
    """What one per-row score means."""

    method: str = fld("the method that produces it")
    description: str = fld("what it measures")
    higher_is_better: bool = fld("true when a higher value means a better translation")
    scale: list[float] | None = optional("[low, high] of the values (the histogram's range), null when unbounded")


@dataclass(kw_only=True)
class Verifies:
    """How a dataset card states that a method's scored rows verify the translation (an LLM judge's)."""

    note: str = fld("the card's note, {n} standing for the rows scored")
    label: str = fld("the label of the card's figure: the rows scored")


@dataclass(kw_only=True)
class MethodInfo:
    """One quality method that ran."""

    description: dict[str, Any] = fld("what ran: model, revision, prompt hash, options (never a secret)")
    scores: list[str] = fld("the per-row scores it produces")
    flags: dict[str, str] = fld("the reasons it flags a row with, and what each means")
    sample: int | None = optional("rows per field it scores (a seeded sample), null = every row, or the rows its "
                                  "description's 'rows' names ('qrels:test': those the test qrels judge)")
    verifies: Verifies | None = optional("set when the rows it scored count as verification of a published dataset")


@dataclass(kw_only=True)
class MethodField:
    """One method's outcome on one field."""

    scored: int = fld("rows it gave a value")
    missing: int = fld("rows it tried but got no value for (e.g. a judge answer still malformed after retries)")
    summary: dict[str, Any] = optional("the method's field-level figures (e.g. corpus chrF, language shares)",
                                       default_factory=dict)
    figures: dict[str, float | None] | None = optional(
        "its headline figures for a dataset card and beirx quality's printout (label -> value, null when not "
        "measured); null in a report of format 4 or older, which did not record them (FieldQuality.figures)")


@dataclass(kw_only=True)
class FieldQuality:
    """Quality of one field (queries or corpus)."""

    pairs: int = fld("items scored")
    missing: int = fld("source items absent from the translation")
    empty_sources: int = fld("source items with no text (not scored)")
    flags: dict[str, int] = fld("items per flag reason, all methods together")
    flagged_items: int = fld("items with at least one flag")
    scores: dict[str, Distribution] = optional("distribution of each score", default_factory=dict)
    methods: dict[str, MethodField] = optional("each method's outcome", default_factory=dict)
    missing_examples: list[str] | None = optional("up to 10 missing IDs")

    @property
    def similarity(self) -> Distribution:
        """The cross-lingual similarity's distribution (``n == 0`` when the method did not run)."""
        return self.scores.get("similarity") or Distribution(n=0)

    def figures(self) -> dict[str, float]:
        """Every method's measured headline figures (label -> value), in method order; those a report of format 4
        or older did not record, as its methods gave them then (:func:`_figures_before_v5`)."""
        found = [outcome.figures if outcome.figures is not None else _figures_before_v5(name, self)
                 for name, outcome in self.methods.items()]
        return {label: value for figures in found for label, value in figures.items() if value is not None}


@dataclass(kw_only=True)
class QualityReport(Artifact):
    """``quality.json``: how good a machine translation of a BEIR dataset is, method by method; row by row in the
    sidecar `rows.jsonl` beside it (one JSON object a line: `field`, `id`, `flags` (reasons), `rank` (mean
    percentile rank over the row's scores, 0 = worst) and `scores` (score name -> value, null = no answer))."""

    SCHEMA = SCHEMA
    KIND = "quality report"
    PLACE = f"{FOLDER}/{FILENAME}"  # beirx quality's default report folder in the translated dataset

    schema_version: str = fld("format identifier", default=SCHEMA)
    dataset: str = fld("the translated dataset's name")
    source: DatasetSide = fld("the original dataset")
    translated: DatasetSide = fld("the translation")
    translation: TranslationSummary | None = fld("from translation.json, null when there is none")
    methods: dict[str, MethodInfo] = fld("the quality methods that ran, by name")
    scores: dict[str, ScoreInfo] = fld("what each per-row score means, by score name")
    parameters: QualityParameters = fld("the parameters")
    fields: dict[str, FieldQuality] = fld("per field (queries, corpus)")
    table: list[TableRow] = fld("BEIR-PL Table 2 layout")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    timings: dict[str, float] = fld("seconds per step and in total", default_factory=dict)
    sidecar: Sidecar | None = optional("what the sidecar rows.jsonl held when this file was written (its lines and "
                                       "SHA-256, whole and per field), which every reader verifies; null in a report of "
                                       "format 5 or older, whose sidecar is checked by each field's pairs and syntax")

    # Where the per-row sidecar is (the folder of the quality.json it was loaded from or saved to), or the rows
    # themselves when they are held in memory (a format-3 file, or a report built in memory): not fields.
    _folder: ClassVar[Path | None] = None
    _held: ClassVar[dict[str, list[dict]] | None] = None

    def hold_rows(self, rows: dict[str, list[dict]]) -> QualityReport:
        """Keep ``rows`` (sidecar records by field) in memory; :meth:`save` writes them to the sidecar."""
        self._held = rows
        return self

    def rows(self, fields: Iterable[str] | None = None) -> Iterator[dict]:
        """Stream the per-row records (:mod:`beirx.artifacts.quality_rows`) of ``fields`` (default all), verified
        against what this report recorded of its sidecar (:func:`beirx.artifacts.quality_sidecar.read`): a sidecar
        that is missing, cut short, changed or malformed, or a score that is no finite number, raises
        :class:`~beirx.errors.DataError` naming the file and line before the last row is handed over. None for a
        report built in memory and never given rows. Every reader of the rows goes through here."""
        if self._held is not None:
            wanted = set(self.fields if fields is None else fields)
            return (row for name in self._held if name in wanted for row in self._held[name])
        if self._folder is not None:
            path = self._folder / quality_sidecar.FILENAME
            if self.sidecar is not None:
                return quality_sidecar.read(path, self.sidecar, fields)
            _warn_unverifiable(path)
            return quality_sidecar.read(path, None, fields, counts={n: e.pairs for n, e in self.fields.items()})
        return iter(())

    def verify_rows(self) -> QualityReport:
        """Check the whole sidecar at once (:func:`beirx.artifacts.quality_sidecar.verify`), so a damaged one stops
        a command before any work, wherever the damage is; returns the report."""
        if self._held is None and self._folder is not None:
            path = self._folder / quality_sidecar.FILENAME
            if self.sidecar is None:
                _warn_unverifiable(path)
            quality_sidecar.verify(path, self.sidecar, {n: e.pairs for n, e in self.fields.items()})
        return self

    @classmethod
    def load_verified(cls, path: Path | str) -> QualityReport:
        """The report in ``path`` with its sidecar verified (:meth:`verify_rows`): for a command that uses the rows
        (report, review, publish), where a damaged report must stop it, never be left out."""
        return cls.load(path).verify_rows()

    def worst(self, n: int, fields: Iterable[str] | None = None) -> list[dict]:
        """The ``n`` worst rows of ``fields`` (most flags, then the lowest mean percentile rank; ties by field
        and ID), streamed: memory holds ``n`` rows."""
        return quality_rows.worst(self.rows(fields), n)

    @property
    def per_query_similarity(self) -> dict[str, float]:
        """Similarity of every scored query, by query ID (empty when not recorded)."""
        if "queries" not in self.fields or "similarity" not in self.scores:
            return {}
        return {row["id"]: row["scores"]["similarity"] for row in self.rows(["queries"])
                if row["scores"].get("similarity") is not None}

    def verifying(self) -> dict[str, Verifies]:
        """The methods whose scored rows count as verification of a published dataset, by name. A report that
        recorded no figures (format 4 or older) recorded no verification either: then, as then, the LLM judge."""
        if any(o.figures is not None for entry in self.fields.values() for o in entry.methods.values()):
            return {name: info.verifies for name, info in self.methods.items() if info.verifies is not None}
        return {name: _VERIFIED_BEFORE_V5[name] for name in self.methods if name in _VERIFIED_BEFORE_V5}

    @property
    def encoder(self) -> dict[str, Any]:
        """The similarity encoder's description (model, revision, prompts), ``{}`` when it did not run."""
        method = self.methods.get("similarity")
        return method.description if method else {}

    @property
    def encoder_model(self) -> str | None:
        return self.encoder.get("model")

    @property
    def encoder_revision(self) -> str | None:
        return self.encoder.get("revision")

    @classmethod
    def from_dict(cls, data: Any, source: Path | str | None = None):
        """As :meth:`Artifact.from_dict`; a format-1 to -3 report keeps its inline rows in memory."""
        where = str(source) if source is not None else f"<{cls.__name__}>"
        held = None
        if isinstance(data, dict) and data.get("schema_version") in (None, V2, V3):
            if data.get("schema_version") != V3:
                from beirx.artifacts.quality_v2 import to_current

                data = to_current(data, where, V3)
            from beirx.artifacts.quality_v3 import split

            data, held = split(data, where, V4)
        if isinstance(data, dict) and data.get("schema_version") in (V4, V5):  # (V4: no figures, verification)
            data = {**data, "schema_version": SCHEMA}  # no sidecar digest: read with each field's pairs as its rows
        report = super().from_dict(data, source)
        if held is not None:
            report.hold_rows(held)
        elif source is not None and not where.startswith("<"):
            report.rows_beside(Path(where))  # the file it was read from: the sidecar is beside it
        return report

    def rows_beside(self, path: Path) -> QualityReport:
        """Stream the per-row records from the sidecar beside ``path`` (a ``quality.json``)."""
        self._folder = path.parent
        return self

    def save(self, path: Path | str) -> None:
        """Write ``quality.json`` atomically, after the sidecar beside it when the rows are held in memory (none:
        an empty one), live in another folder or were never digested (format 5 and older, verified as they are
        copied), recording the sidecar's digest. A report read from JSON alone keeps the sidecar its digest names,
        which must then be the one beside ``path``."""
        path = Path(path)
        target = path.parent / quality_sidecar.FILENAME
        if self._held is not None:
            self.sidecar = quality_sidecar.write(target, (row for rows in self._held.values() for row in rows))
        elif self._folder is None and self.sidecar is not None:
            quality_sidecar.verify(target, self.sidecar)
        elif self._folder is None:
            self.sidecar = quality_sidecar.write(target, ())
        elif self.sidecar is None or self._folder.resolve() != path.parent.resolve():
            self.sidecar = quality_sidecar.write(target, self.rows())  # (atomic: reading the old file is safe)
        super().save(path)
        self._folder = path.parent



_warned: set[str] = set()


def _warn_unverifiable(path: Path) -> None:
    """Once per sidecar: a report of format 5 or older recorded no digest of it."""
    if str(path) not in _warned:
        _warned.add(str(path))
        logging.getLogger(__name__).warning(
            "%s: its quality.json (format 5 or older) records no checksum of it, so its rows are checked by count and "
            "syntax only (a changed value would pass); beirx quality writes reports that record one", path)


# Up to format 4 a report left its methods' card figures and verification to the methods' code; this is what the
# methods of that time gave, so such a report reads as it did (the artifact knows its own history, not the methods).
_VERIFIED_BEFORE_V5 = {"judge": Verifies(note="an LLM judge scored {n} translations", label="LLM-judged items")}


def _figures_before_v5(method: str, entry: FieldQuality) -> dict[str, float | None]:
    summary = entry.methods[method].summary
    if method == "similarity":
        return {"similarity (mean)": entry.similarity.mean}
    if method == "checks":
        language = summary.get("language") or {}
        return {"in target language": language.get("target_share") if language.get("checked") else None}
    return {"round-trip chrF": summary.get("chrF")} if method == "roundtrip" else {}
