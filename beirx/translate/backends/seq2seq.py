"""What the ``hf`` and ``ctranslate2`` backends share about Hugging Face seq2seq MT models: how each model
family is told the language pair, how inputs are encoded and limited, and how a model is identified.

Identity: the revision is :func:`beirx.models.files.model_revision`, the same rule results documents use.
Before that rule was shared, these backends recorded another revision for local folders (16 hex characters
over other files); translation memories key translations by the backend's ``describe()``, revision
included, so :meth:`TokenizedTranslator.earlier_descriptions` names that old revision and the memory adopts
translations stored under it (see :meth:`beirx.translate.translation_memory.TranslationMemory.register`).

Language conventions (detected from the tokenizer's vocabulary, so a local copy works like the Hub id):

* NLLB-200: FLORES-200 codes. The source code is ``tokenizer.src_lang`` (``eng_Latn``: the tokenizer
  prepends it); the target code is the first decoder token (``forced_bos_token_id`` in transformers,
  ``target_prefix`` in CTranslate2). Codes come from the language pack (``pack.nllb_code``).
* M2M100: ISO 639-1 codes as ``__pl__`` tokens, used the same way (``tokenizer.get_lang_id``).
* Marian multi-target models (opus-mt-en-mul, opus-mt-tc-big-en-*): a ``>>pol<<`` (or ``>>pl<<``)
  prefix on every source text, when the vocabulary has such tokens.
* Other Marian models (opus-mt-en-es): one pair, nothing to add.

Options ``src_code``/``tgt_code`` override the codes (e.g. ``tgt_code=pol_Latn``).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from beirx.argtypes import non_negative_int, option, positive_int
from beirx.checksums import files_checksum
from beirx.errors import BeirxError
from beirx.models.default_models import default_model as language_default
from beirx.translate.backends.base import Translator

log = logging.getLogger(__name__)

_HUGE = 1_000_000  # transformers' "no limit" model_max_length is ~1e30
_MARIAN_TARGET = re.compile(r"^>>[\w-]+<<$")


def iso3(lang: str) -> str | None:
    from beirx.language_packs import get_pack

    return get_pack(lang).iso3


def nllb_code(lang: str) -> str | None:
    from beirx.language_packs import get_pack

    return get_pack(lang).nllb_code


class TokenizedTranslator(Translator):
    """A translator whose ``self.tok`` is a :class:`ModelTokenizer`: the input limit, segment lengths and
    checked encoding come from the model's own tokenizer (shared by ``hf`` and ``ctranslate2``)."""

    tok: "ModelTokenizer"
    #: ``(model argument, explicit revision)`` as the pre-shared revision rule saw them (see the module docstring).
    legacy_identity: tuple[str, str | None] = ("", None)

    def earlier_descriptions(self) -> list[dict[str, Any]]:
        legacy = self.legacy_identity[1] or legacy_revision(self.legacy_identity[0])
        current = self.describe()
        return [] if legacy in (None, current["revision"]) else [{**current, "revision": legacy}]

    def max_segment_tokens(self) -> int | None:
        return self.tok.max_tokens

    def count_tokens(self, text: str) -> int:
        return self.tok.count(text)

    def encode_checked(self, segments: list[str]) -> list[list[int]]:
        """Token ids of ``segments``, refusing any that exceeds the model's limit (never truncated)."""
        ids = self.tok.encode(segments)
        self.tok.check(ids)
        return ids


class ModelTokenizer:
    """A Hugging Face tokenizer plus the language convention of its model family."""

    def __init__(self, tokenizer, src: str, tgt: str, *, src_code: str | None = None, tgt_code: str | None = None,
                 max_positions: int | None = None):
        self.tokenizer = tokenizer
        self.family, self.prefix, self.target_token = _convention(tokenizer, src, tgt, src_code, tgt_code)
        self.target_token_id = tokenizer.convert_tokens_to_ids(self.target_token) if self.target_token else None
        limits = [n for n in (getattr(tokenizer, "model_max_length", None), max_positions) if n and n < _HUGE]
        self.max_tokens = min(limits) if limits else None

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text with the family's prefix and special tokens; never truncated."""
        return self.tokenizer([self.prefix + t for t in texts], truncation=False)["input_ids"]

    def count(self, text: str) -> int:
        return len(self.encode([text])[0])

    def check(self, ids: list[list[int]]) -> None:
        """Refuse (never truncate) an input longer than the model's limit."""
        longest = max((len(i) for i in ids), default=0)
        if self.max_tokens and longest > self.max_tokens:
            raise BeirxError(f"a segment has {longest} tokens, more than the model's limit of {self.max_tokens}; "
                             "the pipeline splits long sentences, so pass segments through it")

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True).strip()

    def describe(self) -> dict[str, Any]:
        return {"family": self.family, "target_token": self.target_token, "source_prefix": self.prefix.strip() or None}


