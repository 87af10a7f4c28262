"""Draw the items a review rates: a stratified, seeded sample of (source, translation) pairs.

Up to five strata, filled in this order and never twice with one item:

- ``damage`` (with ``beirx report``'s ``damage.json``): the rows the quality signal that best predicts the
  retrieval drop ranks worst (:class:`~beirx.artifacts.damage.DamageAnalysis.chosen`), among the rows retrieval
  reads: the split's judged queries, read on the query's own row or on its worst judged relevant document as the
  signal's view says, worst query first (ties by ID), so a native speaker's hour goes where retrieval is hurt;
- ``worst``: the rows the automatic quality methods rank worst (most flags, then the lowest scores; from
  ``quality.json``'s per-row sidecar, both fields together), so reviewers see what the machine suspects;
- ``queries`` and ``documents``: uniform random draws from each field, so both are judged however unequal
  their sizes (a corpus has thousands of documents per query);
- ``random``: uniform over every row of both fields: with the other random strata, an unbiased picture.

Shares: equal (a quarter each with a quality report, a fifth with damage evidence too, a third each of the random
strata without either); a stratum that runs out passes its rest on to ``random``. Random draws are reservoir samples
(Vitter, 1985, Algorithm R) over the streamed files with a seeded generator, the worst rows a bounded heap over the
streamed sidecar, and the damage stratum keeps the sidecar rows of the split's judged rows only, so memory stays
bounded by the sample and the qrels, not the corpus, and the same seed gives the same sample. The damage evidence
also names the *damaging rows* (the most-damaged queries' own rows and their judged relevant documents',
:func:`damaging_rows`), so the review states how many of them it holds.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from pathlib import Path

from beirx.artifacts.damage import VIEWS, DamageAnalysis
from beirx.artifacts.quality import QualityReport
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.review.store import Item

log = logging.getLogger(__name__)

STRATA = ("damage", "worst", "queries", "documents", "random")
AIMED = ("damage", "worst")  # drawn for being suspicious: not part of an unbiased estimate


def _records(dataset: BeirDataset, field: str) -> Iterator[Query | Doc]:
    """A field's records, streamed without the reader's duplicate-ID check: its 8 bytes a record would make the
    sampler grow with the corpus (``beirx validate`` checks for duplicates)."""
    if field == "queries":
        return beir_io.iter_queries(dataset.queries_path, unique=False)
    return beir_io.iter_corpus(dataset.corpus_path, unique=False)


def _keys(dataset: BeirDataset, *fields: str) -> Iterator[tuple[str, str]]:
    """``(field, ID)`` of the fields' records (the translated side's: it is what is reviewed)."""
    return ((field, record.id) for field in fields for record in _records(dataset, field))


def _reservoir(keys: Iterator[tuple[str, str]], k: int, rng: random.Random, skip: set) -> list[tuple[str, str]]:
    """``k`` keys drawn uniformly from the stream (Algorithm R), leaving out ``skip``."""
    chosen: list[tuple[str, str]] = []
    seen = 0
    for key in keys:
        if key in skip:
            continue
        seen += 1
        if len(chosen) < k:
            chosen.append(key)
        elif (j := rng.randrange(seen)) < k:  # the stream's item number seen replaces one with probability k/seen
            chosen[j] = key
    return sorted(chosen)  # the stream order is the file order; sorting makes the order independent of it


def quotas(size: int, with_worst: bool, with_damage: bool = False) -> dict[str, int]:
    strata = [s for s in STRATA if (s != "worst" or with_worst) and (s != "damage" or with_damage)]
    share = size // len(strata)
    out = {s: share if s in strata else 0 for s in STRATA}
    out["random"] += size - share * len(strata)
    return out


def _relevant(translated: BeirDataset, split: str) -> dict[str, list[str]]:
    """``{query: its judged relevant documents}`` of the split's qrels."""
    return {q: sorted(d for d, rel in docs.items() if rel > 0) for q, docs in translated.qrels(split).items()}


def damaging_rows(translated: BeirDataset, analysis: DamageAnalysis) -> set[tuple[str, str]]:
    """The damaged queries' rows: their own, and their judged relevant documents' when the corpus is translated."""
    found = {("queries", q) for q in analysis.damaged}
    if analysis.documents:
        relevant = _relevant(translated, analysis.split)
        found |= {("corpus", d) for q in analysis.damaged for d in relevant.get(q, [])}
    return found


def damage_record(evidence: Path | str, analysis: DamageAnalysis, damaging: set[tuple[str, str]],
                  items: list[Item]) -> dict:
    """What the review keeps of the damage evidence when the sample is drawn: the signal, why, the damaging rows
    (to count what the review covered) and how many of them the damage stratum and the sample hold."""
    stratum = [i for i in items if i.stratum == "damage"]
    chosen = analysis.chosen
    return {"signal": chosen.signal, "view": chosen.view, "reason": chosen.reason, "evidence": str(evidence),
            "split": analysis.split, "damaged_queries": len(analysis.damaged),
            "damaging": sorted([list(key) for key in damaging]), "stratum": len(stratum),
            "stratum_damaging": sum((i.field, i.id) in damaging for i in stratum),
            "sampled": sum((i.field, i.id) in damaging for i in items)}


