"""Every LLM output is checked before it is written: the failures published LLM-translated benchmarks shipped.

A :class:`~beirx.models.llm.engine.Verdict` lists the reasons an answer is rejected, named values of
:class:`Problem` (the words the notes record). *Hard* reasons (:data:`HARD`) leave nothing usable to write; the
others describe a translation that could still be written, flagged. The caller retries with a stricter prompt,
then falls back or flags.

* Wrappers a model puts around its translation are removed when they are recognisable, and the rest is
  checked: a first line announcing the translation ("Sure! Here is the translation:"), a label ("Spanish:"),
  the prompt's ``<text>`` tags, code fences, quotes the source does not have, a trailing "Note: ..." line.
  Meta-commentary that is not such a wrapper ("The translation of this text is ...") rejects the answer.
* An answer cut at ``max_tokens`` or refused in the API's ``refusal`` field is rejected by the unit engine
  before this check counts (:func:`beirx.models.llm.engine.cut_or_refused`: every task gets that); here, an
  answer opening like a refusal ("I'm sorry", "As an AI", "Lo siento" ...) when the source does not.
* A copied source and the wrong language reuse the quality report's checks
  (:func:`beirx.translate.quality.rule_checks.copy_reason`, :mod:`beirx.translate.quality.langid`, on answers with at
  least :data:`MIN_LETTERS_FOR_LANGID` letters: shorter ones are not identified reliably).
* Length: ``len(output) / len(source)`` outside :data:`LENGTH_BOUNDS` (sources of at least
  :data:`MIN_CHARS_FOR_RATIO` characters) is ``length_ratio``, or ``answered`` for a query that grew
  beyond the upper bound: a query answered instead of translated. A question whose translation is not a
  question is ``question_lost``.
* Numbers, URLs and placeholders of the source must all be in the answer (digit runs, as the quality report
  compares them, so ``3.5`` → ``3,5`` passes); glossary terms as the glossary says; no degenerate repetition.
* Nothing may be added either: a number (``added_numbers``), a URL (``added_urls``), HTML the source does not
  have (``added_markup``: a tag such as ``<script>``, ``<img onerror=...>``, ``<b>``, or a ``<!-- -->``
  comment; markup in a benchmark is rendered or executed by whoever displays it), or more sentences than
  the source has (``added_sentences``: an appended remark, advert or answer). Added URLs and markup are hard:
  when they persist the source is kept, never the answer.
"""

from __future__ import annotations

import re
from enum import StrEnum

from beirx.models.llm import Reply
from beirx.models.llm.engine import Reason, Verdict
from beirx.translate.llm.glossary import Glossary
from beirx.translate.planning.document_units import QUERY, lines
from beirx.translate.planning.placeholders import PLACEHOLDER
from beirx.translate.planning.segment import split_sentences
from beirx.translate.quality import langid
from beirx.translate.quality import rule_checks as checks



class Problem(StrEnum):
    """What the translation check finds wrong with an answer (the module docstring says when each)."""

    EMPTY = "empty"
    LINE_COUNT = "line_count"
    LOST_PLACEHOLDERS = "lost_placeholders"
    META_COMMENTARY = "meta_commentary"
    UNTRANSLATED = "untranslated"  # (checks.copy_reason)
    NEAR_IDENTICAL = "near_identical"  # (checks.copy_reason)
    WRONG_LANGUAGE = "wrong_language"
    ANSWERED = "answered"
    LENGTH_RATIO = "length_ratio"
    QUESTION_LOST = "question_lost"
    LOST_NUMBERS = "lost_numbers"
    LOST_URLS = "lost_urls"
    ADDED_NUMBERS = "added_numbers"
    ADDED_URLS = "added_urls"
    ADDED_MARKUP = "added_markup"
    ADDED_SENTENCES = "added_sentences"
    GLOSSARY = "glossary"
    REPETITION = "repetition"


HARD = frozenset({Problem.EMPTY, Reason.REFUSED, Reason.TRUNCATED, Problem.LINE_COUNT, Problem.LOST_PLACEHOLDERS,
                  Problem.META_COMMENTARY, Problem.ADDED_MARKUP, Problem.ADDED_URLS})
LENGTH_BOUNDS = (0.33, 3.0)
#: Scripts that need far fewer characters than English: only the upper bound applies to them.
COMPACT_SCRIPTS = {"zh", "ja", "ko", "th", "lo", "km", "my", "bo"}
MIN_CHARS_FOR_RATIO = 20
MIN_LETTERS_FOR_LANGID = 20