def _convention(tokenizer, src: str, tgt: str, src_code: str | None, tgt_code: str | None):
    """``(family, source prefix, target token)``; sets ``tokenizer.src_lang`` for NLLB and M2M100."""
    vocab = tokenizer.get_vocab()
    if "eng_Latn" in vocab or (tgt_code and "_" in tgt_code and tgt_code in vocab):
        src_code, tgt_code = src_code or nllb_code(src), tgt_code or nllb_code(tgt)
        for code, lang in ((src_code, src), (tgt_code, tgt)):
            if not code or code not in vocab:
                raise BeirxError(f"NLLB model: no FLORES-200 code for {lang!r} in its vocabulary "
                                 f"(got {code!r}); pass --translator-option src_code=/tgt_code=")
        tokenizer.src_lang = src_code
        return "nllb", "", tgt_code
    if "__en__" in vocab or f"__{tgt}__" in vocab:
        src_code, tgt_code = src_code or src, tgt_code or tgt
        for code in (src_code, tgt_code):
            if f"__{code}__" not in vocab:
                raise BeirxError(f"M2M100 model: language {code!r} is not in its vocabulary")
        tokenizer.src_lang = src_code
        return "m2m100", "", f"__{tgt_code}__"
    targets = sorted(t for t in vocab if _MARIAN_TARGET.match(t))
    if targets:
        wanted = [tgt_code] if tgt_code else [tgt]
        if not tgt_code and f">>{tgt}<<" not in vocab:
            wanted.append(iso3(tgt))  # opus-mt-tc models use ISO 639-3 (>>pol<<)
        for code in wanted:
            if code and f">>{code}<<" in vocab:
                return "marian-multi", f">>{code}<< ", None
        raise BeirxError(f"multi-target model without a target token for {tgt!r} (tried "
                         f"{', '.join(f'>>{c}<<' for c in wanted if c)}; it has e.g. {', '.join(targets[:8])})")
    return "single-pair", "", None


def legacy_revision(model: str) -> str | None:
    """The revision beirx recorded for a local model folder before the rule was shared, None for a Hub id.

    Only for finding translations stored under it: the snapshot commit for a folder inside the Hugging Face
    cache, else ``sha256:`` + 16 hex characters over the folder's files without dotfiles, ``.md`` and
    ``.lock`` files. A Hub id was recorded as its commit, as it still is.
    """
    path = Path(model).expanduser()
    if not model or not path.is_dir():
        return None
    resolved = path.resolve()
    if resolved.parent.name == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", resolved.name):
        return resolved.name
    files = sorted(p for p in resolved.rglob("*") if p.is_file() and not p.name.startswith(".")
                   and p.suffix not in {".md", ".lock"})
    return files_checksum(resolved, files)[:len("sha256:") + 16]


def default_model(src: str, tgt: str) -> str:
    """The default translation model of the target language (:mod:`beirx.models.default_models`; from English only)."""
    model = language_default("translation_from_en", tgt) if src == "en" else None
    if model:
        return model
    raise BeirxError(f"no default translation model for {src}->{tgt}: pass --model (a Hub id or a local folder)")


def load_tokenizer(model: str, revision: str | None = None):
    transformers = _require_transformers()
    try:
        return transformers.AutoTokenizer.from_pretrained(model, revision=revision)
    except (OSError, ValueError) as exc:
        raise BeirxError(f"cannot load the tokenizer of {model!r}: {exc}. Offline, pass a local model folder.") from exc


def _require_transformers():
    from beirx.errors import require

    return require("transformers", "translate", "the hf and ctranslate2 translators")


def decoding_options(owner: str, beam_size: Any, max_length: Any, min_length: Any,
                     names: tuple[str, str] = ("max_new_tokens", "min_new_tokens")) -> tuple[int, int | None, int]:
    """``(beam_size, max length or None for the model's, min length)`` read as numbers before a model loads; a bad
    value names the option (:func:`beirx.argtypes.option`)."""
    return (option(owner, "beam_size", beam_size, positive_int), option(owner, names[0], max_length, positive_int),
            option(owner, names[1], min_length, non_negative_int, default=0))
