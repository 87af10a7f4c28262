"""Lucene's StandardTokenizer (UAX#29 word boundaries) + LowerCaseFilter as stdlib ``re`` patterns.

Why: BM25 numbers are only comparable with Elasticsearch/Lucene (BEIR-PL reports ES BM25) when the
Python side splits text exactly as Lucene does. The pattern below re-states the rules of Lucene 8.7's
``StandardTokenizerImpl.jflex`` (Unicode Standard Annex #29, rules WB4-WB13b, plus Lucene's emoji,
South-East-Asian and ideographic rules) over the character classes in :mod:`uax29_tables`:

* word = ExtendNumLet* core (ExtendNumLet+ core)* ExtendNumLet*, where core is a Katakana run or a
  concatenation of letter runs joined by MidLetter/MidNumLet/' (``can't``, ``U.S``, ``a:b``), number
  runs joined by MidNum/MidNumLet (``3.14``, ``1,000``) and Hebrew quote forms (WB5-WB13b);
* emoji sequences (TR#51: ZWJ, modifier, keycap, flag and tag sequences) are tokens;
* runs of Line_Break=Complex_Context characters (Thai, Lao, Khmer, Myanmar) are one token;
* each Han ideograph and each Hiragana character is its own token;
* everything else (punctuation, symbols, spaces) separates tokens and is dropped.

Every class is followed by WB4's (Extend | Format | ZWJ)*. JFlex takes the longest match among its
rules; ``re`` takes the first alternative that matches, so the alternatives are ordered (and guarded
by lookaheads) to make the first match the longest one.

Speed: ``re`` tests a character class with a bitmap for the BMP but scans supplementary-plane ranges
one by one, so each pattern exists twice -- with the full classes, and with their BMP part only for
text without supplementary characters (nearly all text). Text without any "complex" character
(see ``_simple_token``) takes a much smaller pattern with the same result.

With the compiled extension, text that takes the small pattern is tokenized and lowercased in one C
call (``beirx._speedups.simple_tokenize``: the same scan over a 64K table of the BMP classes below).

Lowercasing follows Java's per-code-point ``Character.toLowerCase`` (what LowerCaseFilter does), not
Python's full case mapping: U+0130 İ -> ``i`` (Python: ``i̇``) and Σ -> ``σ`` (Python turns a
word-final Σ into ``ς``); and, as in Lucene, after tokenization. Lucene counts a token's length in UTF-16 code units and cuts tokens longer
than ``max_token_length`` (255) into pieces of that size; :func:`tokenize` does the same.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

from beirx.speedups import native

from . import uax29_tables

MAX_TOKEN_LENGTH = 255  # StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH, Elasticsearch's standard tokenizer default

_SUPPLEMENTARY = re.compile("[\U00010000-\U0010ffff]")
_JAVA_LOWER = str.maketrans({"\u0130": "i", "\u03a3": "\u03c3"})
# A token longer than MAX_TOKEN_LENGTH UTF-16 units needs a run of at least 128 non-space code points.
_LONG_RUN = re.compile(r"\S{128,}")
_RANGE = re.compile(r"\\u[0-9a-f]{4}(?:-\\u[0-9a-f]{4})?|\\U[0-9a-f]{8}(?:-\\U[0-9a-f]{8})?")


class _Classes:
    """The ``uax29_tables`` class bodies, optionally restricted to the BMP."""

    def __init__(self, bmp_only: bool) -> None:
        self.bmp_only = bmp_only

    def __getattr__(self, name: str) -> str:
        body = getattr(uax29_tables, name)
        if self.bmp_only:
            body = "".join(r for r in _RANGE.findall(body) if not r.startswith("\\U"))
        # "[]" is not a valid class: an empty BMP part becomes a character BMP-only text cannot hold.
        return body or "\\U0010ffff"


def _patterns(t: _Classes) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """(full token pattern, complex-character detector, fast pattern for text without those)."""
    ex = f"[{t.EXTEND_FORMAT_ZWJ}]*"

    def cls(body: str) -> str:
        return f"[{body}]{ex}"

    # WB4 inside emoji sequences leaves out the presentation selectors U+FE0E/U+FE0F (matched
    # explicitly); in ZWJ sequences also a ZWJ that starts the next element (JFlex's longest match
    # would go on with that element, ``re`` would stop after swallowing the ZWJ).
    ex_sans_pres = f"(?:(?![\\ufe0e\\ufe0f])[{t.EXTEND_FORMAT_ZWJ}])*"
    ex_sans_pres_zwj = (f"(?:(?![\\ufe0e\\ufe0f\\u200d])[{t.EXTEND_FORMAT_ZWJ}]"
                        f"|\\u200d(?!\\u200d*[{t.EMOJI_CHAR}{t.EMOJI_MODIFIER_BASE}]|[{t.EMOJI_MODIFIER}]))*")

    ah, heb, num, kat = cls(t.AHLETTER), cls(t.HEBREW_LETTER), cls(t.NUMERIC), cls(t.KATAKANA)
    midl, midn, enl = cls(t.MID_LETTER), cls(t.MID_NUMERIC), cls(t.EXTEND_NUM_LET)
    sq, dq = cls(t.SINGLE_QUOTE), cls(t.DOUBLE_QUOTE)

    # A Hebrew letter followed by a quote (WB7a-c) is not swallowed by a letter run joined without a
    # Mid character: the run stops and the Hebrew-quote alternative takes it, as the longest match would.
    hebq = f"{heb}(?:{sq}|{dq}{heb})"
    core = (f"(?:{kat}(?:(?:{enl})*{kat})*"
            f"|(?:{hebq}"
            f"|{num}(?:(?:(?:{enl})*|{midn}){num})*"
            f"|{ah}(?:{midl}{ah}|(?:{enl})*(?!{hebq}){ah})*)+)")
    word = f"(?:{enl})*{core}(?:(?:{enl})+{core})*(?:{enl})*"

    zwj = "\\u200d"
    emoji_char = f"[{t.EMOJI_CHAR}]{ex_sans_pres_zwj}"
    emoji_mod = f"[{t.EMOJI_MODIFIER}]{ex_sans_pres_zwj}"
    emoji_mod_base = f"[{t.EMOJI_MODIFIER_BASE}]{ex_sans_pres_zwj}"
    # Modifier sequences first: for a modifier base that is also an emoji character JFlex keeps the longer match.
    emoji_unit = f"(?:(?:{zwj}*{emoji_mod_base})?{emoji_mod}|{zwj}*{emoji_char}\\ufe0f?)"
    emoji = (f"{emoji_unit}(?:[\\U000e0020-\\U000e007e]+\\U000e007f|(?:{zwj}{emoji_unit})*)"
             f"|[0-9#*]{ex_sans_pres}\\ufe0f?\\u20e3{ex_sans_pres}"
             f"|[{t.REGIONAL_INDICATOR}]{ex}[{t.REGIONAL_INDICATOR}]{ex}")
    # An emoji ZWJ sequence that starts with a letter-like emoji (Ⓜ ZWJ ©) is longer than the word match.
    letter_emoji_zwj = (f"(?=[{t.LETTER_EMOJI}]{ex_sans_pres_zwj}\\ufe0f?{zwj}(?={zwj}*[{t.NON_LETTER_EMOJI}]){emoji_unit})"
                        f"{emoji_unit}(?:{zwj}{emoji_unit})*")
    south_east_asian = f"(?:{cls(t.COMPLEX_CONTEXT)})+"
    ideographic = f"{cls(t.HAN)}|{cls(t.HIRAGANA)}"
    token = re.compile(f"{letter_emoji_zwj}|{word}|{emoji}|{south_east_asian}|{ideographic}")

    # Without Extend/Format/ZWJ, ExtendNumLet, Katakana, Hebrew, Han, Hiragana, South-East-Asian, emoji
    # and regional-indicator characters the grammar reduces to runs of letters and digits (WB5, WB8-10)
    # joined by a MidLetter/MidNumLet/' between two letters (WB6-7) or a MidNum/MidNumLet/' between two
    # digits (WB11-12); a one-character look-around suffices as no Extend character can sit in between.
    complex_char = re.compile(f"[{t.COMPLEX}]")
    letter, digit, run = f"[{t.SIMPLE_LETTER}]", f"[{t.NUMERIC}]", f"[{t.SIMPLE_LETTER}{t.NUMERIC}]+"
    simple = re.compile(f"{run}(?:(?:(?<={letter})[{t.MID_LETTER}](?={letter})"
                        f"|(?<={digit})[{t.MID_NUMERIC}](?={digit})){run})*")
    return token, complex_char, simple


@lru_cache(maxsize=2)
def _compiled(bmp_only: bool) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    return _patterns(_Classes(bmp_only))  # ~0.3 s each, so only on first use


def java_lower(text: str) -> str:
    """Lowercase like Lucene's LowerCaseFilter (Java ``Character.toLowerCase`` per code point)."""
    if "\u0130" in text or "\u03a3" in text:
        text = text.translate(_JAVA_LOWER)
    return text.lower()


