"""The default model of each kind for each language: what runs when the user names no ``--model``.

Model defaults are Hugging Face Hub ids (any model argument also accepts a local folder). They live here,
not in the language packs, because they are about models: a pack describes how a language is analysed.

* pl -- BEIR-PL (Wojtasik et al., 2023, arXiv:2305.19840): HerBERT cross-encoder and plT5 monoT5 rerankers
  trained on Polish MS MARCO;
* en -- BEIR (Thakur et al., 2021) baselines: e5-base-v2, the MiniLM cross-encoder, monoT5; SPLADE++ ED
  (Formal et al., 2022, arXiv:2205.04733; BEIR SciFact nDCG@10 0.704 in Pyserini's tables), the one language
  with a default SPLADE model;
* other languages -- multilingual-e5, the mMARCO multilingual cross-encoder and mT5 reranker (Bonifacio
  et al., 2021, arXiv:2108.13897), NLLB-200 for translation from English (only for languages NLLB has a
  code for).

Kinds are spelled as the registries spell the backends (``dense``, ``cross-encoder``, ``monot5``,
``colbert``, ``splade``) plus ``translation_from_en``; ColBERT has no default anywhere, SPLADE only for English.

:func:`model_or_default` and :func:`check_available` are the checks a command runs before any work: a grid
that needs a model beirx cannot name or find must fail in seconds, not after hours of first-stage work.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import NamedTuple

from beirx.errors import BeirxError

NLLB = "facebook/nllb-200-distilled-600M"
KINDS = ("dense", "splade", "cross-encoder", "monot5", "colbert", "translation_from_en")

MULTILINGUAL = MappingProxyType({
    "dense": "intfloat/multilingual-e5-base",
    "cross-encoder": "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1",
    "monot5": "unicamp-dl/mt5-base-mmarco-v2",
    "translation_from_en": NLLB,
})
BY_LANGUAGE = MappingProxyType({
    "pl": MappingProxyType({
        "dense": "intfloat/multilingual-e5-base",
        "cross-encoder": "clarin-knext/herbert-base-reranker-msmarco",
        "monot5": "clarin-knext/plt5-base-msmarco",
        "translation_from_en": NLLB,
    }),
    "en": MappingProxyType({
        "dense": "intfloat/e5-base-v2",
        "splade": "naver/splade-cocondenser-ensembledistil",
        "cross-encoder": "cross-encoder/ms-marco-MiniLM-L-6-v2",
        "monot5": "castorini/monot5-base-msmarco",
        "translation_from_en": None,
    }),
})


def default_model(kind: str, lang: str) -> str | None:
    """The Hub id of the default ``kind`` model for ``lang`` (any code :func:`get_pack` accepts), or None.

    None means there is no default: the caller asks the user for a model (ColBERT; translation into
    English or into a language without an NLLB code; a kind beirx has no defaults for).
    """
    from beirx.language_packs import get_pack, list_packs

    pack = get_pack(lang)
    declared = any(p is pack for p in list_packs())
    table = BY_LANGUAGE.get(pack.code, MULTILINGUAL) if declared else MULTILINGUAL
    if kind == "translation_from_en" and pack.nllb_code is None:
        return None
    return table.get(kind)


def model_or_default(kind: str, model: str | None, lang: str, what: str, flag: str) -> str:
    """``model``, else the language's default ``kind`` model; a :class:`BeirxError` naming ``what`` (e.g.
    ``reranker 'colbert'``) and the flag to pass when there is neither."""
    found = model or default_model(kind, lang)
    if not found:
        raise BeirxError(f"{what} needs a model ({flag}): beirx has no default {kind} model for {lang!r}")
    return str(found)


class ModelNeed(NamedTuple):
    """A model a command will load: the name given, its revision, and what it must be (a
    :mod:`beirx.models.checks` kind, None: only found) for which ``flag`` of which ``needed_by``."""

    model: str
    revision: str | None
    kind: str | None = None
    flag: str = "model"
    needed_by: str = ""


def check_available(models: Iterable[ModelNeed]) -> None:
    """Every model is a local folder, or on the Hub (in its local cache when offline), whole and of the kind it
    must be, or the Universal Sentence Encoder where a sentence embedding is wanted; else the error of
    :func:`~beirx.models.files.resolve_model`, :func:`~beirx.models.checks.check_model` (or of
    :func:`~beirx.models.use_encoder.use_model_files`)."""
    from beirx.models.checks import checked_model
    from beirx.models.files import resolve_model
    from beirx.models.use_encoder import use_model_files

    for need in sorted(set(models), key=str):
        if need.kind in (None, "bi-encoder") and use_model_files(need.model) is not None:
            continue
        if need.kind:
            checked_model(need.model, need.kind, need.revision, need.flag, need.needed_by)
        else:
            resolve_model(need.model, need.revision)
