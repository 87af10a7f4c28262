"""``beirx review export``: the review database as ``review.json`` (:class:`~beirx.artifacts.review.ReviewDocument`).

An item is *acceptable* when its mean adequacy over the annotators is at least ``min_adequacy`` (default 4:
"most meaning kept") and its mean fluency at least ``min_fluency`` (default 3). The dataset-level share is
estimated over the items drawn at random (the ``worst`` and ``damage`` strata, chosen for being suspicious, would
bias it) and given with a 95% Wilson interval; every stratum also gets its own. With a damage stratum, the document
states how many of the damaging rows (the most-damaged queries' rows, recorded when the sample was drawn) the
sample holds and the annotators rated.
"""

from __future__ import annotations

import logging
from pathlib import Path

from beirx.artifacts.manifest import DatasetSide
from beirx.artifacts.review import (Acceptability, Agreement, Correction, Correlation, DamageAim, Rating,
                                    ReviewDocument, ReviewItem, SampleInfo, Share)
from beirx.provenance import environment_versions
from beirx.review import statistics
from beirx.review.sample import AIMED, STRATA
from beirx.review.store import ReviewStore

log = logging.getLogger(__name__)

MIN_ADEQUACY = 4.0
MIN_FLUENCY = 3.0


def _share(items: list[ReviewItem]) -> Share:
    rated = [i for i in items if i.acceptable is not None]
    good = sum(1 for i in rated if i.acceptable)
    low, high = statistics.wilson_interval(good, len(rated))
    return Share(items=len(rated), acceptable=good, share=good / len(rated) if rated else None, ci_low=low,
                 ci_high=high)


def build_review(store: ReviewStore, min_adequacy: float = MIN_ADEQUACY,
                 min_fluency: float = MIN_FLUENCY) -> ReviewDocument:
    """Every item with its ratings, agreement, the acceptable share and the correlations of automatic scores."""
    meta = store.meta()
    by_item: dict[int, list] = {}
    for rating in store.ratings():
        by_item.setdefault(rating.position, []).append(rating)
    annotators = sorted({r.annotator for ratings in by_item.values() for r in ratings})
    stored, items = store.items(), []
    for item in stored:
        ratings = by_item.get(item.position, [])
        adequacy, fluency = (sum(getattr(r, scale) for r in ratings) / len(ratings) if ratings else None
                             for scale in ("adequacy", "fluency"))
        items.append(ReviewItem(
            field=item.field, id=item.id, stratum=item.stratum,
            ratings=[Rating(annotator=r.annotator, adequacy=r.adequacy, fluency=r.fluency, errors=r.errors,
                            correction=Correction(**r.correction) if r.correction else None, updated=r.updated)
                     for r in ratings],
            adequacy=adequacy, fluency=fluency,
            acceptable=None if adequacy is None else adequacy >= min_adequacy and fluency >= min_fluency,
            scores=item.scores))
    positions = [item.position for item in stored]
    multi = [p for p in positions if len(by_item.get(p, [])) >= 2]
    agreement = {}
    for scale in ("adequacy", "fluency"):
        values = {(r.annotator, r.position): getattr(r, scale) for ratings in by_item.values() for r in ratings}
        agreement[scale] = Agreement(alpha=statistics.krippendorff_alpha(values, annotators, positions), level="ordinal",
                                     items=len(multi), ratings=sum(len(by_item[p]) for p in multi))
    acceptable = Acceptability(
        rule=f"mean adequacy >= {min_adequacy:g} and mean fluency >= {min_fluency:g} (1-5 scales)",
        interval="Wilson score interval (scipy.stats.binomtest(...).proportion_ci(method='wilson'))",
        confidence=statistics.CONFIDENCE,
        estimate=_share([i for i in items if i.stratum not in AIMED]),
        per_stratum={s: _share([i for i in items if i.stratum == s]) for s in STRATA
                     if any(i.stratum == s for i in items)})
    correlations = {}
    for score in sorted({s for i in items for s in i.scores}):
        pairs = [(i.scores[score], i.adequacy) for i in items
                 if i.scores.get(score) is not None and i.adequacy is not None]
        rho, p = statistics.spearman([a for a, _ in pairs], [b for _, b in pairs])
        correlations[score] = Correlation(spearman=rho, p_value=p, n=len(pairs))
    return ReviewDocument(
        dataset=DatasetSide(**meta["dataset"]), source_lang=meta["source_lang"],
        sample=SampleInfo(size=meta["size"], seed=meta["seed"], strata=meta["strata"],
                          quality_report=meta.get("quality_report"), damage=_damage(meta.get("damage"), items)),
        annotators=annotators, items=items, agreement=agreement, acceptable=acceptable, correlations=correlations,
        versions=environment_versions())


def _damage(recorded: dict | None, items: list[ReviewItem]) -> DamageAim | None:
    """The damage stratum's aim (recorded when the sample was drawn) and how many damaging rows were sampled and
    rated."""
    if not recorded:
        return None
    damaging = {tuple(key) for key in recorded["damaging"]}
    held = [i for i in items if (i.field, i.id) in damaging]
    stratum = [i for i in items if i.stratum == "damage"]
    return DamageAim(signal=recorded["signal"], view=recorded["view"], reason=recorded["reason"],
                     evidence=recorded["evidence"], split=recorded["split"],
                     damaged_queries=recorded["damaged_queries"], damaging_rows=len(damaging),
                     stratum=len(stratum), stratum_damaging=sum((i.field, i.id) in damaging for i in stratum),
                     sampled=len(held), rated=sum(1 for i in held if i.ratings))


def export_review(dataset_root: Path | str, output: Path | str | None = None, **rule) -> tuple[ReviewDocument, Path]:
    """Write ``review.json`` (default ``<dataset>/review/review.json``) atomically; return it and its path."""
    with ReviewStore.in_folder(dataset_root) as store:
        document = build_review(store, **rule)
    path = Path(output) if output is not None else ReviewDocument.path_in(dataset_root)
    document.save(path)
    return document, path