def _utf16_len(token: str) -> int:
    return len(token) + sum(1 for ch in token if ord(ch) > 0xFFFF)


def _split_long(text: str, token_pattern: re.Pattern) -> list[str]:
    """Tokenize text holding a token over MAX_TOKEN_LENGTH: Lucene emits its first 255 UTF-16 units
    and resumes scanning right after them."""
    tokens: list[str] = []
    pos = 0
    while (match := token_pattern.search(text, pos)) is not None:
        token = match.group()
        if _utf16_len(token) <= MAX_TOKEN_LENGTH:
            tokens.append(token)
            pos = match.end()
            continue
        cut = units = 0
        while units + (2 if ord(token[cut]) > 0xFFFF else 1) <= MAX_TOKEN_LENGTH:
            units += 2 if ord(token[cut]) > 0xFFFF else 1
            cut += 1
        tokens.append(token[:cut])
        pos = match.start() + cut
    return tokens


def tokenize_raw(text: str) -> list[str]:
    """StandardTokenizer tokens of ``text`` in their original case."""
    token, complex_char, simple = _compiled(_SUPPLEMENTARY.search(text) is None)
    if len(text) >= 128 and _LONG_RUN.search(text):
        return _split_long(text, token)
    if complex_char.search(text) is None:
        return simple.findall(text)
    return token.findall(text)


