"""LanguagePack: one declarative record per language, and the analysis chain built from it.

The chain is Lucene's analyzer order -- StandardTokenizer, [EnglishPossessive | Elision], LowerCase,
Stop, stemmer -- so BM25 in Python and in Elasticsearch (``es_settings()``) index the same terms.
Everything after tokenization is a function of the single token, so the analyzer memoises terms
(the stem cache): stemming is the expensive step and real text repeats a small vocabulary. With the
compiled extension (beirx/_speedups.c) one C call maps a text's whole token list through the memo,
the stop words and the compiled Stempel/Porter stemmer, and the memo is per token. Without it, the
pure-Python path memoises per whitespace-separated chunk (tokens never span whitespace), which
saves the Python-level tokenizer call for repeated chunks. Both give the same terms.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from typing import Callable

from beirx.speedups import native

from . import tokenizer as _tok
from .stemmers import es_stem_filter, make_stemmer, pure_python_stemmer

ES_ANALYZER_NAME = "beirx_text"
# Cache entries per pack (~200 bytes each); past this the analyzer still works, it just stops
# memoising new chunks.
STEM_CACHE_MAX = 1_000_000
_APOSTROPHES = ("'", "\u2019")  # ElisionFilter's apostrophes
_POSSESSIVE_MARKS = ("'", "\u2019", "\uff07")  # EnglishPossessiveFilter's apostrophes


@dataclass(frozen=True, eq=False)
class LanguagePack:
    """How one language is analysed for lexical retrieval (default models: :mod:`beirx.models.default_models`).

    Declared as data in :mod:`beirx.language_packs.packs`; unknown languages get a generic pack
    (tokenize + lowercase only).
    """

    code: str
    name: str
    iso3: str | None
    script: str | None
    stemmer: str | None = None
    stopword_list: str | None = None  # file stem in stopwords/, e.g. "pl"
    possessive: bool = False  # English "'s" removal before lowercasing (EnglishPossessiveFilter)
    elision: tuple[str, ...] = ()  # articles stripped before an apostrophe (ElisionFilter)
    es_plugins: tuple[str, ...] = ()
    nllb: str | None = None  # NLLB-200 code when it is not iso3_script
    notes: str = ""

    # -- identity -------------------------------------------------------------------------------
    @property
    def mteb_code(self) -> str | None:
        """MTEB language code, ISO 639-3 + ISO 15924 script (``pol-Latn``)."""
        return f"{self.iso3}-{self.script}" if self.iso3 and self.script else None

    @property
    def nllb_code(self) -> str | None:
        """NLLB-200 / FLORES-200 language code (``pol_Latn``)."""
        if self.nllb:
            return self.nllb
        return f"{self.iso3}_{self.script}" if self.iso3 and self.script else None

    @property
    def es_analyzer_name(self) -> str:
        return ES_ANALYZER_NAME

    # -- analysis -------------------------------------------------------------------------------
    @cached_property
    def stopwords(self) -> frozenset[str]:
        if not self.stopword_list:
            return frozenset()
        text = resources.files(__package__).joinpath("stopwords", f"{self.stopword_list}.txt").read_text("utf-8")
        return frozenset(w for w in text.splitlines() if w and not w.startswith("#"))

    @cached_property
    def _pure_term(self) -> Callable[[str], str]:
        """Token (lowercased) -> indexed term, or '' when the token is dropped (stop word)."""
        stop = self.stopwords
        stem = pure_python_stemmer(self.stemmer) if self.stemmer else None
        articles = frozenset(self.elision)
        possessive = self.possessive

        def term(token: str) -> str:
            if articles:
                cut = min((i for i in (token.find(a) for a in _APOSTROPHES) if i >= 0), default=-1)
                if cut >= 0 and token[:cut] in articles:
                    token = token[cut + 1:]
            if possessive and len(token) >= 2 and token[-1] == "s" and token[-2] in _POSSESSIVE_MARKS:
                token = token[:-2]
            if token in stop:
                return ""
            return stem(token) if stem is not None else token

        return term

    @cached_property
    def _cache(self) -> dict[str, tuple[str, ...]]:
        return {}

    @cached_property
    def _token_cache(self) -> dict[str, str]:
        return {}

    def analyzer(self, cache: bool = True, compiled: bool = True) -> Callable[[str], list[str]]:
        """The full chain as a fast callable.

        With ``cache`` (default) terms are memoised, so stop-word removal and stemming run once per
        distinct token (compiled) or chunk (pure Python); ``cache=False`` runs the whole chain on every
        token. ``compiled=False`` forces the pure-Python path. All four give the same terms.
        """
        if compiled and native is not None:
            return self._compiled_analyzer(cache)
        return self._python_analyzer(cache)

    def _compiled_analyzer(self, cache: bool) -> Callable[[str], list[str]]:
        stem = make_stemmer(self.stemmer) if self.stemmer else None
        memo = self._token_cache if cache else None
        args = (memo, STEM_CACHE_MAX, frozenset(self.elision) or None, self.possessive, self.stopwords, stem)
        tokenize, analyze_tokens = _tok.tokenize, native.analyze_tokens
        return lambda text: analyze_tokens(tokenize(text), *args)

    def _python_analyzer(self, cache: bool) -> Callable[[str], list[str]]:
        """Memoised per whitespace-separated chunk of the text -- a word, or a word with its punctuation
        (``Kopernik,``): tokenizing, lowercasing, stop-word removal and stemming of a chunk run once,
        later occurrences are one dict lookup. Chunks tokenize independently (see ``tokenizer.chunker``)."""
        term = self._pure_term
        tokenize = functools.partial(_tok.tokenize, compiled=False)
        if not cache:
            return lambda text: [t for t in map(term, tokenize(text)) if t]
        memo = self._cache
        split, lookup, chain = _tok.chunker(), memo.__getitem__, itertools.chain.from_iterable

        def analyze_chunk(chunk: str) -> tuple[str, ...]:
            terms = memo.get(chunk)
            if terms is None:
                terms = tuple(t for t in map(term, tokenize(chunk)) if t)
                if len(memo) < STEM_CACHE_MAX:
                    memo[chunk] = terms
            return terms

        def analyze(text: str) -> list[str]:
            parts = split(text)
            try:
                return list(chain(map(lookup, parts)))
            except KeyError:
                return list(chain(map(analyze_chunk, parts)))

        return analyze

    @cached_property
    def _analyze(self) -> Callable[[str], list[str]]:
        return self.analyzer()

    def analyze(self, text: str) -> list[str]:
        """Tokenize, lowercase, drop stop words, stem (memoised per whitespace-separated chunk)."""
        return self._analyze(text)

    def tokenize(self, text: str) -> list[str]:
        """StandardTokenizer + lowercase only (no stop words, no stemming)."""
        return _tok.tokenize(text)

    # -- Elasticsearch ----------------------------------------------------------------------------
    def es_settings(self) -> dict:
        """Index ``analysis`` settings defining analyzer ``beirx_text`` = this pack's chain.

        Needs the plugins in :attr:`es_plugins` (Polish: analysis-stempel for ``polish_stem``).
        """
        filters: dict[str, dict] = {}
        chain: list[str] = []
        if self.possessive:
            filters["beirx_possessive"] = {"type": "stemmer", "language": "possessive_english"}
            chain.append("beirx_possessive")
        if self.elision:
            filters["beirx_elision"] = {"type": "elision", "articles": sorted(self.elision), "articles_case": True}
            chain.append("beirx_elision")
        chain.append("lowercase")
        if self.stopwords:
            filters["beirx_stop"] = {"type": "stop", "stopwords": sorted(self.stopwords), "ignore_case": False}
            chain.append("beirx_stop")
        if self.stemmer:
            name, definition = es_stem_filter(self.stemmer)
            if definition is not None:
                filters[name] = definition
            chain.append(name)
        analyzer = {"type": "custom", "tokenizer": "standard", "filter": chain}
        analysis: dict = {"analyzer": {ES_ANALYZER_NAME: analyzer}}
        if filters:
            analysis["filter"] = filters
        return {"analysis": analysis}

    # -- provenance -------------------------------------------------------------------------------
    def describe(self) -> dict:
        """JSON-able summary for results files."""
        words = "\n".join(sorted(self.stopwords))
        return {
            "code": self.code,
            "name": self.name,
            "mteb_code": self.mteb_code,
            "tokenizer": f"lucene-8.7-standard (UAX#29), max_token_length={_tok.MAX_TOKEN_LENGTH}, lowercase",
            "possessive": self.possessive,
            "elision": sorted(self.elision),
            "stopwords": {
                "list": self.stopword_list,
                "count": len(self.stopwords),
                "sha256": hashlib.sha256(words.encode("utf-8")).hexdigest()[:16] if words else None,
            },
            "stemmer": self.stemmer,
            "es_plugins": list(self.es_plugins),
        }
