"""Turn a text into what the backend must translate, and put the translations back in its place.

A text becomes a list of *parts*: verbatim strings (whitespace between sentences, protected tokens,
segments without a letter such as ``2005`` or ``(1)``) and :class:`Unit` s, the segments to translate.
:func:`render` joins the parts with the translations in the original order, so layout, numbers-only
segments and empty texts survive unchanged. Segments without a letter are copied rather than
translated: there is nothing to translate and NMT models tend to invent text for them.

Sentence-level backends (NMT, Apertium, cloud MT) get sentences. LLM backends get *document units*
(:mod:`beirx.translate.planning.document_units`): with a token budget (``unit_tokens``) :meth:`Planner.plan_fields` puts
a record's title and paragraphs, one per line, into one unit while they fit, and splits only at paragraph,
then sentence, boundaries beyond it; each line of such a unit is a :class:`Slice` part of its field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from beirx.translate.planning.document_units import lines, mark
from beirx.translate.planning.placeholders import PLACEHOLDER, Verbatim, unmask
from beirx.translate.planning.segment import add_segment, split_long, split_sentences

_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True, slots=True)
class Unit:
    """One segment to translate: ``masked`` goes to the backend; ``tokens`` fill its placeholders."""

    source: str
    masked: str
    tokens: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Slice:
    """Line ``index`` of a multi-line (document) unit's translation, put back where that line came from."""

    unit: Unit
    index: int


Part = str | Unit | Slice


class Planner:
    """Segments texts of one source language for one backend configuration; counts what it did.

    ``unit_tokens`` (LLM backends): plan document units of at most this many tokens instead of sentences
    (``one_line_units``: never put two paragraphs in one unit, for prompts that take a single line).
    """

    def __init__(self, lang: str, mode: str, kinds: tuple[str, ...], max_tokens: int | None,
                 count_tokens: Callable[[str], int], unit_tokens: int | None = None, one_line_units: bool = False):
        self.lang = lang
        self.mode = mode
        self.verbatim = Verbatim(kinds)
        self.fallback_verbatim = Verbatim(kinds if mode == "placeholders" else ())
        self.max_tokens = max_tokens
        self._count = count_tokens
        self.unit_tokens = unit_tokens
        self.one_line_units = one_line_units
        self.long_sentences = 0  # sentences that had to be cut to fit the model

    def plan_fields(self, texts: list[str], kind: str) -> list[list[Part]]:
        """The parts of each of a record's texts (a document: title, text; a query: text). Sentence
        backends plan each text on its own; with ``unit_tokens`` the texts share document units."""
        if not self.unit_tokens:
            return [self.plan(text) for text in texts]
        fields: list[list] = [[] for _ in texts]
        blocks: list[tuple[list, int, str]] = []  # (field's parts, position, paragraph)
        for parts, text in zip(fields, texts):
            for piece, is_paragraph in _paragraphs(text):
                if is_paragraph and _LETTER.search(piece):
                    blocks.append((parts, len(parts), piece))
                    parts.append(None)  # filled below
                else:
                    parts.append(piece)
        for group in self._pack(blocks):
            if len(group) == 1 and self._count(group[0][2]) > self.unit_tokens:
                parts, position, paragraph = group[0]
                parts[position] = self._sentence_units(paragraph, kind)
                continue
            unit = self._unit([paragraph for _, _, paragraph in group], kind)
            for index, (parts, position, _) in enumerate(group):
                parts[position] = [Slice(unit, index) if len(group) > 1 else unit]
        return [[p for part in parts for p in (part if isinstance(part, list) else [part])] for parts in fields]

    def _pack(self, blocks: list[tuple[list, int, str]]) -> list[list[tuple[list, int, str]]]:
        """Consecutive paragraphs grouped while their tokens stay within the budget."""
        groups: list[list] = []
        used = 0
        for block in blocks:
            size = self._count(block[2])
            if groups and not self.one_line_units and used + size <= self.unit_tokens:
                groups[-1].append(block)
                used += size
            else:
                groups.append([block])
                used = size
        return groups

    def _sentence_units(self, paragraph: str, kind: str) -> list[Part]:
        """A paragraph over the budget: its sentences packed into units within it (a sentence over it is cut
        by :func:`split_long`); the whitespace between units is kept verbatim."""
        pieces: list[tuple[str, bool]] = []
        for sentence, is_segment in split_sentences(paragraph, self.lang):
            if is_segment and self._count(sentence) > self.unit_tokens:
                self.long_sentences += 1
                pieces += split_long(sentence, self.unit_tokens, self._count)
            else:
                pieces.append((sentence, is_segment))
        parts: list[Part] = []
        run: list[tuple[str, bool]] = []  # the pieces of the unit being packed
        used = 0

        def flush():
            trailing = []
            while run and not run[-1][1]:  # whitespace after the last sentence stays outside the unit
                trailing.insert(0, run.pop()[0])
            if run:
                parts.append(self._unit(["".join(text for text, _ in run)], kind))
            parts.extend(trailing)
            run.clear()

        for text, is_segment in pieces:
            if not is_segment and not run:
                parts.append(text)
                continue
            size = self._count(text) if is_segment else 0
            if is_segment and run and used + size > self.unit_tokens:
                flush()
                used = 0
            run.append((text, is_segment))
            used += size
        flush()
        return parts

    def _unit(self, paragraphs: list[str], kind: str) -> Unit:
        source = "\n".join(paragraphs)
        masked, tokens = self.verbatim.mask(source) if self.mode == "placeholders" else (source, ())
        return Unit(source, mark(kind, masked), tokens)

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
                parts.append(Unit(sub, masked, tokens) if _LETTER.search(PLACEHOLDER.sub("", masked)) else sub)


