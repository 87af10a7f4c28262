"""The quality report's format 3 (``beirx.quality/3``), kept to read old reports: it held every row's scores
(``fields.<field>.rows[score][id]``) and flag reasons (``fields.<field>.flagged[id]``) inside ``quality.json``.
Format 4 moves them to the streamed sidecar ``rows.jsonl`` (:mod:`beirx.artifacts.quality_rows`); a format-3
file loads with its rows held in memory (they were small enough to have been written inline), in the sidecar's
record layout, and saving it writes the sidecar.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from beirx.artifacts.base import build, optional
from beirx.artifacts.quality_rows import mean_percentile_ranks, record

SCHEMA = "beirx.quality/3"


@dataclass(kw_only=True)
class InlineRows:
    """The two per-row entries of a format-3 field, checked as the file spells them."""

    rows: dict[str, dict[str, float | None]] = optional("rows[score][item id]", default_factory=dict)
    flagged: dict[str, list[str]] = optional("flag reasons by item id", default_factory=dict)


def split(data: dict[str, Any], source: str, schema: str) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """A format-3 report as a format-``schema`` dict without its rows, and the rows as sidecar records by field."""
    data = copy.copy(data)
    fields = data.get("fields")
    held: dict[str, list[dict]] = {}
    if isinstance(fields, dict):
        data["fields"] = fields = {name: dict(entry) if isinstance(entry, dict) else entry
                                   for name, entry in fields.items()}
        higher = {name: info.get("higher_is_better", True) for name, info in (data.get("scores") or {}).items()
                  if isinstance(info, dict)}
        for name, entry in fields.items():
            if not isinstance(entry, dict):
                continue
            inline: InlineRows = build(InlineRows, {k: entry.pop(k) for k in ("rows", "flagged") if k in entry},
                                       source, f"fields.{name}")
            held[name] = records(name, inline.rows, inline.flagged, higher)
    return {**data, "schema_version": schema}, held


def records(field: str, rows: dict[str, dict[str, float | None]], flagged: dict[str, list[str]],
            higher_is_better: dict[str, bool]) -> list[dict]:
    """Sidecar records of one field's inline rows (every row with a score or a flag, by ID)."""
    ranks = mean_percentile_ranks(rows, higher_is_better)
    ids = sorted({i for found in rows.values() for i in found} | set(flagged))
    return [record(field, i, list(flagged.get(i, [])), ranks.get(i),
                   {score: found[i] for score, found in rows.items() if i in found}) for i in ids]
