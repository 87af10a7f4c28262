"""Cheap per-item checks that catch the typical machine-translation failures of a benchmark build.

Each check names a reason that appears in ``flagged.jsonl``:

``empty``            the source has text, the translation has none.
``untranslated``     the translation equals the source (case and whitespace ignored) although the source
                     has at least two words to translate (a bare gene name or number may stay as is).
``near_identical``   not equal, but at least :data:`NEAR_IDENTICAL` of the words match in order
                     (``difflib`` ratio over word lists): typically a sentence left in the source language.
``wrong_language``   language identification says the source language (probability >= 0.5) or a third
                     language (>= 0.9) (:mod:`beirx.translate.langid`).
``length_ratio``     ``len(translation)/len(source)`` (characters) is an outlier for this dataset and field:
                     robust z-score ``0.6745 (x - median) / MAD`` of the log ratio beyond 3.5 (Iglewicz &
                     Hoaglin, 1993). Using the field's own distribution adapts to each language pair (Polish
                     runs ~10% longer than English, Chinese far shorter). With fewer than 20 items or a zero
                     MAD the fixed bounds 0.5–2.0 apply instead.
``lost_numbers``     a digit run of the source (``2019``, the ``3`` and ``5`` of ``3.5``) is missing from the
                     translation; comparing runs, not numbers, tolerates ``3.5`` → ``3,5`` and ``1,000`` →
                     ``1 000``.
``lost_urls``        a URL of the source is not found verbatim in the translation.
``low_similarity``   the cross-lingual similarity is a low outlier of its field (robust z below -3.5).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence

#: One line per reason, for the markdown report's legend.
REASONS = {
    "empty": "the source has text, the translation has none",
    "untranslated": "the translation equals the source",
    "near_identical": "at least 90% of the words are the source's, in order",
    "wrong_language": "language ID says the source language (p >= 0.5) or a third one (p >= 0.9)",
    "length_ratio": "translation/source length ratio is an outlier for this field",
    "lost_numbers": "a digit run of the source is missing from the translation",
    "lost_urls": "a URL of the source is missing from the translation",
    "low_similarity": "similarity is a low outlier for this field (robust z < -3.5)",
    "repetition": "a word or fragment repeats 4+ times in a row and the source has no such run (degenerate "
                  "MT output such as 'specificspecificspecific...')",
}

NEAR_IDENTICAL = 0.9
ROBUST_Z = 3.5
FIXED_RATIO_BOUNDS = (0.5, 2.0)
MIN_ITEMS_FOR_ROBUST = 20

_WORD = re.compile(r"[^\W\d_]{2,}")
_TOKEN = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"']+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?)]}'\""


def numbers(text: str) -> set[str]:
    return set(_DIGITS.findall(text))


def urls(text: str) -> set[str]:
    return {u.rstrip(_URL_TRAILING) for u in _URL.findall(text)}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


# A unit of 2-30 non-space characters followed by 3+ more copies of itself (spaces allowed between copies).
_REPEAT = re.compile(r"(\S{2,30}?)(?:\s*\1){3,}")


def repetition(source: str, translation: str) -> str | None:
    """The first run of 4+ repeated copies in ``translation`` that ``source`` does not contain, or None.

    Neural MT degenerates into such loops; language ID still calls them the target language and their
    length can look normal, so no other flag catches them.
    """
    for match in _REPEAT.finditer(translation):
        unit = match.group(1)
        if unit.isdigit() or unit * 2 in source or f"{unit} {unit}" in source:
            continue
        return match.group(0)[:80]
    return None


def copy_reason(source: str, translation: str) -> str | None:
    """``untranslated`` / ``near_identical`` / None for one pair."""
    if len(_WORD.findall(source)) < 2:
        return None
    if _norm(source) == _norm(translation):
        return "untranslated"
    a, b = _TOKEN.findall(source.lower()), _TOKEN.findall(translation.lower())
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() >= NEAR_IDENTICAL and matcher.quick_ratio() >= NEAR_IDENTICAL \
            and matcher.ratio() >= NEAR_IDENTICAL:
        return "near_identical"
    return None


def robust_z(values: Sequence[float]) -> tuple[list[float], float, float] | None:
    """Modified z-scores ``0.6745 (x - median) / MAD`` with the median and MAD, or None when the MAD is 0."""
    if not values:
        return None
    med = _median(values)
    mad = _median([abs(v - med) for v in values])
    if mad == 0:
        return None
    return [0.6745 * (v - med) / mad for v in values], med, mad


def length_outliers(source_lengths: Sequence[int], translation_lengths: Sequence[int]) -> tuple[list[bool], dict]:
    """Which pairs have an outlying length ratio, and how that was decided (for the report)."""
    ratios = [t / s if s else math.inf for s, t in zip(source_lengths, translation_lengths)]
    logs = [math.log(r) for r in ratios if 0 < r < math.inf]
    scored = robust_z(logs) if len(logs) >= MIN_ITEMS_FOR_ROBUST else None
    if scored is None:
        lo, hi = FIXED_RATIO_BOUNDS
        return [not lo <= r <= hi for r in ratios], {"method": "fixed bounds", "bounds": [lo, hi]}
    _, med, mad = scored
    lo, hi = math.exp(med - ROBUST_Z * mad / 0.6745), math.exp(med + ROBUST_Z * mad / 0.6745)
    info = {"method": "robust z-score of log ratio", "threshold": ROBUST_Z, "median_ratio": round(math.exp(med), 4),
            "bounds": [round(lo, 4), round(hi, 4)]}
    return [not lo <= r <= hi for r in ratios], info


def low_outliers(values: Sequence[float]) -> list[bool]:
    """Values whose robust z-score is below -3.5 (all False for small or constant samples)."""
    scored = robust_z(values) if len(values) >= MIN_ITEMS_FOR_ROBUST else None
    if scored is None:
        return [False] * len(values)
    return [z < -ROBUST_Z for z in scored[0]]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
