"""Cut texts into translation segments: sentences, and smaller pieces of sentences a model cannot take.

Why sentences: MT models are trained on sentence pairs and degrade (or, with a token limit, lose the
tail) on whole abstracts; sentences also repeat across a dataset, so the translation memory hits.
Why never truncate: mMARCO cut passages to 64 tokens before translating and silently lost the rest;
here a sentence longer than the model's limit is split again (at a clause boundary nearest its middle,
else at a space, else between characters) until every piece fits.

A text becomes a list of ``(text, is_segment)`` pieces whose texts concatenate back to the input
exactly: segments are stripped and hold no line break; everything else (the whitespace between
sentences, line breaks) is kept verbatim, so reassembly keeps the original layout.

The splitter is rule-based (as Moses' ``split-sentences.perl`` and pySBD): a boundary is a run of
whitespace after ``.``/``!``/``?`` (plus closing quotes or brackets) followed by an upper-case letter,
a digit or an opening quote/bracket, unless the word before the full stop is a known abbreviation of
the source language or an initial (``J. Smith``, ``e.g.``). Line breaks always end a segment;
CJK full stops end one without a space.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Piece = tuple[str, bool]

# Words that take a full stop without ending the sentence (lower-case, without the stop). Kept short
# and conservative: a missed boundary only makes a segment longer; a false one cuts a sentence in two.
_COMMON = {"dr", "prof", "fig", "figs", "vol", "no", "nr", "cf", "vs", "ca", "approx", "al", "eq", "ref", "ed"}
ABBREVIATIONS: dict[str, set[str]] = {
    "en": _COMMON | {"mr", "mrs", "ms", "jr", "sr", "st", "mt", "inc", "ltd", "co", "corp", "dept", "univ", "est",
                     "eqs", "refs", "nos", "pp", "p", "ch", "chap", "sec", "sp", "spp", "ssp", "subsp", "var", "cv",
                     "viz", "resp", "min", "max", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
                     "oct", "nov", "dec", "gen", "col", "capt", "rev", "hon", "mol", "wt", "incl", "dia"},
    "pl": _COMMON | {"np", "tzn", "tj", "mgr", "inż", "hab", "im", "ul", "tys", "mln", "mld", "zł", "godz", "r", "w",
                     "ok", "tzw", "wg", "ww", "str", "rys", "tab", "jw", "ds", "ks", "św", "pkt", "poz", "zob",
                     "por", "gr", "dz", "ust", "art", "lek", "med", "płk", "gen", "mjr", "ppłk", "kpt", "doc"},
    "de": _COMMON | {"bzw", "vgl", "hr", "fr", "abb", "bd", "evtl", "ggf", "inkl", "mio", "mrd", "sog", "str", "tel",
                     "zzgl", "s", "jh", "jhd", "geb", "gest", "lt", "nov", "okt", "dez", "jan", "feb"},
    "es": _COMMON | {"sr", "sra", "srta", "dra", "ud", "uds", "pág", "págs", "núm", "aprox", "av", "avda", "dto",
                     "ej", "art", "cap", "fig", "lic", "ing", "arq", "gral", "cía"},
    "fr": _COMMON | {"m", "mme", "mlle", "mm", "pr", "env", "av", "bd", "chap", "p", "pp", "ex", "éd", "réf",
                     "janv", "févr", "avr", "juill", "sept", "oct", "nov", "déc"},
}

_TERMINAL = r"[.!?…]+[\"'”’»)\]]*"
# A whitespace run that may end a sentence: after terminal punctuation, before a plausible sentence start.
_CANDIDATE = re.compile(r"(?<=[.!?…\"'”’»)\]])(\s+)(?=[\"'“‘«(\[]*[^\W_])")
_CJK_STOP = re.compile(r"(?<=[。！？])(?=\S)")
_END = re.compile(_TERMINAL + "$")
_INITIALS = re.compile(r"^(?:[^\W\d_]\.)*[^\W\d_]$")  # "J", "e.g" (the final stop is stripped already)
_CLAUSE_BREAK = re.compile(r"(?<=[,;:)\]—–])\s+|\s+(?=[(\[—–])")
_SPACE = re.compile(r"\s+")
_WINDOW = 80  # characters before a candidate boundary that decide it (the last word and its punctuation)


def abbreviations(lang: str) -> set[str]:
    """The no-boundary words for ``lang`` (a base code such as ``pt`` for ``pt_BR``); others get a common set."""
    return ABBREVIATIONS.get(lang.split("_")[0].split("-")[0].lower(), _COMMON)


def _is_boundary(left: str, right: str, abbrevs: set[str]) -> bool:
    """Whether a sentence ends between ``left`` and ``right`` (split at a whitespace run)."""
    start = right.lstrip("\"'“‘«([")[:1]
    if not (start.isupper() or start.isdigit()):
        return False
    end = _END.search(left)
    if not end:
        return False
    if re.search(r"[!?…]", end.group(0)):
        return True
    words = left[: end.start()].split()
    if not words:
        return True
    word = words[-1].lstrip("\"'“‘«([").lower()
    if word in abbrevs or _INITIALS.match(word):
        return False
    return not (start.isdigit() and word.isalpha() and len(word) <= 3)  # "p. 12", "ch. 3": likely abbreviations


def split_sentences(text: str, lang: str = "en") -> list[Piece]:
    """``text`` as sentences and the whitespace between them (see the module docstring)."""
    abbrevs = abbreviations(lang)
    pieces: list[Piece] = []
    for line, gap in _lines(text):
        start = 0
        for cut in _cuts(line, abbrevs):
            add_segment(pieces, line[start:cut.start()])
            pieces.append((cut.group(0), False))
            start = cut.end()
        add_segment(pieces, line[start:])
        if gap:
            pieces.append((gap, False))
    return _merge_gaps(pieces)


def _lines(text: str):
    """(line, following line-break run) pairs; line breaks always end a segment."""
    parts = re.split(r"(\s*[\r\n\u2028\u2029\x0b\x0c\x85]\s*)", text)
    for i in range(0, len(parts), 2):
        yield parts[i], parts[i + 1] if i + 1 < len(parts) else ""


def _cuts(line: str, abbrevs: set[str]) -> list[re.Match]:
    """The sentence boundaries of one line, in text order (judged on a window around each candidate)."""
    cuts = [m for m in _CANDIDATE.finditer(line)
            if _is_boundary(line[max(0, m.start() - _WINDOW): m.start()], line[m.end(): m.end() + 8], abbrevs)]
    return sorted(cuts + list(_CJK_STOP.finditer(line)), key=lambda m: m.start())


def add_segment(pieces: list[Piece], text: str) -> None:
    """Append ``text`` as a stripped segment with its outer whitespace as gaps (whitespace only: a gap)."""
    stripped = text.strip()
    if not stripped:
        if text:
            pieces.append((text, False))
        return
    head = text[: len(text) - len(text.lstrip())]
    tail = text[len(text.rstrip()):]
    if head:
        pieces.append((head, False))
    pieces.append((stripped, True))
    if tail:
        pieces.append((tail, False))


def _merge_gaps(pieces: list[Piece]) -> list[Piece]:
    merged: list[Piece] = []
    for text, is_segment in pieces:
        if not text and not is_segment:
            continue
        if merged and not is_segment and not merged[-1][1]:
            merged[-1] = (merged[-1][0] + text, False)
        else:
            merged.append((text, is_segment))
    return merged


def split_long(segment: str, max_tokens: int, count_tokens: Callable[[str], int]) -> list[Piece]:
    """Split ``segment`` until every piece has at most ``max_tokens`` tokens (never drops text).

    Cuts at the clause boundary (after ``,;:`` or a closing bracket, around a dash) nearest the middle
    if one lies in the middle half, else at the space nearest the middle, else at the character
    midpoint (a single huge token); the whitespace at the cut is kept as a gap.
    """
    if count_tokens(segment) <= max_tokens:
        return [(segment, True)]
    size = len(segment)

    def central(match: re.Match) -> float:
        return abs((match.start() + match.end()) / 2 - size / 2)

    inner = [m for m in _CLAUSE_BREAK.finditer(segment) if size / 4 <= (m.start() + m.end()) / 2 <= 3 * size / 4]
    cuts = inner or list(_SPACE.finditer(segment))
    if cuts:
        cut = min(cuts, key=central)
        left, gap, right = segment[: cut.start()], cut.group(0), segment[cut.end():]
    else:
        left, gap, right = segment[: size // 2], "", segment[size // 2:]
    if not left or not right:  # only possible for a lone character over the limit: nothing left to cut
        return [(segment, True)]
    pieces = split_long(left, max_tokens, count_tokens)
    if gap:
        pieces.append((gap, False))
    return pieces + split_long(right, max_tokens, count_tokens)
