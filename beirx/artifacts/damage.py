"""Which translated rows hurt retrieval, and which quality signal finds them (``damage.json``, written by
``beirx report`` beside its tables; read by ``beirx review --damage`` to aim a stratum of the sample).

For a source/target pair of a translated dataset, every query's *damage* is its metric drop from the source to the
translation, averaged over the systems evaluated on both; the *damaged* queries are the worst decile of damage.
Each quality signal (a per-row score of the quality report, a method's flag count, or the report's combined order)
is read per query in three *views*: the query's own row, and the worst and the mean of its judged relevant
documents' rows. Its evidence: Spearman's rho between the signal (oriented so that higher is worse) and the
damage, with a bootstrap interval over queries, and the precision and recall of its worst decile of queries
against the damaged ones; per system as well. The signal whose worst decile holds the most damaged queries is
named (:attr:`DamageAnalysis.chosen`), and the review draws its ``damage`` stratum from the rows it ranks worst.

:meth:`RowSignal.badness` is the one definition of a signal's value on a per-row record of the quality report's
sidecar (:mod:`beirx.artifacts.quality_rows`), used by the report and the review alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from beirx.artifacts.base import Artifact, fld, optional, utc_now
from beirx.artifacts.manifest import DatasetSide

SCHEMA = "beirx.damage/1"
FILENAME = "damage.json"  # in a report folder

VIEWS = ("query", "worst document", "mean document")
"""What a query meets in the translation, read per signal: its own row; the worst and the mean of its judged
relevant documents' rows."""


@dataclass(kw_only=True)
class RowSignal:
    """A per-row signal of translation damage, read from a quality report's per-row record; higher is worse."""

    name: str = fld("its label: the score's name, the method's name for a flag count, 'combined'")
    method: str = fld("the quality method it comes from ('all' for the combined order)")
    kind: Literal["score", "flags", "combined"] = fld(
        "score: a per-row score, negated when higher is better; flags: how many of the method's flag reasons the "
        "row has; combined: the quality report's own order of rows (flags, then 1 - the mean percentile rank)")
    score: str | None = optional("the score's name (kind score)")
    higher_is_better: bool = optional("the score's direction (kind score)", default=True)
    flags: list[str] = optional("the flag reasons counted (kind flags)", default_factory=list)
    report: str | None = optional("the quality.json whose rows it reads, when not the analysis' quality_report (a "
                                  "further report of the same translation, e.g. by a second encoder)")

    def badness(self, row: dict) -> float | None:
        """The signal's value on one sidecar record (higher is worse); None when the row has no such value (a
        method that did not score it)."""
        if self.kind == "combined":
            rank = row.get("rank")
            return len(row["flags"]) + 1.0 - (1.0 if rank is None else rank)
        if self.kind == "flags":
            return float(sum(1 for reason in row["flags"] if reason in self.flags))
        value = row["scores"].get(self.score)
        if value is None:
            return None
        return -float(value) if self.higher_is_better else float(value)


@dataclass(kw_only=True)
class Relation:
    """How one signal relates to one damage (the drop averaged over systems, or one system's drop)."""

    queries: int = fld("queries with a value of the signal (and a drop)")
    spearman: float | None = fld("Spearman's rho of the signal (higher = worse) against the drop; null when undefined")
    p_value: float | None = fld("two-sided p-value of rho (scipy.stats.spearmanr)")
    ci_low: float | None = fld("lower bound of rho's percentile bootstrap interval over queries")
    ci_high: float | None = fld("upper bound of that interval")
    k: int = fld("the signal's worst queries counted: the worst decile, ceil(queries / 10)")
    damaged: int = fld("damaged queries among those with a value")
    precision: float | None = fld("share of the signal's k worst queries that are damaged (ties at the cut shared "
                                  "out in expectation)")
    recall: float | None = fld("share of the damaged queries among the signal's k worst")


@dataclass(kw_only=True)
class SignalEvidence:
    """One signal in one view, against the damage and each system's drop."""

    signal: RowSignal = fld("the signal")
    view: str = fld("query | worst document | mean document")
    damage: Relation = fld("against the drop averaged over the systems")
    systems: dict[str, Relation] = fld("against each system's own drop (its own damaged queries)")


@dataclass(kw_only=True)
class Choice:
    """The signal a damage-aimed review draws by."""

    signal: str = fld("the signal's name")
    view: str = fld("the view")
    reason: str = fld("why: its figures against the others'")


@dataclass(kw_only=True)
class DamageAnalysis:
    """One translated dataset against its source, on one split."""

    family: str = fld("the dataset family")
    split: str = fld("the qrels split")
    metric: str = fld("the per-query metric whose drop is the damage")
    source_pair: str = fld("the source's language pair, e.g. en")
    target_pair: str = fld("the translation's, e.g. es (es2en: translated queries on the source corpus)")
    translated: DatasetSide = fld("the translation the quality report scored")
    quality_report: str | None = fld("the quality.json the signals come from")
    documents: bool = fld("whether the documents' rows are the translation's (false for translated queries on the "
                          "source corpus: then only the query view)")
    systems: list[str] = fld("the systems whose drops are averaged")
    queries: int = fld("queries every system scores on both sides")
    k: int = fld("the worst decile: ceil(queries / 10)")
    damaged: list[str] = fld("the damaged queries: the k with the largest damage (ties at the cut included), "
                             "damage > 0")
    rule: str = fld("the definition of damage and damaged, in words")
    resamples: int = fld("bootstrap resamples of every interval")
    seed: int = fld("the bootstrap's seed")
    signals: list[SignalEvidence] = fld("every signal in every view that applies")
    chosen: Choice | None = fld("the best-predicting signal, null when none is defined")

    def evidence(self, signal: str, view: str) -> SignalEvidence | None:
        return next((e for e in self.signals if e.signal.name == signal and e.view == view), None)


@dataclass(kw_only=True)
class DamageReport(Artifact):
    """``damage.json``: per translation, which quality signals predict the per-query retrieval drop."""

    SCHEMA = SCHEMA
    KIND = "damage report"

    schema_version: str = fld("format identifier", default=SCHEMA)
    analyses: list[DamageAnalysis] = fld("one per translated dataset, target language pair and split")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    created: str = fld("UTC time the document was written (ISO 8601)", default_factory=utc_now)

    def find(self, translated: DatasetSide) -> DamageAnalysis | None:
        """The analysis of ``translated`` (its checksum, else its folder) with a chosen signal: the monolingual pair
        first (its documents are the translation's too)."""
        found = [a for a in self.analyses if a.chosen is not None and (
            a.translated.checksum == translated.checksum or a.translated.path == translated.path)]
        found.sort(key=lambda a: (not a.documents, a.translated.checksum != translated.checksum))
        return found[0] if found else None
