"""The report's table model: cells that keep their raw value, kind, marks and provenance, so every
renderer (Markdown, LaTeX, CSV, HTML) formats the same numbers the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

DASH = "–"  # an absent figure


@dataclass
class Cell:
    """One table cell. ``kind`` drives formatting; ``sources`` are provenance numbers (see :mod:`.sources`)."""

    value: Any = None
    kind: str = "text"
    mark: str = ""
    bold: bool = False
    sources: tuple[int, ...] = ()

    @property
    def missing(self) -> bool:
        return self.value is None or (isinstance(self.value, float) and math.isnan(self.value))

    def text(self) -> str:
        """The formatted value without marks."""
        return format_value(self.value, self.kind)

    def sort_key(self) -> str:
        """A machine-readable value for sorting (empty when absent)."""
        if self.missing:
            return ""
        return repr(self.value) if isinstance(self.value, (int, float)) else str(self.value)


@dataclass
class Table:
    name: str
    title: str
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str = ""
    numeric: list[bool] = field(default_factory=list)  # right-aligned columns

    def __post_init__(self) -> None:
        if not self.numeric:
            self.numeric = [False] * len(self.columns)


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # unreachable


def format_value(value: Any, kind: str) -> str:
    """Text of a value: metrics with 4 decimals, differences signed, shares as percentages, sizes in IEC units."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if kind == "metric":
        return f"{value:.4f}"
    if kind == "diff":
        return f"{value:+.4f}"
    if kind == "share":
        return f"{100 * value:.1f}%"
    if kind == "p":
        return "<0.0001" if value < 1e-4 else f"{value:.4f}"
    if kind == "corr":
        return f"{value:+.3f}"
    if kind == "seconds":
        return f"{value:.1f}"
    if kind == "ms":
        return f"{value:.2f}"
    if kind == "rate":
        return f"{value:.1f}"
    if kind == "bytes":
        return _bytes(float(value))
    if kind == "int":
        return f"{int(value):,}"
    if kind == "money":
        return f"{value:.2f}"
    return str(value)
