"""The declared language packs: one entry per language. Adding a language = adding one entry.

Analysis chains follow Lucene/Elasticsearch (see pack.py); stop-word lists are Lucene 8.7's
defaults for the language (files in stopwords/). Model defaults are Hugging Face Hub ids (any
model argument also accepts a local path):

* pl -- BEIR-PL (Wojtasik et al., 2023, arXiv:2305.19840): HerBERT cross-encoder and plT5 monoT5
  rerankers trained on Polish MS MARCO; Stempel = Lucene's PolishAnalyzer / ES analysis-stempel.
* en -- BEIR (Thakur et al., 2021) baselines: EnglishAnalyzer chain, MiniLM cross-encoder, monoT5.
* others -- multilingual-e5, the mMARCO multilingual cross-encoder and mT5 reranker (Bonifacio
  et al., 2021, arXiv:2108.13897), NLLB-200 for translation from English.
"""

from __future__ import annotations

from .pack import LanguagePack

NLLB = "facebook/nllb-200-distilled-600M"
MULTILINGUAL_MODELS = {
    "dense": "intfloat/multilingual-e5-base",
    "cross_encoder": "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1",
    "monot5": "unicamp-dl/mt5-base-mmarco-v2",
    "translation_from_en": NLLB,
}

# Lucene's ElisionFilter article sets (FrenchAnalyzer/ItalianAnalyzer/CatalanAnalyzer.DEFAULT_ARTICLES).
FRENCH_ARTICLES = ("l", "m", "t", "qu", "n", "s", "j", "d", "c", "jusqu", "quoiqu", "lorsqu", "puisqu")
ITALIAN_ARTICLES = ("c", "l", "all", "dall", "dell", "nell", "sull", "coll", "pell", "gl", "agl", "dagl",
                    "degl", "negl", "sugl", "un", "m", "t", "s", "v", "d")
CATALAN_ARTICLES = ("d", "l", "m", "n", "s", "t")

PACKS: tuple[LanguagePack, ...] = (
    LanguagePack(
        code="pl", name="Polish", iso3="pol", script="Latn", stemmer="stempel", stopword_list="pl",
        es_plugins=("analysis-stempel",),
        models={"dense": "intfloat/multilingual-e5-base",
                "cross_encoder": "clarin-knext/herbert-base-reranker-msmarco",
                "monot5": "clarin-knext/plt5-base-msmarco",
                "translation_from_en": NLLB},
        notes="Same tokens as Lucene's PolishAnalyzer = Elasticsearch's `polish` analyzer (analysis-stempel).",
    ),
    LanguagePack(
        code="en", name="English", iso3="eng", script="Latn", stemmer="porter", stopword_list="en",
        possessive=True,
        models={"dense": "intfloat/e5-base-v2",
                "cross_encoder": "cross-encoder/ms-marco-MiniLM-L-6-v2",
                "monot5": "castorini/monot5-base-msmarco",
                "translation_from_en": None},
        notes="Same tokens as Lucene's EnglishAnalyzer = Elasticsearch's `english` analyzer.",
    ),
    LanguagePack(code="es", name="Spanish", iso3="spa", script="Latn", stemmer="spanish", stopword_list="es",
                 models=MULTILINGUAL_MODELS),
    LanguagePack(code="ca", name="Catalan", iso3="cat", script="Latn", stemmer="catalan", stopword_list="ca",
                 elision=CATALAN_ARTICLES, models=MULTILINGUAL_MODELS),
    LanguagePack(
        code="gl", name="Galician", iso3="glg", script="Latn", stemmer="portuguese", stopword_list="gl",
        models=MULTILINGUAL_MODELS,
        notes="Lucene's GalicianAnalyzer stems with RSLP-Galician, which has no Snowball counterpart; this pack "
              "keeps Lucene's Galician stop words and stems with Snowball Portuguese (closest Snowball language), "
              "in Python and in es_settings() alike.",
    ),
    LanguagePack(code="de", name="German", iso3="deu", script="Latn", stemmer="german", stopword_list="de",
                 models=MULTILINGUAL_MODELS),
    LanguagePack(code="fr", name="French", iso3="fra", script="Latn", stemmer="french", stopword_list="fr",
                 elision=FRENCH_ARTICLES, models=MULTILINGUAL_MODELS),
    LanguagePack(code="it", name="Italian", iso3="ita", script="Latn", stemmer="italian", stopword_list="it",
                 elision=ITALIAN_ARTICLES, models=MULTILINGUAL_MODELS),
    LanguagePack(code="pt", name="Portuguese", iso3="por", script="Latn", stemmer="portuguese",
                 stopword_list="pt", models=MULTILINGUAL_MODELS),
    LanguagePack(code="nl", name="Dutch", iso3="nld", script="Latn", stemmer="dutch_porter", stopword_list="nl",
                 models=MULTILINGUAL_MODELS,
                 notes="Classic Snowball Dutch (PyStemmer 'dutch_porter'), the algorithm ES's snowball `Dutch` runs."),
    LanguagePack(code="ru", name="Russian", iso3="rus", script="Cyrl", stemmer="russian", stopword_list="ru",
                 models=MULTILINGUAL_MODELS),
)
