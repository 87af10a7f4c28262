"""The human review of a translation (``review/review.json``) that ``beirx review export`` writes.

Native speakers rate a stratified sample of (source, translation) pairs in ``beirx review``: adequacy and
fluency on 1-5, MQM-lite error marks, an optional corrected translation. The document keeps every rating
and what follows from them: agreement between annotators (Krippendorff's alpha, ordinal), the share of
acceptable translations with a 95% confidence interval, and how well each automatic quality score ranks
items as the annotators do (Spearman). The dataset card and MTEB task read it to state
``sample_creation`` ("machine-translated and verified").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beirx.artifacts.base import Artifact, fld, optional, utc_now
from beirx.artifacts.manifest import DatasetSide

SCHEMA = "beirx.review/2"
READS = ("beirx.review/1",)  # read as they are: every field added since is optional
FILENAME = "review.json"
FOLDER = "review"  # in the translated dataset's folder


@dataclass(kw_only=True)
class Correction:
    """A corrected translation typed by an annotator."""

    text: str = fld("the corrected text (a query's text, a document's text)")
    title: str | None = optional("a document's corrected title (null for queries and untitled documents)")


@dataclass(kw_only=True)
class Rating:
    """One annotator's verdict on one item."""

    annotator: str = fld("the name the annotator entered")
    adequacy: int = fld("1-5: how much of the source's meaning the translation keeps")
    fluency: int = fld("1-5: how natural and grammatical the translation reads")
    errors: dict[str, str] = fld("MQM-lite error category -> severity (minor, major)")
    correction: Correction | None = optional("the corrected translation, when the annotator typed one")
    updated: str = fld("UTC time of the last change (ISO 8601)")


@dataclass(kw_only=True)
class ReviewItem:
    """One reviewed (source, translation) pair."""

    field: str = fld("queries or corpus")
    id: str = fld("query or document ID")
    stratum: str = fld("how it was drawn: queries, documents (random of each field), worst (by automatic QE), damage "
                       "(the rows the best-predicting quality signal of beirx report ranks worst), random")
    ratings: list[Rating] = fld("every annotator's rating")
    adequacy: float | None = optional("mean adequacy over the annotators")
    fluency: float | None = optional("mean fluency over the annotators")
    acceptable: bool | None = optional("whether the item meets the acceptability rule (null when unrated)")
    scores: dict[str, float | None] = optional("the automatic quality scores of the row when it was drawn",
                                               default_factory=dict)


@dataclass(kw_only=True)
class Agreement:
    """Inter-annotator agreement on one scale."""

    alpha: float | None = fld("Krippendorff's alpha, ordinal (null with fewer than two raters on any item)")
    level: str = fld("level of measurement ('ordinal')")
    items: int = fld("items rated by at least two annotators")
    ratings: int = fld("ratings on those items")


@dataclass(kw_only=True)
class Share:
    """A proportion with its confidence interval."""

    items: int = fld("items counted")
    acceptable: int = fld("of them acceptable")
    share: float | None = fld("acceptable / items (null without items)")
    ci_low: float | None = fld("lower bound of the confidence interval")
    ci_high: float | None = fld("upper bound of the confidence interval")


@dataclass(kw_only=True)
class Acceptability:
    """The share of acceptable translations."""

    rule: str = fld("when an item is acceptable")
    interval: str = fld("how the confidence interval is computed")
    confidence: float = fld("confidence level of the interval")
    estimate: Share = fld("over the items drawn at random (every stratum but 'worst' and 'damage'): an estimate for "
                          "the dataset")
    per_stratum: dict[str, Share] = fld("per stratum, 'worst' and 'damage' included")


@dataclass(kw_only=True)
class Correlation:
    """How an automatic score ranks items against the annotators."""

    spearman: float | None = fld("Spearman's rho between the score and mean adequacy (null when undefined)")
    p_value: float | None = fld("two-sided p-value of rho (scipy.stats.spearmanr)")
    n: int = fld("items with both the score and a rating")


