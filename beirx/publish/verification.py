"""MTEB's ``sample_creation`` for a dataset, decided from the evidence beside it.

MTEB records how a task's samples were made and asks that machine translations be checked; the values
beirx can claim are:

- ``machine-translated and verified``: a human review (``review/review.json``, ``beirx review export``) rated
  at least ``min_items`` items (default 100, as BEIR-PL checked 100 by hand) and its annotators agree:
  Krippendorff's alpha on adequacy at least ``min_alpha`` (default 0.667, the lowest Krippendorff (2004)
  accepts for tentative conclusions). The review must be of this data (its checksum), or this data must be
  what applying its corrections wrote (``translation.json`` records the checksum of the data each apply
  wrote): data changed after the review or after the apply is no longer what the annotators verified;
- ``machine-translated and LM verified``: no such review, but an LLM judge scored the translation
  (``quality/quality.json`` has the ``judge`` method);
- ``machine-translated`` otherwise; ``found`` for a dataset that is not a translation.

The reason and the figures go into the dataset card, so a reader sees why the label was given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.argtypes import agreement, non_negative_int
from beirx.artifacts.manifest import TranslationManifest
from beirx.artifacts.quality import QualityReport
from beirx.artifacts.review import ReviewDocument
from beirx.options import Option

MIN_ITEMS = 100
MIN_ALPHA = 0.667
VERIFIED = "machine-translated and verified"
LM_VERIFIED = "machine-translated and LM verified"
MACHINE = "machine-translated"


@dataclass(frozen=True)
class Verification:
    sample_creation: str
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)
    damage: str | None = None  # the review's sentence on the damaged rows it covered (a damage stratum's)


#: The thresholds, for every command that states sample_creation (publish, mteb task): declared once, the flags
#: (``--min-review-items``, ``--min-review-alpha``) generated from them.
OPTIONS: tuple[Option, ...] = (
    Option("min_review_items", non_negative_int, default=MIN_ITEMS, metavar="N",
           help="a human review counts as verification from N rated items"),
    Option("min_review_alpha", agreement, default=MIN_ALPHA, metavar="A",
           help="... and Krippendorff's alpha (adequacy) of at least A"),
)


def verification(root: Path | str, checksum: str, translated: bool, min_items: int = MIN_ITEMS,
                 min_alpha: float = MIN_ALPHA) -> Verification:
    """The label for the dataset in ``root`` whose data checksum is ``checksum``."""
    if not translated:
        return Verification("found", "not a machine translation")
    review = ReviewDocument.load_optional(ReviewDocument.path_in(root), "not counting it as verification")
    notes: list[str] = []
    figures: dict[str, Any] = {}
    damage = review.sample.damage.note() if review is not None and review.sample.damage is not None else None
    if review is not None:
        figures.update((k, v) for k, v in review.summary().items() if v is not None)
        alpha = review.agreement["adequacy"].alpha if "adequacy" in review.agreement else None
        manifest = TranslationManifest.load_optional(TranslationManifest.path_in(root))
        applied = manifest.corrections if manifest is not None else None
        current = review.dataset.checksum == checksum or (applied is not None and applied.checksum == checksum)
        if not current:
            notes.append("the human review is of another version of the data" if applied is None else
                         "the data changed since the human review's corrections were applied")
        elif review.rated_items < min_items:
            notes.append(f"the human review rated {review.rated_items} items, fewer than {min_items}")
        elif alpha is None or alpha < min_alpha:
            notes.append(f"the annotators' agreement (Krippendorff's alpha {_fmt(alpha)}) is below {min_alpha}")
        else:
            return Verification(VERIFIED, f"{review.rated_items} items rated by {len(review.annotators)} native "
                                          f"speakers, Krippendorff's alpha {alpha:.3f} (at least {min_items} items "
                                          f"and alpha {min_alpha} required)", figures, damage)
    quality = QualityReport.load_optional(QualityReport.path_in(root), "not counting it as verification")
    for name, verifies in quality.verifying().items() if quality is not None else ():  # (an LLM judge)
        scored = sum(f.methods[name].scored for f in quality.fields.values() if name in f.methods)
        notes.append(verifies.note.format(n=scored))
        return Verification(LM_VERIFIED, "; ".join(notes), {**figures, verifies.label: scored}, damage)
    return Verification(MACHINE, "; ".join(notes) or "no human review or LLM judge on record", figures, damage)


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
