"""Stemmers by name, each with the Elasticsearch token filter that runs the same algorithm.

* ``stempel``: Stempel (Galambos 2001, "Lemmatizer for document information retrieval systems in JAVA")
  with the ``stemmer_20000.tbl`` table of Lucene's PolishAnalyzer -- pystempel's ``Stemmer.default()``
  loads the byte-identical table. Like Lucene's StempelFilter it leaves tokens of at most 3 UTF-16
  units alone (``DEFAULT_MIN_LENGTH = 3``, stems only ``length > 3``) and keeps the word when the
  table yields no stem. Elasticsearch: ``polish_stem`` from the analysis-stempel plugin.
* ``porter``: Lucene's PorterStemFilter (see :mod:`porter`); Elasticsearch: ``porter_stem``.

Stempel and Porter run compiled (``beirx._speedups``, a C port of the same code, see
beirx/_speedups.c) when the extension was built, and as the pure-Python code below otherwise; tests
assert both give the same stems (tests/test_speedups.py).
* Snowball algorithms (PyStemmer): Elasticsearch's ``snowball`` filter with the language below.
  PyStemmer ships Snowball 3.0, where ``dutch`` is a new algorithm and the classic one -- the one
  Lucene and Elasticsearch call ``Dutch`` -- is ``dutch_porter``. Lucene bundles its own Snowball
  release, so a small share of words can stem differently between PyStemmer and a given ES version.
"""

from __future__ import annotations

import logging
import warnings
from functools import lru_cache
from typing import Callable

log = logging.getLogger(__name__)

# Snowball algorithm name (PyStemmer) -> language name of Elasticsearch's `snowball` token filter.
SNOWBALL_ES_LANGUAGE = {
    "spanish": "Spanish", "catalan": "Catalan", "portuguese": "Portuguese", "german": "German",
    "french": "French", "italian": "Italian", "dutch_porter": "Dutch", "russian": "Russian",
    "english": "English", "danish": "Danish", "finnish": "Finnish", "hungarian": "Hungarian",
    "norwegian": "Norwegian", "romanian": "Romanian", "swedish": "Swedish", "turkish": "Turkish",
    "basque": "Basque", "irish": "Irish", "lithuanian": "Lithuanian", "armenian": "Armenian",
}

STEMPEL_MIN_LENGTH = 3  # org.apache.lucene.analysis.stempel.StempelFilter.DEFAULT_MIN_LENGTH


def known_stemmers() -> tuple[str, ...]:
    return ("stempel", "porter", *SNOWBALL_ES_LANGUAGE)


def es_stem_filter(name: str) -> tuple[str, dict | None]:
    """(filter name to use in the analyzer chain, its definition or None for a built-in filter)."""
    if name == "stempel":
        return "polish_stem", None
    if name == "porter":
        return "porter_stem", None
    return "beirx_stem", {"type": "snowball", "language": SNOWBALL_ES_LANGUAGE[name]}


def _on_java_chars(stem: Callable[[str], str]) -> Callable[[str], str]:
    """Run ``stem`` on the word's UTF-16 code units, as Lucene's stemmers see a Java ``char[]``.

    Only words with a supplementary-plane character differ (each such character is two "letters"
    to Lucene); an unpaired surrogate left by the stemmer becomes U+FFFD, as in Lucene's index.
    """

    def stem_units(word: str) -> str:
        if word.isascii() or max(word) <= "\uffff":
            return stem(word)
        units = word.encode("utf-16-le", "surrogatepass")
        as_chars = "".join(chr(int.from_bytes(units[i:i + 2], "little")) for i in range(0, len(units), 2))
        return stem(as_chars).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")

    return stem_units


def _stempel_table_bytes() -> bytes:
    """The uncompressed ``stemmer_20000.tbl`` shipped in pystempel (byte-identical to Lucene's)."""
    import gzip
    from importlib import resources

    return gzip.decompress(resources.files("pystempel.data.original").joinpath("stemmer_20000.tbl.gz").read_bytes())


def _stempel() -> Callable[[str], str]:
    import pystempel.streams
    from pystempel import Stemmer

    log.info("loading the Stempel table (stemmer_20000.tbl)")
    quiet, pystempel.streams.DISABLE_TQDM = pystempel.streams.DISABLE_TQDM, True  # no progress bar for ~1.5 s
    try:
        with warnings.catch_warnings():  # pystempel uses the deprecated importlib.resources.path
            warnings.simplefilter("ignore", DeprecationWarning)
            table = Stemmer.default()
    finally:
        pystempel.streams.DISABLE_TQDM = quiet

    def stem(word: str) -> str:
        if len(word) <= STEMPEL_MIN_LENGTH:
            return word
        try:
            stemmed = table(word)
        except IndexError:  # Lucene's MultiTrie2 swallows these too and keeps the word
            return word
        return word if stemmed is None else stemmed

    return stem


def make_stemmer(name: str) -> Callable[[str], str]:
    """A one-word stemming function for ``name``; tables load on the first call, shared afterwards."""
    return _make_stemmer(name, compiled=True)


def pure_python_stemmer(name: str) -> Callable[[str], str]:
    """The pure-Python stemmer for ``name`` (what runs without the compiled extension)."""
    return _make_stemmer(name, compiled=False)


@lru_cache(maxsize=None)
def _make_stemmer(name: str, compiled: bool) -> Callable[[str], str]:
    from beirx.speedups import native as compiled_module

    native = compiled_module if compiled else None
    if name == "stempel":
        if native is not None:  # the same table walk in C; parses the table in ~10 ms instead of ~1.5 s
            log.debug("loading the Stempel table (stemmer_20000.tbl) into the compiled stemmer")
            return native.stempel(_stempel_table_bytes())
        return _on_java_chars(_stempel())
    if name == "porter":
        if native is not None:
            return native.porter()
        from .porter import porter_stem

        return _on_java_chars(porter_stem)
    if name not in SNOWBALL_ES_LANGUAGE:
        from beirx.errors import BeirxError

        raise BeirxError(f"unknown stemmer {name!r}; known: {', '.join(known_stemmers())}")
    import Stemmer

    return Stemmer.Stemmer(name).stemWord  # works on code points (UTF-8); cannot take surrogates