_MARKUP = re.compile(r"<!--|-->|<\s*/?\s*([A-Za-z][\w:-]*)(?=[\s/>])[^<>]*>?")
_LETTERS = re.compile(r"[^\W\d_]")
_ANNOUNCE = re.compile(
    r"^\s*(?:(?:sure|certainly|of course|okay|ok)\b[!,.]*\s*)?(?:here(?:'s| is| are)|below is|this is|the following"
    r" is)\b[^\n]{0,80}?\btranslat\w*[^\n]{0,60}?[:.]?\s*(?:\n|$)", re.IGNORECASE)
_TRAILING_NOTE = re.compile(r"\n\s*[(\[]?\s*(?:note|notes|nota|uwaga|remarque|hinweis|translator'?s note)\b[^\n]*"
                            r"(?:\n[^\n]*)*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
_TAGS = re.compile(r"^\s*<text>\s*\n?(.*?)\n?\s*</text>\s*$", re.DOTALL)
_QUOTES = [("\"", "\""), ("“", "”"), ("«", "»"), ("„", "“"), ("'", "'"), ("‘", "’"), ("「", "」")]
_META = re.compile(r"\b(?:(?:the |this |my )?translation(?: of (?:this|the) (?:text|query|document|sentence))? "
                   r"(?:is|reads|would be)|translated (?:text|version|query)|i (?:have )?translated|"
                   r"as (?:a|an) (?:ai|language model))\b", re.IGNORECASE)
_META_LABEL = re.compile(r"\b(?:translation|traducci[oó]n|tradu[cç][aã]o|traduction|[üu]bersetzung|t[łl]umaczenie|"
                         r"traduzione|vertaling)\b[^\n:]{0,30}:", re.IGNORECASE)
_REFUSAL = re.compile(
    r"^\s*(?:i'?m sorry|i am sorry|sorry,|i apologi[sz]e|i (?:can(?:no|')t|am unable to|'m unable to|won'?t) "
    r"(?:help|assist|translate|provide|comply|do)|as an ai\b|lo siento|no puedo|przepraszam|nie mogę|je suis désolé|"
    r"je ne peux pas|es tut mir leid|ich kann (?:nicht|keine))", re.IGNORECASE)
_QUESTION_MARKS = "?？؟;;"


class Validator:
    """Checks answers translating ``src`` into ``tgt`` (``tgt_name``: the language's English name, a label a
    model may print); ``glossary`` and ``length_bounds`` as configured."""

    def __init__(self, src: str, tgt: str, tgt_name: str, glossary: Glossary | None = None,
                 length_bounds: tuple[float, float] = LENGTH_BOUNDS):
        self.src, self.tgt = src, tgt
        self.glossary = glossary
        low, high = length_bounds
        self.bounds = (0.0 if langid.base_code(tgt) in COMPACT_SCRIPTS else low, high)
        self._label = re.compile(rf"^\s*(?:{re.escape(tgt_name)}|translation|{re.escape(tgt)})\s*(?:\([^)\n]*\))?\s*:"
                                 r"[ \t]*\n?", re.IGNORECASE)
        self._check_language = langid.supported(tgt)

    def check(self, kind: str, source: str, reply: Reply) -> Verdict:
        """The verdict on ``reply`` translating the unit ``source`` (its lines; placeholders masked): the
        cleaned answer is its ``value`` when accepted, else its ``candidate`` unless a reason is hard. (The
        unit engine adds truncation and the API's refusal: :meth:`beirx.models.llm.engine.UnitEngine.verdict`.)"""
        verdict = self._check(kind, source, reply)
        if verdict.reasons:
            verdict.value, verdict.candidate = None, None if HARD & set(verdict.reasons) else verdict.value
        verdict.accepted = not verdict.reasons
        return verdict

    def _check(self, kind: str, source: str, reply: Reply) -> Verdict:
        text, stripped = self.strip_wrappers(reply.text, source)
        verdict = Verdict(False, text, stripped=stripped)
        reasons = verdict.reasons
        if not text.strip():
            reasons.append(Problem.EMPTY)
            return verdict
        if _REFUSAL.match(text) and not _REFUSAL.match(source):
            reasons.append(Reason.REFUSED)
        if any(p.search(text) and not p.search(source) for p in (_META, _META_LABEL)):
            reasons.append(Problem.META_COMMENTARY)
        source_lines = source.split("\n")
        output_lines = lines(text)
        if len(source_lines) == 1:
            verdict.value = text = " ".join(output_lines)
        elif len(output_lines) != len(source_lines):
            reasons.append(Problem.LINE_COUNT)
            verdict.details["lines"] = [len(source_lines), len(output_lines)]
        else:
            verdict.value = text = "\n".join(output_lines)
        if sorted(PLACEHOLDER.findall(text)) != sorted(PLACEHOLDER.findall(source)):
            reasons.append(Problem.LOST_PLACEHOLDERS)
        self._content(kind, PLACEHOLDER.sub("", source), PLACEHOLDER.sub("", text), verdict)
        return verdict

    def _content(self, kind: str, source: str, text: str, verdict: Verdict) -> None:
        reasons = verdict.reasons
        copy = checks.copy_reason(source, text)
        if copy:
            reasons.append(Problem(copy))
        if self._check_language and len(_LETTERS.findall(text)) >= MIN_LETTERS_FOR_LANGID and not copy:
            lang, probability = langid.identify(text)
            if langid.wrong_language(lang, probability, self.src, self.tgt):
                reasons.append(Problem.WRONG_LANGUAGE)
                verdict.details["language"] = {"detected": lang, "probability": round(probability, 3)}
        if len(source) >= MIN_CHARS_FOR_RATIO:
            ratio = len(text) / len(source)
            low, high = self.bounds
            if not low <= ratio <= high:
                reasons.append(Problem.ANSWERED if kind == QUERY and ratio > high else Problem.LENGTH_RATIO)
                verdict.details["length_ratio"] = round(ratio, 3)
        if kind == QUERY and source.rstrip()[-1:] in _QUESTION_MARKS and not any(m in text for m in _QUESTION_MARKS):
            reasons.append(Problem.QUESTION_LOST)
        # what the answer lost of the source, then what it added (the first ten of each addition)
        compared = {Problem.LOST_NUMBERS: sorted(checks.numbers(source) - checks.numbers(text)),
                    Problem.LOST_URLS: sorted(u for u in checks.urls(source) if u not in text),
                    Problem.ADDED_NUMBERS: sorted(checks.numbers(text) - checks.numbers(source))[:10],
                    Problem.ADDED_URLS: sorted(u for u in checks.urls(text) if u not in source)[:10],
                    Problem.ADDED_MARKUP: sorted(_markup(text) - _markup(source))[:10]}
        for reason, what in compared.items():
            if what:
                reasons.append(reason)
                verdict.details[reason] = what
        counts = [sum(1 for _, is_sentence in split_sentences(part, lang) if is_sentence)
                  for part, lang in ((source, self.src), (text, self.tgt))]
        if counts[1] > counts[0] and not {Problem.ANSWERED, Problem.LENGTH_RATIO} & set(reasons):  # (said already)
            reasons.append(Problem.ADDED_SENTENCES)
            verdict.details["sentences"] = counts
        missing = self.glossary.missing(source, text) if self.glossary is not None else []
        if missing:
            reasons.append(Problem.GLOSSARY)
            verdict.details["glossary"] = missing
        if checks.repetition(source, text):
            reasons.append(Problem.REPETITION)

    def strip_wrappers(self, text: str, source: str) -> tuple[str, list[str]]:
        """``text`` without the recognisable wrappers listed in the module docstring, and which were removed."""
        removed: list[str] = []
        head_patterns = ((_ANNOUNCE, "preamble"), (self._label, "label"))
        for _ in range(3):  # wrappers nest ("Here is the translation:" + quotes); a few passes suffice
            before = text = text.strip()
            for pattern, name in head_patterns:
                match = pattern.match(text)
                if match and not pattern.match(source):
                    text = text[match.end():].strip()
                    removed.append(name)
            for pattern, name in ((_FENCE, "code_fence"), (_TAGS, "tags")):
                match = pattern.match(text)
                if match:
                    text = match.group(1).strip()
                    removed.append(name)
            match = _TRAILING_NOTE.search(text)
            if match and match.start() > 0 and not _TRAILING_NOTE.search(source):
                text = text[:match.start()].strip()
                removed.append("note")
            if _quoted(text) and not _quoted(source.strip()):
                text = text[1:-1].strip()
                removed.append("quotes")
            if text == before:
                break
        return text, removed


def _markup(text: str) -> set[str]:
    """The HTML of ``text``: tag names (lowercase) and comment delimiters."""
    return {(m.group(1) or m.group(0)).lower() for m in _MARKUP.finditer(text)}


def _quoted(text: str) -> bool:
    """Whether ``text`` is one quotation: a pair of quotes around it and no other quote of that kind."""
    return len(text) > 2 and any(text[0] == left and text[-1] == right and
                                 text.count(left) + (text.count(right) if right != left else 0) == 2
                                 for left, right in _QUOTES)