@dataclass(kw_only=True)
class DamageAim:
    """The ``damage`` stratum: which signal aimed it, and how much of the damage the review holds and rated."""

    signal: str = fld("the quality signal the stratum was drawn by (beirx report's damage.json)")
    view: str = fld("query | worst document | mean document: which of a query's rows the signal was read on")
    reason: str = fld("why that signal: its evidence against the others'")
    evidence: str = fld("the damage.json it was chosen in")
    split: str = fld("the qrels split whose queries and judged documents the stratum was drawn from")
    damaged_queries: int = fld("the most-damaged queries (the worst decile of the retrieval drop)")
    damaging_rows: int = fld("their rows: the damaged queries and (when the corpus is translated) their judged "
                             "relevant documents")
    stratum: int = fld("rows in the damage stratum")
    stratum_damaging: int = fld("of them damaging rows")
    sampled: int = fld("damaging rows in the sample, any stratum")
    rated: int = fld("damaging rows rated by at least one annotator")

    @property
    def coverage(self) -> float | None:
        """The share of the damaging rows the annotators rated."""
        return self.rated / self.damaging_rows if self.damaging_rows else None

    def note(self) -> str:
        """One sentence for a dataset card."""
        share = f" ({100 * self.coverage:.1f}%)" if self.coverage is not None else ""
        return (f"The review rated {self.rated} of the {self.damaging_rows} rows of the {self.damaged_queries} "
                f"most-damaged {self.split} queries{share} (their own rows and their judged relevant documents'); "
                f"its `damage` stratum of {self.stratum} rows, {self.stratum_damaging} of them damaging, was drawn "
                f"from the rows the quality signal `{self.signal}` ({self.view}) ranks worst: {self.reason}.")


@dataclass(kw_only=True)
class SampleInfo:
    size: int = fld("items drawn")
    seed: int = fld("seed of the draw")
    strata: dict[str, int] = fld("items per stratum")
    quality_report: str | None = fld("the quality.json whose scores ranked the 'worst' stratum, null when none")
    damage: DamageAim | None = optional("the damage stratum's aim and coverage, null without one")


@dataclass(kw_only=True)
class ReviewDocument(Artifact):
    """``review.json``: native speakers' verdicts on a sample of a translation, and what they show."""

    SCHEMA = SCHEMA
    KIND = "review"
    PLACE = f"{FOLDER}/{FILENAME}"  # where beirx review export writes it in the translated dataset

    schema_version: str = fld("format identifier", default=SCHEMA)
    dataset: DatasetSide = fld("the translation reviewed (its checksum when the sample was drawn)")
    source_lang: str = fld("language of the source, ISO 639-1")
    sample: SampleInfo = fld("how the items were drawn")
    annotators: list[str] = fld("every annotator who rated something")
    items: list[ReviewItem] = fld("every item of the sample, rated or not")
    agreement: dict[str, Agreement] = fld("per scale (adequacy, fluency)")
    acceptable: Acceptability = fld("the share of acceptable translations")
    correlations: dict[str, Correlation] = fld("per automatic quality score, against mean adequacy")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    created: str = fld("UTC time the document was written (ISO 8601)", default_factory=utc_now)

    @property
    def rated_items(self) -> int:
        """Items with at least one rating."""
        return sum(1 for item in self.items if item.ratings)

    @classmethod
    def _upgrade(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        if data.get(cls.SCHEMA_FIELD) in READS:
            data = {**data, cls.SCHEMA_FIELD: cls.SCHEMA}
        return super()._upgrade(data, source)

    def find(self, field: str, item_id: str) -> ReviewItem | None:
        return next((i for i in self.items if i.field == field and i.id == item_id), None)

    def summary(self) -> dict[str, Any]:
        """Headline figures for cards and task metadata."""
        estimate = self.acceptable.estimate
        damage = self.sample.damage
        return {"reviewed items": self.rated_items, "annotators": len(self.annotators),
                "Krippendorff's alpha (adequacy, ordinal)": self.agreement["adequacy"].alpha
                if "adequacy" in self.agreement else None,
                "acceptable share": estimate.share, "acceptable 95% CI low": estimate.ci_low,
                "acceptable 95% CI high": estimate.ci_high,
                "damaging rows rated (share)": damage.coverage if damage else None}
