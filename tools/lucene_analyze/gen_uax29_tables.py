"""Generate beirx/language_packs/uax29_tables.py: the character classes of Lucene's StandardTokenizer.

Lucene 8.7's StandardTokenizerImpl.jflex (JFlex, ``%unicode 9.0`` plus Unicode Emoji 11.0 data) is a
grammar over a dozen character classes (Word_Break values, a few scripts, Line_Break=Complex_Context,
emoji properties). beirx re-states that grammar as a stdlib ``re`` pattern (beirx/language_packs/
tokenizer.py); this script writes the classes it needs as ``re`` character-class bodies so the runtime
needs no third-party regex engine.

The classes come from the ``regex`` module's Unicode database (a newer Unicode than Lucene's 9.0);
two corrections bring them back to what Lucene 8.7 sees:

* Emoji_Modifier (skin tones) was its own Word_Break value ``E_Modifier`` in Unicode 9, not ``Extend``.
* ``lucene87_overrides.txt`` (beside this script): code point ranges where real Lucene 8.7 disagrees,
  with the character kind Lucene gives them, as found by ``probe_codepoints.py`` -- mostly characters
  assigned after Unicode 9.0 (Lucene: plain "Other") and symbols that were Extended_Pictographic in
  Emoji 11.0 (Lucene: one-character emoji tokens).

Run:  python tools/lucene_analyze/gen_uax29_tables.py > beirx/language_packs/uax29_tables.py
then check with probe_codepoints.py (0 disagreeing code points).
"""

from __future__ import annotations

from pathlib import Path

import regex

OVERRIDES = Path(__file__).with_name("lucene87_overrides.txt")
# Character kind (as named in lucene87_overrides.txt) -> the classes a code point of that kind belongs to.
KIND_CLASSES = {
    "OTHER": (), "EXTEND": ("EXTEND_FORMAT_ZWJ",), "ALETTER": ("AHLETTER",),
    "HEBREW": ("AHLETTER", "HEBREW_LETTER"), "NUMERIC": ("NUMERIC",), "KATAKANA": ("KATAKANA",),
    "MIDLETTER": ("MID_LETTER",), "MIDNUMLET": ("MID_LETTER", "MID_NUMERIC"), "MIDNUM": ("MID_NUMERIC",),
    "EXTENDNUMLET": ("EXTEND_NUM_LET",), "EMOJI": ("EMOJI_CHAR",), "HAN": ("HAN",),
    "HIRAGANA": ("HIRAGANA",), "COMPLEX_CONTEXT": ("COMPLEX_CONTEXT",),
}

# name -> (regex-module class, description); the set algebra below mirrors the .jflex macros.
PROPERTIES = {
    "EXTEND_FORMAT_ZWJ": r"[\p{WB=Extend}\p{WB=Format}\p{WB=ZWJ}]",
    "AHLETTER": r"[\p{WB=ALetter}\p{WB=Hebrew_Letter}]",
    "HEBREW_LETTER": r"\p{WB=Hebrew_Letter}",
    "NUMERIC": r"[\p{WB=Numeric}[\p{Block=Halfwidth_And_Fullwidth_Forms}&&\p{Nd}]]",
    "KATAKANA": r"\p{WB=Katakana}",
    "MID_LETTER": r"[\p{WB=MidLetter}\p{WB=MidNumLet}\p{WB=Single_Quote}]",
    "MID_NUMERIC": r"[\p{WB=MidNum}\p{WB=MidNumLet}\p{WB=Single_Quote}]",
    "EXTEND_NUM_LET": r"\p{WB=ExtendNumLet}",
    "SINGLE_QUOTE": r"\p{WB=Single_Quote}",
    "DOUBLE_QUOTE": r"\p{WB=Double_Quote}",
    "REGIONAL_INDICATOR": r"\p{WB=Regional_Indicator}",
    "COMPLEX_CONTEXT": r"\p{Line_Break=Complex_Context}",
    "HAN": r"\p{Script=Han}",
    "HIRAGANA": r"\p{Script=Hiragana}",
    "EMOJI_MODIFIER": r"\p{Emoji_Modifier}",
    "EMOJI_MODIFIER_BASE": r"\p{Emoji_Modifier_Base}",
    # EmojiChar = Extended_Pictographic | (Emoji - (Regional_Indicator | [0-9#*] | accidental | Emoji_Modifier))
    "EMOJI_CHAR": r"[\p{Extended_Pictographic}[\p{Emoji}--[\p{WB=Regional_Indicator}0-9#*\u00a9\u00ae\u2122\u3030\u303d\p{Emoji_Modifier}]]]",
}


def code_points(pattern: str) -> set[int]:
    rx = regex.compile(pattern, regex.V1)
    return {cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and rx.match(chr(cp))}


def ranges(cps: set[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def escape(cp: int) -> str:
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def class_body(cps: set[int]) -> str:
    return "".join(escape(a) if a == b else f"{escape(a)}-{escape(b)}" for a, b in ranges(cps))


def read_overrides(path: Path) -> dict[int, str]:
    kinds: dict[int, str] = {}
    for line in path.read_text(encoding="ascii").splitlines():
        if line and not line.startswith("#"):
            span, kind = line.split()
            first, last = (int(x, 16) for x in span.split("-"))
            kinds.update(dict.fromkeys(range(first, last + 1), kind))
    return kinds


def main() -> None:
    classes = {name: code_points(pattern) for name, pattern in PROPERTIES.items()}
    classes["EXTEND_FORMAT_ZWJ"] -= classes["EMOJI_MODIFIER"]  # Unicode 9: WB=E_Modifier, not Extend
    overrides = read_overrides(OVERRIDES) if OVERRIDES.exists() else {}
    for cps in classes.values():
        cps.difference_update(overrides)
    for cp, kind in overrides.items():
        for name in KIND_CLASSES[kind]:
            classes[name].add(cp)
    # Emoji that are also letters (Ⓜ, ℹ, 🅰...): the tokenizer must choose between word and emoji rules.
    emoji_start = classes["EMOJI_CHAR"] | classes["EMOJI_MODIFIER_BASE"] | classes["EMOJI_MODIFIER"]
    classes["LETTER_EMOJI"] = emoji_start & classes["AHLETTER"]
    classes["NON_LETTER_EMOJI"] = emoji_start - classes["AHLETTER"]
    # Fast path (tokenizer.py): text without any COMPLEX character is tokenized by a small pattern over
    # SIMPLE_LETTER / NUMERIC runs joined by Mid characters.
    classes["SIMPLE_LETTER"] = classes["AHLETTER"] - classes["HEBREW_LETTER"] - classes["LETTER_EMOJI"]
    classes["COMPLEX"] = (classes["EXTEND_FORMAT_ZWJ"] | classes["EXTEND_NUM_LET"] | classes["KATAKANA"]
                          | classes["HEBREW_LETTER"] | classes["HAN"] | classes["HIRAGANA"]
                          | classes["COMPLEX_CONTEXT"] | emoji_start | classes["REGIONAL_INDICATOR"])
    print('"""Character classes of Lucene 8.7\'s StandardTokenizer (UAX#29, Unicode 9.0) as ``re`` class bodies.')
    print()
    print("GENERATED by tools/lucene_analyze/gen_uax29_tables.py -- do not edit by hand; see that script for")
    print("how the classes were derived and checked against real Lucene.")
    print('"""')
    print()
    for name, cps in classes.items():
        print(f'{name} = r"{class_body(cps)}"')
        print()


if __name__ == "__main__":
    main()
