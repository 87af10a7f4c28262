"""Draw the items a review rates: a stratified, seeded sample of (source, translation) pairs.

Four strata, filled in this order and never twice with one item:

- ``worst``: the rows the automatic quality methods rank worst (most flags, then the lowest scores; from
  ``quality.json``'s per-row sidecar, both fields together), so reviewers see what the machine suspects;
- ``queries`` and ``documents``: uniform random draws from each field, so both are judged however unequal
  their sizes (a corpus has thousands of documents per query);
- ``random``: uniform over every row of both fields: with the other random strata, an unbiased picture.

Shares: a quarter each (a third each of the random strata without a quality report); a stratum that
runs out passes its rest on to ``random``. Random draws are reservoir samples (Vitter, 1985, Algorithm R)
over the streamed files with a seeded generator, and the worst rows a bounded heap over the streamed sidecar, so
memory stays bounded by the sample, not the corpus, and the same seed gives the same sample.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator

from beirx.artifacts.quality import QualityReport
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.review.store import Item

log = logging.getLogger(__name__)

STRATA = ("worst", "queries", "documents", "random")


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


def quotas(size: int, with_worst: bool) -> dict[str, int]:
    strata = STRATA if with_worst else STRATA[1:]
    share = size // len(strata)
    out = {s: share if s in strata else 0 for s in STRATA}
    out["random"] += size - share * len(strata)
    return out


def draw(source: BeirDataset, translated: BeirDataset, size: int, seed: int,
         quality: QualityReport | None = None) -> list[Item]:
    """``size`` items (fewer when the dataset is smaller) in stratum order, with texts and QE scores."""
    if size < 1:
        raise BeirxError(f"the sample needs at least one item, got {size}")
    want = quotas(size, quality is not None)
    picked: dict[tuple[str, str], str] = {}
    if quality is not None:
        for row in quality.worst(want["worst"], [f for f in ("queries", "corpus") if f in quality.fields]):
            picked[(row["field"], row["id"])] = "worst"
    rng = random.Random(seed)
    carry = want["worst"] - len(picked)
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