@lru_cache(maxsize=1)
def simple_classes() -> bytes:
    """One byte per BMP character: 1 letter, 2 digit, 4 MidLetter, 8 MidNum, 16 "complex" (the classes of
    the small pattern in :func:`_patterns`), for ``beirx._speedups.simple_tokenize``."""
    table = bytearray(0x10000)
    for bit, body in ((1, uax29_tables.SIMPLE_LETTER), (2, uax29_tables.NUMERIC), (4, uax29_tables.MID_LETTER),
                      (8, uax29_tables.MID_NUMERIC), (16, uax29_tables.COMPLEX)):
        for escape in _RANGE.findall(body):
            if escape.startswith("\\U"):
                continue
            lo, _, hi = escape.partition("-")
            for cp in range(int(lo[2:], 16), int((hi or lo)[2:], 16) + 1):
                table[cp] |= bit
    return bytes(table)


def tokenize(text: str, compiled: bool = True) -> list[str]:
    """StandardTokenizer + LowerCaseFilter: the lowercased UAX#29 tokens of ``text``.

    Lowercasing must follow tokenization: a few characters change word-break class with case
    (U+24C2 Ⓜ is an emoji, its lowercase ⓜ is not). Tokens hold no U+0020, so one lowercasing
    call over the space-joined tokens does them all. ``compiled=False`` skips the C fast path.
    """
    if compiled and native is not None:
        tokens = native.simple_tokenize(text, simple_classes())
        if tokens is not None:
            return tokens
    tokens = tokenize_raw(text)
    return java_lower(" ".join(tokens)).split(" ") if tokens else tokens


@lru_cache(maxsize=1)
def chunker() -> Callable[[str], list[str]]:
    """A function splitting text at whitespace into pieces that StandardTokenizer tokenizes independently.

    No token contains a separating space and Lucene's scanner restarts after one, so
    ``tokenize_raw(text) == [t for c in split(text) for t in tokenize_raw(c)]`` -- what lets the
    analyzers memoise whole chunks (see pack.py). ``str.split()`` does the work, except around
    "spaces" that can sit inside a token: U+202F NARROW NO-BREAK SPACE is ExtendNumLet.
    """
    spaces = [chr(cp) for cp in range(0x110000) if chr(cp).isspace()]
    joining = "".join(c for c in spaces if tokenize_raw(f"a{c}a") != ["a", "a"] or tokenize_raw(c))
    if not joining:
        return str.split
    splitter = re.compile(f"[^\\S{re.escape(joining)}]+")
    single = joining if len(joining) == 1 else ""  # the usual case: one `in` test, no generator

    def split(text: str) -> list[str]:
        if (single in text) if single else any(c in text for c in joining):
            return [c for c in splitter.split(text) if c]
        return text.split()

    return split
