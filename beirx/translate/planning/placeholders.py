"""Keep URLs, e-mail addresses, numbers and code-like tokens verbatim through machine translation.

MT systems rewrite what they should copy: NMT models mangle URLs and identifiers, rule-based systems
re-case gene names (Apertium turns ``IL-6`` after "and" into ``iL-6``). Two strategies:

* placeholders: each protected token becomes ``⟦0⟧``, ``⟦1⟧``... before translation and is put back
  afterwards. Only for backends that keep such tokens (``Translator.keeps_placeholders``); a
  translation that lost or duplicated a placeholder is detected (:func:`unmask` returns None) and the
  pipeline falls back to splitting around the tokens for that segment. Masking also makes segments
  that differ only in a number or URL identical, so the translation memory serves them once.
* split-around: the protected tokens are cut out and kept as verbatim pieces; the text between them is
  translated on its own. Works with any backend but cuts sentences, so by default it protects only
  URLs and e-mail addresses (long tokens at which a sentence rarely continues).
"""

from __future__ import annotations

import re

from beirx.translate.planning.segment import add_segment

KINDS = ("url", "email", "number", "code")
MODES = ("auto", "placeholders", "split", "off")
DEFAULT_KINDS = {"placeholders": KINDS, "split": ("url", "email"), "off": ()}

_CLOSERS = ".,;:!?'\"”’»)]}>"
_PATTERNS = {
    "url": r"(?:https?|ftp)://[^\s<>\"]+|www\.[^\s<>\"]+\.[^\s<>\"]+",
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    # 3.5, 1,000, 12:30 as whole tokens (not the digits of "p53", not ordinals such as "2nd").
    "number": r"(?<![\w.,:])[+-]?\d+(?:[.,:]\d+)*(?![\w])",
    # snake_case, camelCase/mRNA, letter-digit mixes (p53, H1N1, CD4+), IL-6/COVID-19, calls such as f(x).
    "code": r"(?<![\w-])(?:\w+_\w+|[a-z]+[A-Z]\w*|(?=[A-Za-z]*\d)(?=\d*[A-Za-z])(?!\d+(?:st|nd|rd|th|s)\b)[A-Za-z0-9]+\+*"
            r"|[A-Z][A-Za-z]*-\d+[A-Za-z]*|\w+\([^\s()]*\))(?![\w-])",
}
#: A placeholder token, ``⟦0⟧``: the one pattern every backend, the planner and the LLM validation use.
PLACEHOLDER = re.compile(r"⟦(\d+)⟧")
_WORD = re.compile(r"\S+")
_MAYBE = re.compile(r"[\d@_(]|://|www\.|[a-z][A-Z]")  # a word without these holds no protected token


def _compile(kinds: tuple[str, ...]) -> re.Pattern | None:
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown verbatim kinds {sorted(unknown)}; choose from {', '.join(KINDS)}")
    return re.compile("|".join(f"(?:{_PATTERNS[k]})" for k in KINDS if k in kinds)) if kinds else None


class Verbatim:
    """Finds the protected tokens of one configuration (``kinds``) in a segment."""

    def __init__(self, kinds: tuple[str, ...]):
        self.kinds = tuple(k for k in KINDS if k in kinds)
        self._pattern = _compile(self.kinds)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Start/end of each protected token, trailing sentence punctuation excluded from URLs."""
        if self._pattern is None or "⟦" in text:  # text that already looks masked is left alone
            return []
        spans = []
        # Only whitespace-separated words that could hold a protected token are searched (the patterns
        # never cross whitespace, and word edges act as the text's edges): much faster than every position.
        for word in _WORD.finditer(text):
            if not _MAYBE.search(word.group()):
                continue
            for match in self._pattern.finditer(word.group()):
                start, end = match.span()
                token = match.group()
                while token and token[-1] in _CLOSERS and not _balanced_closer(token):
                    token = token[:-1]
                if token:
                    spans.append((word.start() + start, word.start() + start + len(token)))
        return spans

    def mask(self, text: str) -> tuple[str, tuple[str, ...]]:
        """``text`` with protected tokens replaced by ``⟦i⟧`` (numbered in order) and the tokens."""
        spans = self.spans(text)
        if not spans:
            return text, ()
        out, tokens, last = [], [], 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(f"⟦{len(tokens)}⟧")
            tokens.append(text[start:end])
            last = end
        out.append(text[last:])
        return "".join(out), tuple(tokens)

    def split_around(self, text: str) -> list[tuple[str, bool]]:
        """``(piece, translate?)`` pieces: protected tokens (and the spaces next to them) are verbatim."""
        pieces: list[tuple[str, bool]] = []
        last = 0
        for start, end in self.spans(text):
            add_segment(pieces, text[last:start])
            pieces.append((text[start:end], False))
            last = end
        add_segment(pieces, text[last:])
        return pieces


def _balanced_closer(token: str) -> bool:
    """A URL's final ``)`` that closes a ``(`` inside it (Wikipedia style) belongs to the URL."""
    return token[-1] == ")" and token.count("(") >= token.count(")")


def unmask(translation: str, tokens: tuple[str, ...]) -> str | None:
    """Put the protected tokens back, or None when a placeholder is missing, repeated or unknown."""
    if not tokens:
        return translation
    found = [int(m.group(1)) for m in PLACEHOLDER.finditer(translation)]
    if sorted(found) != list(range(len(tokens))):
        return None
    return PLACEHOLDER.sub(lambda m: tokens[int(m.group(1))], translation)


def resolve_mode(mode: str, kinds: tuple[str, ...] | None, keeps_placeholders: bool) -> tuple[str, tuple[str, ...]]:
    """The effective ``(mode, kinds)``: ``auto`` is placeholders for backends that keep them, else split."""
    if mode not in MODES:
        raise ValueError(f"unknown verbatim mode {mode!r}; choose from {', '.join(MODES)}")
    if mode == "auto":
        mode = "placeholders" if keeps_placeholders else "split"
    kinds = tuple(kinds) if kinds is not None else DEFAULT_KINDS[mode]
    _compile(kinds)  # rejects unknown kinds
    return mode, kinds
