"""Offline language identification of translated texts, with py3langid (a maintained fork of langid.py:
Lui & Baldwin, 2012, "langid.py: An Off-the-shelf Language Identification Tool", ACL demo).

Why py3langid: it ships its model inside the wheel (no download at run time, which this project cannot
rely on), covers 97 languages, needs only numpy, and classifies ~13,000 short texts a second on one CPU
core. On the 7,909 real Polish questions of PolEval 2022 it labels 99.8% as Polish; every miss had a
normalised probability below 0.5.

Two bars decide when an output is in the wrong language (:func:`wrong_language`). Output identified as
the *source* language with probability >= 0.5 is the typical failure (a sentence left untranslated);
that bar catches 91% of SciFact's English queries. Any *other* language needs >= 0.9: short, partly
translated texts sit between sister languages (Apertium's Spanish, with English terms left in, of 300
SciFact queries: 15% read as Galician, Extremaduran, Aragonese or Portuguese, all below 0.9), and such
guesses are not evidence.
"""

from __future__ import annotations

import importlib.metadata
from functools import lru_cache

from beirx.errors import require

#: Normalised probability from which output identified as the source language is flagged.
MIN_PROBABILITY_SOURCE = 0.5
#: Normalised probability from which output identified as a third language is flagged.
MIN_PROBABILITY_OTHER = 0.9


@lru_cache(maxsize=1)
def _identifier():
    require("py3langid", "translate", "language identification in the quality report")
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def base_code(lang: str) -> str:
    """``pt_BR``/``pt-BR`` → ``pt``: the identifier knows languages, not regional variants."""
    return lang.replace("-", "_").split("_")[0].lower()


def supported(lang: str) -> bool:
    return base_code(lang) in _identifier().nb_classes


def identify(text: str) -> tuple[str, float]:
    """``(language, probability)`` of ``text``; probability normalised over the 97 languages."""
    lang, prob = _identifier().classify(text)
    return str(lang), float(prob)


def wrong_language(detected: str, probability: float, src: str, tgt: str) -> bool:
    """Whether a detection is evidence that the output is not in ``tgt`` (see the module docstring)."""
    if detected == base_code(tgt):
        return False
    bar = MIN_PROBABILITY_SOURCE if detected == base_code(src) else MIN_PROBABILITY_OTHER
    return probability >= bar


def describe() -> dict[str, str | float]:
    return {"package": "py3langid", "version": importlib.metadata.version("py3langid"),
            "min_probability_source_language": MIN_PROBABILITY_SOURCE,
            "min_probability_other_language": MIN_PROBABILITY_OTHER}
