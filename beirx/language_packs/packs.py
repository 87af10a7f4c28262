"""The declared language packs: one entry per language. Adding a language = adding one entry.

Analysis chains follow Lucene/Elasticsearch (see pack.py); stop-word lists are Lucene 8.7's
defaults for the language (files in stopwords/). Polish stems with Stempel = Lucene's PolishAnalyzer /
ES analysis-stempel; English is the EnglishAnalyzer chain of the BEIR (Thakur et al., 2021) baselines.
Default models per language live in :mod:`beirx.models.default_models`.
"""

from __future__ import annotations

from .pack import LanguagePack

# Lucene's ElisionFilter article sets (FrenchAnalyzer/ItalianAnalyzer/CatalanAnalyzer.DEFAULT_ARTICLES).
FRENCH_ARTICLES = ("l", "m", "t", "qu", "n", "s", "j", "d", "c", "jusqu", "quoiqu", "lorsqu", "puisqu")
ITALIAN_ARTICLES = ("c", "l", "all", "dall", "dell", "nell", "sull", "coll", "pell", "gl", "agl", "dagl",
                    "degl", "negl", "sugl", "un", "m", "t", "s", "v", "d")
CATALAN_ARTICLES = ("d", "l", "m", "n", "s", "t")

PACKS: tuple[LanguagePack, ...] = (
    LanguagePack(
        code="pl", name="Polish", iso3="pol", script="Latn", stemmer="stempel", stopword_list="pl",
        es_plugins=("analysis-stempel",),
        notes="Same tokens as Lucene's PolishAnalyzer = Elasticsearch's `polish` analyzer (analysis-stempel).",
    ),
    LanguagePack(
        code="en", name="English", iso3="eng", script="Latn", stemmer="porter", stopword_list="en",
        possessive=True,
        notes="Same tokens as Lucene's EnglishAnalyzer = Elasticsearch's `english` analyzer.",
    ),
    LanguagePack(code="es", name="Spanish", iso3="spa", script="Latn", stemmer="spanish", stopword_list="es"),
    LanguagePack(code="ca", name="Catalan", iso3="cat", script="Latn", stemmer="catalan", stopword_list="ca",
                 elision=CATALAN_ARTICLES),
    LanguagePack(
        code="gl", name="Galician", iso3="glg", script="Latn", stemmer="portuguese", stopword_list="gl",
        notes="Lucene's GalicianAnalyzer stems with RSLP-Galician, which has no Snowball counterpart; this pack "
              "keeps Lucene's Galician stop words and stems with Snowball Portuguese (closest Snowball language), "
              "in Python and in es_settings() alike.",
    ),
    LanguagePack(code="de", name="German", iso3="deu", script="Latn", stemmer="german", stopword_list="de"),
    LanguagePack(code="fr", name="French", iso3="fra", script="Latn", stemmer="french", stopword_list="fr",
                 elision=FRENCH_ARTICLES),
    LanguagePack(code="it", name="Italian", iso3="ita", script="Latn", stemmer="italian", stopword_list="it",
                 elision=ITALIAN_ARTICLES),
    LanguagePack(code="pt", name="Portuguese", iso3="por", script="Latn", stemmer="portuguese",
                 stopword_list="pt"),
    LanguagePack(code="nl", name="Dutch", iso3="nld", script="Latn", stemmer="dutch_porter", stopword_list="nl",
                 notes="Classic Snowball Dutch (PyStemmer 'dutch_porter'), the algorithm ES's snowball `Dutch` runs."),
    LanguagePack(code="ru", name="Russian", iso3="rus", script="Cyrl", stemmer="russian", stopword_list="ru"),
)
