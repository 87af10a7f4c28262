"""Typed records shared by every stage (as in ir_datasets).

Translation changes only ``title``/``text``; the ``id`` fields flow through every stage untouched.
Qrels are ``{query_id: {doc_id: relevance}}`` exactly as pytrec_eval takes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class Doc:
    """One corpus document: BEIR's ``{"_id", "title", "text", "metadata"}`` line."""

    id: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def with_text(self, text: str, title: str | None = None) -> "Doc":
        """Return a copy with new text (and title), keeping the ID and metadata."""
        return replace(self, text=text, title=self.title if title is None else title)

    def joined(self, sep: str = " ") -> str:
        """Title and text joined as BEIR's dense models see them (title first, skipped when empty)."""
        return f"{self.title}{sep}{self.text}" if self.title else self.text


@dataclass(frozen=True, slots=True)
class Query:
    """One query: BEIR's ``{"_id", "text", "metadata"}`` line."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def with_text(self, text: str) -> "Query":
        return replace(self, text=text)
