"""Language packs: declarations, Lucene-compatible analysis on hand-checked cases, ES settings, lookups.

The comparison with real Lucene on real data is in test_language_packs_lucene.py.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from beirx.language_packs import LanguagePack, get_pack, list_packs
from beirx.language_packs.porter import porter_stem
from beirx.language_packs.stemmers import known_stemmers, make_stemmer
from beirx.language_packs.tokenizer import MAX_TOKEN_LENGTH, chunker, java_lower, tokenize, tokenize_raw
from beirx.models.default_models import KINDS, default_model
from beirx.models.relevance_tokens import relevance_tokens

SNOWBALL_CODES = ("es", "ca", "gl", "de", "fr", "it", "pt", "nl", "ru")


# -- every declared pack ------------------------------------------------------------------------------

@pytest.mark.parametrize("pack", list_packs(), ids=lambda p: p.code)
def test_every_pack_is_complete_and_consistent(pack: LanguagePack):
    assert get_pack(pack.code) is pack
    assert len(pack.code) == 2 and pack.name and len(pack.iso3) == 3 and len(pack.script) == 4
    assert pack.mteb_code == f"{pack.iso3}-{pack.script}"
    assert pack.nllb_code == f"{pack.iso3}_{pack.script}"
    assert get_pack(pack.mteb_code) is pack and get_pack(pack.nllb_code) is pack and get_pack(pack.iso3) is pack
    assert pack.stemmer in known_stemmers()
    assert len(pack.stopwords) > 30 and all(w == java_lower(w) and w.strip() == w for w in pack.stopwords)
    assert all(default_model(k, pack.code) for k in ("dense", "cross-encoder", "monot5"))
    assert default_model("colbert", pack.code) is None
    assert (default_model("translation_from_en", pack.code) is None) == (pack.code == "en")
    # analysis: stop words vanish, every term is a lowercased token or its stem
    text = f"{sorted(pack.stopwords)[0].upper()} Zebra42 {sorted(pack.stopwords)[-1]}"
    assert pack.analyze(text) == [make_stemmer(pack.stemmer)("zebra42")]
    assert pack.tokenize(text) == [java_lower(t) for t in tokenize_raw(text)]
    json.dumps(pack.describe())
    assert pack.describe()["stopwords"]["count"] == len(pack.stopwords)


@pytest.mark.parametrize("pack", list_packs(), ids=lambda p: p.code)
def test_es_settings_define_the_pack_chain(pack: LanguagePack):
    analysis = pack.es_settings()["analysis"]
    analyzer = analysis["analyzer"][pack.es_analyzer_name]
    assert pack.es_analyzer_name == "beirx_text"
    assert analyzer["type"] == "custom" and analyzer["tokenizer"] == "standard"
    builtin = {"lowercase", "polish_stem", "porter_stem"}
    assert all(name in builtin or name in analysis["filter"] for name in analyzer["filter"])
    assert analysis["filter"]["beirx_stop"]["stopwords"] == sorted(pack.stopwords)
    json.dumps(analysis)


def test_polish_and_english_es_chains():
    pl, en = get_pack("pl"), get_pack("en")
    assert pl.es_settings()["analysis"]["analyzer"]["beirx_text"]["filter"] == ["lowercase", "beirx_stop", "polish_stem"]
    assert pl.es_plugins == ("analysis-stempel",)
    en_analysis = en.es_settings()["analysis"]
    assert en_analysis["analyzer"]["beirx_text"]["filter"] == ["beirx_possessive", "lowercase", "beirx_stop", "porter_stem"]
    assert en_analysis["filter"]["beirx_possessive"] == {"type": "stemmer", "language": "possessive_english"}
    assert en.es_plugins == ()
    fr = get_pack("fr").es_settings()["analysis"]
    assert fr["analyzer"]["beirx_text"]["filter"] == ["beirx_elision", "lowercase", "beirx_stop", "beirx_stem"]
    assert fr["filter"]["beirx_stem"] == {"type": "snowball", "language": "French"}
    assert get_pack("nl").es_settings()["analysis"]["filter"]["beirx_stem"]["language"] == "Dutch"


def test_list_packs_covers_the_required_languages():
    assert {p.code for p in list_packs()} >= {"pl", "en", *SNOWBALL_CODES}
    assert len({p.code for p in list_packs()}) == len(list_packs())


# -- lookup and fallback -------------------------------------------------------------------------------

def test_polish_pack_identity():
    pack = get_pack("pl")
    assert (pack.code, pack.mteb_code, pack.name, pack.iso3, pack.script, pack.nllb_code) == (
        "pl", "pol-Latn", "Polish", "pol", "Latn", "pol_Latn")
    assert pack.stemmer == "stempel" and len(pack.stopwords) == 182
    assert {k: default_model(k, "pl") for k in KINDS} == {
        "dense": "intfloat/multilingual-e5-base", "cross-encoder": "clarin-knext/herbert-base-reranker-msmarco",
        "monot5": "clarin-knext/plt5-base-msmarco", "colbert": None, "splade": None,
        "translation_from_en": "facebook/nllb-200-distilled-600M"}
    assert default_model("monot5", "pol-Latn") == default_model("monot5", "pl")  # any code form
    assert get_pack("PL") is pack and get_pack("pl-PL") is pack and get_pack("pl_PL") is pack


def test_unknown_language_gets_generic_pack_logged_once(caplog):
    with caplog.at_level(logging.WARNING, logger="beirx.language_packs"):
        sw = get_pack("sw")
        assert get_pack("sw") is sw
    assert len([r for r in caplog.records if "'sw'" in r.getMessage()]) == 1
    assert (sw.code, sw.iso3, sw.mteb_code, sw.nllb_code) == ("sw", "swa", "swa-Latn", "swh_Latn")
    assert sw.name == "Swahili (macrolanguage)"
    assert sw.stopwords == frozenset() and sw.stemmer is None
    assert sw.analyze("Habari ya ASUBUHI, dunia!") == ["habari", "ya", "asubuhi", "dunia"]
    assert default_model("translation_from_en", "sw") == "facebook/nllb-200-distilled-600M"
    assert default_model("dense", "sw") == "intfloat/multilingual-e5-base"
    assert "filter" not in sw.es_settings()["analysis"]
    assert sw.es_settings()["analysis"]["analyzer"]["beirx_text"]["filter"] == ["lowercase"]


def test_fallback_for_codes_outside_iso_639_1():
    xx = get_pack("xx")
    assert (xx.code, xx.mteb_code, xx.nllb_code) == ("xx", None, None)
    assert default_model("translation_from_en", "xx") is None
    zh_hant = get_pack("zh-Hant")
    assert (zh_hant.mteb_code, zh_hant.nllb_code) == ("zho-Hant", "zho_Hant")
    assert get_pack("ar").nllb_code == "arb_Arab"


def test_get_pack_is_cheap_and_lazy():
    code = ("import sys, time; t = time.perf_counter(); from beirx.language_packs import get_pack;"
            "p = get_pack('pl'); p.es_settings(); p.describe();"
            "print(time.perf_counter() - t, 'pystempel' in sys.modules, 'Stemmer' in sys.modules)")
    seconds, stempel, snowball = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                check=True).stdout.split()
    assert (stempel, snowball) == ("False", "False")
    assert float(seconds) < 1.0


# -- tokenizer (Lucene StandardTokenizer, UAX#29) -------------------------------------------------------

@pytest.mark.parametrize("text, tokens", [
    ("Hello, World!", ["Hello", "World"]),
    ("can't U.S.A. e.g. a:b", ["can't", "U.S.A", "e.g", "a:b"]),  # WB6/7: MidLetter, MidNumLet, '
    ("3.14 1,000,000 10:30 1.2.3", ["3.14", "1,000,000", "10", "30", "1.2.3"]),  # WB11/12 (':' is MidLetter only)
    ("abc123 1st foo_bar __x", ["abc123", "1st", "foo_bar", "__x"]),  # WB9/10, ExtendNumLet
    ("a.1 1.a a,b", ["a", "1", "1", "a", "a", "b"]),
    ("e-mail co-operation", ["e", "mail", "co", "operation"]),
    ("Zażółć gęślą jaźń", ["Zażółć", "gęślą", "jaźń"]),
    ("東京タワー ひらがな ภาษาไทย", ["東", "京", "タワー", "ひ", "ら", "が", "な", "ภาษาไทย"]),
    ("😀 👍🏽 🇵🇱 #️⃣ ©", ["😀", "👍🏽", "🇵🇱", "#️⃣", "©"]),
    ("ב\"א א'", ["ב\"א", "א'"]),  # WB7a-c Hebrew quotes
    ("a\u202fb", ["a\u202fb"]),  # U+202F is ExtendNumLet
    ("cafe\u0301 soft\u00adhyphen", ["cafe\u0301", "soft\u00adhyphen"]),  # WB4 Extend/Format
    ("", []),
    ("?!.,", []),
])
def test_tokenizer_cases(text, tokens):
    assert tokenize_raw(text) == tokens


def test_long_tokens_are_cut_like_lucene():
    assert [len(t) for t in tokenize_raw("a" * 600)] == [MAX_TOKEN_LENGTH, MAX_TOKEN_LENGTH, 90]
    assert [len(t) for t in tokenize_raw("a" * 254 + "\U0001d400bc")] == [254, 3]  # 𝐀 is two UTF-16 units


def test_lowercasing_is_javas_per_code_point():
    assert tokenize("İSTANBUL ΟΔΟΣ Straße") == ["istanbul", "οδοσ", "straße"]
    assert java_lower("ΣΑΣ") == "σασ"
    assert tokenize("\u200d\u24c2") == ["\u200d\u24dc"]  # tokenized as an emoji before lowercasing


def test_chunks_tokenize_independently():
    split = chunker()
    text = "Kopernik, (1473–1543) was a\u202fb  U.S.A.\tbig 😀 "
    assert split(text) == ["Kopernik,", "(1473–1543)", "was", "a\u202fb", "U.S.A.", "big", "😀"]
    assert [t for c in split(text) for t in tokenize_raw(c)] == tokenize_raw(text)


# -- stemmers and analysis ------------------------------------------------------------------------------

def test_polish_analysis_matches_lucene_polish_analyzer_examples():
    # Outputs of org.apache.lucene.analysis.pl.PolishAnalyzer (Lucene 8.7) for these texts.
    pack = get_pack("pl")
    assert pack.analyze("Ile lat miał Kopernik, gdy zmarł? Domy i kotów nie było.") == [
        "ile", "kopernik", "zmarzeć", "domy", "kot"]
    assert pack.analyze("Kotów nie było, the cats") == ["kot", "the", "cats"]


def test_stempel_min_length_and_fallback():
    stem = make_stemmer("stempel")
    assert stem("kot") == "kot"  # 3 chars: StempelFilter only stems length > 3
    assert stem("kotów") == "kot"
    assert stem("ryszard") == "ryszard"  # the table yields no stem (pystempel: None) -> the word itself


def test_porter_is_lucenes_not_the_papers():
    # Lucene's PorterStemmer (Porter's C code) departs from the 1980 paper (= PyStemmer "porter").
    # Expected values: Lucene 8.7 PorterStemFilter output.
    assert [porter_stem(w) for w in ("as", "is", "5s", "biology", "biotechnology", "incredibly", "running",
                                     "caresses", "ponies", "relational", "hopeful", "generalization", "sky")] == [
        "as", "is", "5s", "biologi", "biotechnolog", "incred", "run", "caress", "poni", "relat", "hope", "gener",
        "sky"]


def test_english_analysis_matches_lucene_english_analyzer_examples():
    # Output of org.apache.lucene.analysis.en.EnglishAnalyzer (Lucene 8.7).
    assert get_pack("en").analyze("The dog's owners were running quickly to biology labs. It's U.S.A.") == [
        "dog", "owner", "were", "run", "quickli", "biologi", "lab", "u.s.a"]


def test_elision_for_french_italian_catalan():
    assert get_pack("fr").analyze("L'homme qu'il aimait n'était pas là") == ["homm", "aim", "là"]
    assert get_pack("it").analyze("dell'anno") == [make_stemmer("italian")("anno")]
    assert get_pack("ca").analyze("l'home d'arbres") == [make_stemmer("catalan")(w) for w in ("home", "arbres")]


@pytest.mark.parametrize("code", ["pl", "en", "fr"])
def test_cached_analyzer_equals_uncached(code):
    pack = get_pack(code)
    texts = ["Kotów nie było, the cats' owner's café", "L'homme 3.14 U.S.A. 😀 a\u202fb ΣΑΣ İzmir",
             "Kotów nie było, the cats' owner's café", "", "   ", "x" * 300]
    cached, uncached = pack.analyzer(), pack.analyzer(cache=False)
    assert [cached(t) for t in texts] == [uncached(t) for t in texts] == [pack.analyze(t) for t in texts]


def test_unknown_stemmer_is_a_user_error():
    from beirx.errors import BeirxError

    with pytest.raises(BeirxError, match="unknown stemmer 'klingon'"):
        make_stemmer("klingon")


# -- monoT5 relevance tokens ----------------------------------------------------------------------------

@pytest.mark.parametrize("model, lang, tokens", [
    ("castorini/monot5-base-msmarco", "en", ("true", "false")),
    ("castorini/monot5-3b-msmarco-10k", "pl", ("true", "false")),  # checkpoint wins over language
    ("clarin-knext/plt5-base-msmarco", "pl", ("prawda", "fałsz")),
    ("/models/clarin-knext--plt5-large-msmarco", "en", ("prawda", "fałsz")),
    ("unicamp-dl/mt5-base-mmarco-v2", "pl", ("yes", "no")),
    ("/models/my-own-t5", "pol-Latn", ("prawda", "fałsz")),  # language default
    ("/models/my-own-t5", "en", ("true", "false")),
    ("/models/my-own-t5", "es", ("yes", "no")),
])
def test_relevance_tokens(model, lang, tokens):
    assert relevance_tokens(model, lang) == tokens