def _paragraphs(text: str) -> list[tuple[str, bool]]:
    """``(piece, is_paragraph)``: stripped lines, and the whitespace around them kept verbatim."""
    pieces: list[tuple[str, bool]] = []
    for line in re.split(r"(\s*[\r\n\u2028\u2029\x0b\x0c\x85]\s*)", text):
        if line.strip() and "\n" not in line and "\r" not in line:
            add_segment(pieces, line)
        elif line:
            pieces.append((line, False))
    return pieces


def units(parts: list[Part]):
    """The units of ``parts``, each once (a multi-line unit by its first line; it may span two fields)."""
    return (p if isinstance(p, Unit) else p.unit for p in parts
            if isinstance(p, Unit) or (isinstance(p, Slice) and p.index == 0))


def render(parts: list[Part], translations: dict[str, str], fallbacks: dict[Unit, list[Part]]) -> str:
    """Join ``parts`` with their translations; a unit in ``fallbacks`` is rendered from its fallback parts."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Slice):
            out.append(lines(unmask(translations[part.unit.masked], part.unit.tokens))[part.index])
        elif part in fallbacks:
            out.append(render(fallbacks[part], translations, fallbacks))
        else:
            out.append(unmask(translations[part.masked], part.tokens))
    return "".join(out)


def translate_texts(translator, texts: list[str]) -> list[str]:
    """``texts`` through a sentence-level ``translator``, segmented exactly as the pipeline segments (so a
    model with an input limit never truncates a long text), each unique sentence sent once."""
    planner = Planner(translator.src, "off", (), translator.max_segment_tokens(), translator.count_tokens)
    plans = [planner.plan(text) for text in texts]
    unique = sorted({u.masked for parts in plans for u in units(parts)}, key=lambda s: (len(s), s))
    translations: dict[str, str] = {}
    for start in range(0, len(unique), translator.max_batch_size):
        batch = unique[start:start + translator.max_batch_size]
        translations.update(zip(batch, translator.translate_batch(batch)))
    return [render(parts, translations, {}) for parts in plans]


def lost_placeholders(unit: Unit, translations: dict[str, str]) -> bool:
    """Whether the backend dropped, repeated or invented a placeholder of ``unit``."""
    return bool(unit.tokens) and unmask(translations[unit.masked], unit.tokens) is None
