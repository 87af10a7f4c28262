"""What translating a subset costs next to its full dataset: the share of characters, tokens and segments.

A subset (``beirx subset``) records the dataset it was cut from; both are planned like a dry run
(:func:`beirx.translate.pipeline.dry_run`: segmented, nothing translated) with the same translator and options,
and the subset's totals are divided by the full dataset's. Totals count every unique segment whether or not
the translation memory already holds it, so the share does not depend on what was translated before.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from beirx.data.dataset import BeirDataset
from beirx.translate.backends.base import Translator
from beirx.translate.translation_memory import TranslationMemory

log = logging.getLogger(__name__)

TOTALS = ("characters_total", "tokens_total", "segments_unique")


def share_of_full(subset: BeirDataset, translator: Translator, memory: TranslationMemory,
                  subset_plan: dict[str, Any] | None = None, **options: Any) -> dict[str, Any] | None:
    """``{"full_dataset": {...totals}, "share_of_full": {total: fraction}}`` for a subset, None for another dataset
    or when the full dataset is gone or changed (logged). ``subset_plan``: the subset's dry run, if done."""
    from beirx.translate.pipeline import dry_run

    manifest = subset.subset
    if manifest is None:
        return None
    source = Path(manifest.source.path)
    if not source.is_dir():
        log.warning("cannot compare with the full dataset: %s (recorded in subset.json) is not there", source)
        return None
    full = BeirDataset(source, lang=manifest.language)
    if full.checksum() != manifest.source.checksum:
        log.warning("cannot compare with the full dataset: %s changed since the subset was cut", source)
        return None
    mine = subset_plan or dry_run(subset, translator, memory, **options)
    whole = dry_run(full, translator, memory, **options)
    shares = {k: round(mine[k] / whole[k], 6) if whole[k] else None for k in TOTALS}
    full_usd, subset_usd = money(whole), money(mine)
    if full_usd is not None:
        shares["estimated_cost_usd"] = round(subset_usd / full_usd, 6) if full_usd else None
    return {"full_dataset": {"path": str(source), **{k: whole[k] for k in TOTALS},
                             **({} if full_usd is None else {"estimated_cost_usd": full_usd})},
            "share_of_full": shares}


def money(plan: dict[str, Any]) -> float | None:
    """A dry run's list-price estimate in USD (per character for DeepL/Google, per token in and out for an LLM
    with ``price_in``/``price_out``) for what the memory lacks; None for a backend that charges nothing."""
    for key in ("cost", "llm"):
        if plan.get(key) and plan[key].get("estimated_cost_usd") is not None:
            return plan[key]["estimated_cost_usd"]
    return None


def subset_cost(subset: BeirDataset, translator: Translator, **options: Any) -> dict[str, Any] | None:
    """What translating the subset would cost from scratch, and its share of the full dataset's cost: both planned
    as dry runs (nothing sent) against an empty translation memory, so nothing translated before is discounted.
    ``{"translator", "target", "characters", "tokens", "segments", "estimated_cost_usd", "full_dataset",
    "share_of_full"}``; None when the full dataset cannot be compared (logged)."""
    from beirx.translate.pipeline import dry_run

    with tempfile.TemporaryDirectory(prefix="beirx-subset-cost-") as tmp, \
            TranslationMemory(Path(tmp) / "memory.sqlite") as memory:
        mine = dry_run(subset, translator, memory, **options)
        share = share_of_full(subset, translator, memory, mine, **options)
    if share is None:
        return None
    return {"translator": translator.name, "target": translator.tgt, "characters": mine["characters_total"],
            "tokens": mine["tokens_total"], "segments": mine["segments_unique"],
            "estimated_cost_usd": money(mine), **share}
