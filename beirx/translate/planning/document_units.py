"""Translation units of LLM backends: whole queries and documents, marked with their kind.

An LLM keeps a document coherent when it sees all of it, so its unit is a record, not a sentence: a query,
or a document's title and paragraphs *one per line* (:class:`beirx.translate.planning.text_plan.Planner` with a token
budget packs them, and splits only at paragraph, then sentence, boundaries beyond it). The translation must
have the same lines, which puts the title and each paragraph back in its place.

Queries and documents get different prompts (translate a query, never answer it), so the kind travels with
the unit as a prefix of the segment the backend receives (``⟪query⟫ ``, ``⟪document⟫ ``). The translation
memory keys segments by their text, so the same text as a query and as a document is stored twice, each
under its own prompt, as it should be.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Kind(StrEnum):
    """What a unit is (its prompt depends on it); the value is the marker's word."""

    QUERY = "query"
    DOCUMENT = "document"


QUERY, DOCUMENT = Kind.QUERY, Kind.DOCUMENT
_KIND = re.compile(r"⟪(query|document)⟫ ")
_LINE_BREAKS = re.compile(r"\s*\n\s*")


def mark(kind: str, text: str) -> str:
    """The segment an LLM backend receives for a unit of ``kind``."""
    return f"⟪{kind}⟫ {text}"


def unmark(segment: str) -> tuple[str, str]:
    """``(kind, text)`` of a segment; an unmarked one (a caller other than the pipeline) is a document."""
    match = _KIND.match(segment)
    return (Kind(match.group(1)), segment[match.end():]) if match else (DOCUMENT, segment)


def lines(text: str) -> list[str]:
    """The non-empty lines of a translation, stripped (blank lines an LLM adds between paragraphs dropped)."""
    return [line for line in _LINE_BREAKS.split(text.strip()) if line]
