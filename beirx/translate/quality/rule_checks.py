"""The ``checks`` quality method: cheap rules that catch the typical machine-translation failures of a
benchmark build, one flag reason each (:data:`REASONS`). Always on; no model.

``untranslated`` (equal, case and whitespace ignored) and ``near_identical`` (:data:`NEAR_IDENTICAL` of the
words in order, ``difflib`` ratio over word lists) need a source of two or more words: a gene name may stay as
is. ``wrong_language`` uses :mod:`beirx.translate.quality.langid`. ``length_ratio`` is a robust z-score of the log
character ratio beyond 3.5 on the field's own distribution (:mod:`~beirx.translate.quality.stats`), which adapts
to each language pair (Polish runs ~10% longer than English, Chinese far shorter); with fewer than 20 items or
a zero MAD the fixed bounds 0.5–2.0 apply. ``lost_numbers`` compares digit runs, not numbers, so ``3.5`` →
``3,5`` and ``1,000`` → ``1 000`` pass; ``lost_urls`` looks for each URL verbatim. The field summary holds the
language check (rows checked, share in the target language, the 10 most frequent languages) and the
length-ratio rule that applied."""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from beirx.translate.quality import langid
from beirx.translate.quality.base import FieldPairs, MethodResult, QualityContext, QualityMethod
from beirx.translate.quality.stats import ROBUST_Z, robust_z

if TYPE_CHECKING:
    from beirx.artifacts.quality import FieldQuality, QualityReport

#: One line per reason (the report's legend), in the order a row's reasons are listed.
REASONS = {
    "empty": "the source has text, the translation has none",
    "untranslated": "the translation equals the source",
    "near_identical": "at least 90% of the words are the source's, in order",
    "wrong_language": "language ID says the source language (p >= 0.5) or a third one (p >= 0.9)",
    "length_ratio": "translation/source length ratio is an outlier for this field",
    "repetition": "a word or fragment repeats 4+ times in a row and the source has no such run (degenerate "
                  "MT output such as 'specificspecificspecific...')",
    "lost_numbers": "a digit run of the source is missing from the translation",
    "lost_urls": "a URL of the source is missing from the translation",
}

NEAR_IDENTICAL = 0.9
FIXED_RATIO_BOUNDS = (0.5, 2.0)

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


def length_outliers(ratios: np.ndarray, logs: np.ndarray) -> tuple[np.ndarray, dict]:
    """Which rows have an outlying length ratio (``ratios``, NaN: not judged), decided on the field's log ratios
    (``logs``, NaN where none), and how that was decided (for the report)."""
    scored = robust_z(logs[~np.isnan(logs)])
    if scored is None:
        (lo, hi), info = FIXED_RATIO_BOUNDS, {"method": "fixed bounds", "bounds": list(FIXED_RATIO_BOUNDS)}
    else:
        _, med, mad = scored
        lo, hi = math.exp(med - ROBUST_Z * mad / 0.6745), math.exp(med + ROBUST_Z * mad / 0.6745)
        info = {"method": "robust z-score of log ratio", "threshold": ROBUST_Z,
                "median_ratio": round(math.exp(med), 4), "bounds": [round(lo, 4), round(hi, 4)]}
    return ~np.isnan(ratios) & ~((lo <= ratios) & (ratios <= hi)), info


class Checks(QualityMethod):
    """The rule checks above, on every row; the length rule once the field's ratios are known (:meth:`finish`)."""

    name = "checks"
    default = True
    flags = REASONS

    def __init__(self):
        self.detected: Counter[str] = Counter()  # the field's languages so far

    @classmethod
    def report_lines(cls, report: QualityReport, field: str) -> list[str]:
        """The language check (share in the target language, the detected languages) and the length rule."""
        outcome = report.fields[field].methods.get(cls.name)
        if outcome is None:
            return []
        lines = []
        language = outcome.summary.get("language") or {}
        if language.get("checked"):
            top = ", ".join(f"{k} {v}" for k, v in language.get("detected", {}).items())
            lines.append(f"- Language of {field} translations: {100 * language['target_share']:.1f}% "
                         f"{report.translated.lang} (detected: {top}).")
        ratio = outcome.summary.get("length_ratio") or {}
        if ratio:
            lines.append(f"- Length ratio bounds for {field}: {ratio['bounds'][0]}–{ratio['bounds'][1]} "
                         f"({ratio['method']}).")
        return lines

    @classmethod
    def card_figures(cls, entry: FieldQuality) -> dict[str, float | None]:
        outcome = entry.methods.get(cls.name)
        language = (outcome.summary.get("language") or {}) if outcome else {}
        return {"in target language": language.get("target_share") if language.get("checked") else None}

    def describe(self, context: QualityContext) -> dict[str, Any]:
        return {"language_identifier": langid.describe()}

    def score(self, pairs: FieldPairs, context: QualityContext) -> MethodResult:
        result = MethodResult(scored=len(pairs))
        check_lang = langid.supported(context.tgt_lang)
        ratios, logs = result.measures.setdefault("ratio", {}), result.measures.setdefault("log_ratio", {})
        evidence = result.deferred.setdefault("length_ratio", {})
        for item, src, out in zip(pairs.ids, pairs.sources, pairs.translations):
            if out:  # the rule is decided on every row's log ratio (a blank one's too), applied to non-empty rows
                logs[item] = math.log(len(out) / len(src))
            if not out.strip():
                result.flag(item, "empty")
                continue
            ratios[item] = len(out) / len(src)
            evidence[item] = {"length_ratio": round(ratios[item], 3)}
            copy = copy_reason(src, out)
            if copy:
                result.flag(item, copy)
            if check_lang:
                lang, prob = langid.identify(out)
                self.detected[lang] += 1
                if langid.wrong_language(lang, prob, context.src_lang, context.tgt_lang):
                    result.flag(item, "wrong_language", language={"detected": lang, "probability": round(prob, 3)})
            for reason, found in (("repetition", repetition(src, out)),
                                  ("lost_numbers", sorted(numbers(src) - numbers(out))),
                                  ("lost_urls", sorted(u for u in urls(src) if u not in out))):
                if found:  # the evidence is named as the reason
                    result.flag(item, reason, **{reason: found})
        return result

    def finish(self, field: str, values: dict[str, np.ndarray], context: QualityContext):
        """The length rule over the field's ratios, and the language check's summary."""
        too_long, ratio_rule = length_outliers(values["ratio"], values["log_ratio"])
        language = _language_summary(self.detected, langid.base_code(context.tgt_lang)) \
            if langid.supported(context.tgt_lang) else \
            {"checked": 0, "note": f"language {context.tgt_lang!r} unknown to the identifier"}
        self.detected = Counter()
        return {"length_ratio": too_long}, {"language": language, "length_ratio": ratio_rule}


def _language_summary(detected: Counter[str], target: str) -> dict[str, Any]:
    """How many outputs were checked, the share identified as the target language, the top 10 languages."""
    checked = sum(detected.values())
    return {"checked": checked, "target_share": round(detected.get(target, 0) / checked, 4) if checked else None,
            "detected": dict(sorted(detected.items(), key=lambda kv: -kv[1])[:10])}