def aimed(translated: BeirDataset, quality: QualityReport, analysis: DamageAnalysis,
          size: int) -> list[tuple[str, str]]:
    """The ``size`` rows the analysis' chosen signal ranks worst among the split's judged rows, worst first: each
    judged query's value in the signal's view (its own row, or the worst or mean of its judged relevant documents),
    ties by query ID, gives its own row (query view) or its worst relevant document."""
    chosen = analysis.chosen
    evidence = analysis.evidence(chosen.signal, chosen.view) if chosen else None
    if evidence is None:
        raise BeirxError(f"the damage evidence for {analysis.translated.path} names no signal to aim the review by")
    signal, view = evidence.signal, evidence.view
    if signal.report is not None:  # a further report of the translation (e.g. a second encoder's) holds its rows
        quality = QualityReport.load_verified(signal.report)
    relevant = _relevant(translated, analysis.split)
    documents = analysis.documents and view != VIEWS[0]
    wanted = {d for docs in relevant.values() for d in docs} if documents else set()
    own: dict[str, float] = {}
    found: dict[str, float] = {}
    fields = [f for f in ("queries", "corpus") if f in quality.fields and (f == "queries" or wanted)]
    for row in quality.rows(fields):  # one streaming pass, keeping the judged rows only
        keep = relevant if row["field"] == "queries" else wanted
        value = signal.badness(row) if row["id"] in keep else None
        if value is not None:
            (own if row["field"] == "queries" else found)[row["id"]] = value
    ranked: list[tuple[float, str, tuple[str, str]]] = []
    for query, docs in relevant.items():
        if not documents:
            if query in own:
                ranked.append((-own[query], query, ("queries", query)))
            continue
        met = [(found[d], d) for d in docs if d in found]
        if met:
            worst = max(met)
            value = worst[0] if view == VIEWS[1] else sum(v for v, _ in met) / len(met)
            ranked.append((-value, query, ("corpus", worst[1])))
    return list(dict.fromkeys(key for _, _, key in sorted(ranked)))[:size]


def draw(source: BeirDataset, translated: BeirDataset, size: int, seed: int,
         quality: QualityReport | None = None, damage: DamageAnalysis | None = None) -> list[Item]:
    """``size`` items (fewer when the dataset is smaller) in stratum order, with texts and QE scores; ``damage``
    (beirx report's evidence for this translation) adds the damage stratum, drawn by its chosen signal from
    ``quality``'s rows."""
    if size < 1:
        raise BeirxError(f"the sample needs at least one item, got {size}")
    if damage is not None and quality is None:
        raise BeirxError("a damage-aimed stratum needs the quality report its signal comes from (--quality)")
    want = quotas(size, quality is not None, damage is not None)
    picked: dict[tuple[str, str], str] = {}
    if damage is not None:
        picked.update((key, "damage") for key in aimed(translated, quality, damage, want["damage"]))
    carry = want["damage"] - len(picked)
    if quality is not None:
        fields = [f for f in ("queries", "corpus") if f in quality.fields]
        worst = (key for key in ((row["field"], row["id"]) for row in
                                 quality.worst(want["worst"] + len(picked), fields)) if key not in picked)
        for key in list(worst)[:want["worst"]]:
            picked[key] = "worst"
    rng = random.Random(seed)
    carry += want["worst"] - sum(1 for stratum in picked.values() if stratum == "worst")
    for stratum, field in (("queries", "queries"), ("documents", "corpus")):
        drawn = _reservoir(_keys(translated, field), want[stratum], rng, set(picked))
        carry += want[stratum] - len(drawn)
        picked.update((key, stratum) for key in drawn)
    everything = _reservoir(_keys(translated, "queries", "corpus"), want["random"] + carry, rng, set(picked))
    picked.update((key, "random") for key in everything)
    if len(picked) < size:
        log.info("the translation has only %d items to review; the sample has them all", len(picked))
    return _with_texts(source, translated, picked, quality)


def _with_texts(source: BeirDataset, translated: BeirDataset, picked: dict[tuple[str, str], str],
                quality: QualityReport | None) -> list[Item]:
    """Items in stratum order (then field, ID) with both texts, read in one streaming pass per file."""
    texts: dict[tuple[str, str], dict[str, str]] = {key: {} for key in picked}
    for side, dataset in (("source", source), ("translation", translated)):
        for field in ("queries", "corpus"):
            for record in _records(dataset, field):
                found = texts.get((field, record.id))
                if found is not None:
                    found[side] = record.text if field == "queries" else record.joined()
                    found["title"] = getattr(record, "title", "")  # the translation's: read last
    unmatched = [key for key in picked if "translation" not in texts[key] or not texts[key].get("source", "").strip()]
    if unmatched:
        log.warning("%d sampled items are missing from one side or have no source text (e.g. %s %s); they are left "
                    "out", len(unmatched), *unmatched[0])
    order = sorted((k for k in picked if k not in unmatched), key=lambda k: (STRATA.index(picked[k]), k))
    scores: dict[tuple[str, str], dict[str, float | None]] = {}
    if quality is not None:  # one streaming pass over the sidecar, keeping the sampled rows' scores
        scores = {(row["field"], row["id"]): row["scores"] for row in quality.rows()
                  if (row["field"], row["id"]) in texts}
    return [Item(position, *key, picked[key], texts[key]["source"], texts[key]["translation"], texts[key]["title"],
                 scores.get(key, {})) for position, key in enumerate(order, 1)]
