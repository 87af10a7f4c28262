"""Turn a text into what the backend must translate, and put the translations back in its place.

A text becomes a list of *parts*: verbatim strings (whitespace between sentences, protected tokens,
segments without a letter such as ``2005`` or ``(1)``) and :class:`Unit` s, the segments to translate.
:func:`render` joins the parts with the translations in the original order, so layout, numbers-only
segments and empty texts survive unchanged. Segments without a letter are copied rather than
translated: there is nothing to translate and NMT models tend to invent text for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from beirx.translate.placeholders import Verbatim, unmask
from beirx.translate.segment import split_long, split_sentences

_LETTER = re.compile(r"[^\W\d_]")
_PLACEHOLDER = re.compile(r"⟦\d+⟧")


@dataclass(frozen=True, slots=True)
class Unit:
    """One segment to translate: ``masked`` goes to the backend; ``tokens`` fill its placeholders."""

    source: str
    masked: str
    tokens: tuple[str, ...] = ()


Part = str | Unit


class Planner:
    """Segments texts of one source language for one backend configuration; counts what it did."""

    def __init__(self, lang: str, mode: str, kinds: tuple[str, ...], max_tokens: int | None,
                 count_tokens: Callable[[str], int]):
        self.lang = lang
        self.mode = mode
        self.verbatim = Verbatim(kinds)
        self.fallback_verbatim = Verbatim(kinds if mode == "placeholders" else ())
        self.max_tokens = max_tokens
        self._count = count_tokens
        self.long_sentences = 0  # sentences that had to be cut to fit the model

    def plan(self, text: str) -> list[Part]:
        """The parts of ``text`` (empty text: no parts)."""
        parts: list[Part] = []
        for sentence, is_segment in split_sentences(text, self.lang):
            if not is_segment:
                parts.append(sentence)
            elif self.mode == "split":
                self._pieces(parts, self.verbatim.split_around(sentence), mask=False)
            else:
                self._pieces(parts, [(sentence, True)], mask=self.mode == "placeholders")
        return parts

    def fallback(self, unit: Unit) -> list[Part]:
        """Parts for a unit whose translation lost a placeholder: split around its protected tokens."""
        parts: list[Part] = []
        self._pieces(parts, self.fallback_verbatim.split_around(unit.source), mask=False)
        return parts

    def _pieces(self, parts: list[Part], pieces: list[tuple[str, bool]], mask: bool) -> None:
        for piece, is_segment in pieces:
            if not is_segment or not _LETTER.search(piece):
                parts.append(piece)
                continue
            count = (lambda s: self._count(self.verbatim.mask(s)[0])) if mask else self._count
            cut = split_long(piece, self.max_tokens, count) if self.max_tokens else [(piece, True)]
            self.long_sentences += sum(1 for _, seg in cut if seg) > 1
            for sub, sub_is_segment in cut:
                if not sub_is_segment:
                    parts.append(sub)
                    continue
                masked, tokens = self.verbatim.mask(sub) if mask else (sub, ())
                parts.append(Unit(sub, masked, tokens) if _LETTER.search(_PLACEHOLDER.sub("", masked)) else sub)


def units(parts: list[Part]):
    return (p for p in parts if isinstance(p, Unit))


def render(parts: list[Part], translations: dict[str, str], fallbacks: dict[Unit, list[Part]]) -> str:
    """Join ``parts`` with their translations; a unit in ``fallbacks`` is rendered from its fallback parts."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif part in fallbacks:
            out.append(render(fallbacks[part], translations, fallbacks))
        else:
            out.append(unmask(translations[part.masked], part.tokens))
    return "".join(out)


def lost_placeholders(unit: Unit, translations: dict[str, str]) -> bool:
    """Whether the backend dropped, repeated or invented a placeholder of ``unit``."""
    return bool(unit.tokens) and unmask(translations[unit.masked], unit.tokens) is None
