"""The compiled extension (beirx._speedups) gives exactly what the pure-Python code gives.

Stems on every SciFact word (corpus and queries) and every word of the PolEval 2022 questions, plus
seeded random strings over an alphabet of stemmer troublemakers (patch command letters, surrogates,
supplementary characters); tokens of every text and of every BMP character in context; analysis of
whole texts for every pack; BM25 postings, the index, the run lines. Skipped when the extension was
not built (a machine without a compiler runs the pure-Python code only).
"""

from __future__ import annotations

import glob
import json
import random
from array import array

import numpy as np
import pytest

from beirx.language_packs import get_pack, list_packs
from beirx.language_packs.stemmers import make_stemmer, pure_python_stemmer
from beirx.language_packs.tokenizer import tokenize
from beirx.speedups import native
from conftest import SHARED as CONFTEST_SHARED

pytestmark = pytest.mark.skipif(native is None, reason="beirx._speedups not built (no C compiler)")

SHARED = CONFTEST_SHARED / "data"
SCIFACT = SHARED / "beir" / "scifact"


def _scifact_texts() -> list[str]:
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip("../shared SciFact not available")
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as fh:
        texts = [f"{d.get('title', '')} {d['text']}" for d in map(json.loads, fh)]
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as fh:
        return texts + [d["text"] for d in map(json.loads, fh)]


def _poleval_questions() -> list[str]:
    paths = sorted(glob.glob(str(SHARED / "poleval2022" / "*" / "in.tsv")))
    if not paths:
        pytest.skip("../shared PolEval questions not available")
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            texts += [line.rstrip("\n").split("\t", 1)[1] for line in fh if line.strip()]
    return texts


def _random_words(seed: int, n: int) -> list[str]:
    rnd = random.Random(seed)
    alphabet = "abcdeghiklmnoprstuwyząćęłńóśźżAEIOU'-*DRI\U0001F600\ud800\udc00\ufb01"
    endings = ["ami", "ach", "ów", "owie", "ości", "ość", "ując", "ing", "ed", "ation", "ies", "sses", "ness",
               "ement", "izer", "bli", "logi", "ycie", "ego", "ymi", ""]
    return ["".join(rnd.choice(alphabet if rnd.random() < 0.3 else "aeioukrtnszcwyłąę")
                    for _ in range(rnd.randint(0, 12))) + rnd.choice(endings) for _ in range(n)]


@pytest.mark.parametrize("name", ["porter", "stempel"])
def test_stemmers_equal_pure_python_on_real_and_random_words(name):
    words = {t for text in _scifact_texts() + _poleval_questions() for t in tokenize(text, compiled=False)}
    assert len(words) > 50_000
    words |= set(_random_words(7, 100_000))
    compiled, python = make_stemmer(name), pure_python_stemmer(name)
    assert isinstance(compiled, native.Stemmer) and not isinstance(python, native.Stemmer)
    differing = [w for w in words if compiled(w) != python(w)]
    assert differing == []


def test_known_stems():
    assert make_stemmer("stempel")("zmniejszają") == pure_python_stemmer("stempel")("zmniejszają")
    assert make_stemmer("porter")("biotechnology") == "biotechnolog"
    assert make_stemmer("porter")("incredibly") == "incred"
    assert make_stemmer("porter")("happy") == "happi"  # same length, different letters
    assert make_stemmer("stempel")("kot") == "kot"  # at most 3 UTF-16 units: left alone


def test_tokenizer_equals_pure_python_on_real_text_and_every_bmp_character():
    texts = _scifact_texts() + _poleval_questions()
    assert [tokenize(t) for t in texts] == [tokenize(t, compiled=False) for t in texts]
    differing = []
    for cp in range(0x10000):
        ch = chr(cp)
        for text in (ch, f"a{ch}b", f"{ch}{ch}x", f"1{ch}2", f"{ch.upper()}{ch} Σ"):
            if tokenize(text) != tokenize(text, compiled=False):
                differing.append(text)
    assert differing == []
    rnd = random.Random(3)
    alphabet = "aZ09.,:;'’‘-_ \u00a0\u202f\u0130\u03a3σİIıßẞǅ\u0301\u200d\U0001F600ก中カ"
    for _ in range(20_000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 20)))
        assert tokenize(text) == tokenize(text, compiled=False), repr(text)
    long_word = "x" * 300
    assert tokenize(long_word) == tokenize(long_word, compiled=False) == ["x" * 255, "x" * 45]


@pytest.mark.parametrize("code", [p.code for p in list_packs()])
def test_compiled_analysis_equals_pure_python_for_every_pack(code):
    texts = _scifact_texts()[:300] + _poleval_questions()[:1000] + [
        "l'home d'arbres dell'anno", "John's O’Neil's", "The QUICK brown foxes' \U0001F600 jumped"]
    pack = get_pack(code)
    fast, fast_uncached = pack.analyzer(), pack.analyzer(cache=False)
    slow = pack.analyzer(cache=False, compiled=False)
    for text in texts:
        assert fast(text) == fast_uncached(text) == slow(text), text


@pytest.mark.parametrize("code,texts", [("pl", _poleval_questions), ("en", _scifact_texts)])
def test_compiled_analysis_equals_pure_python_on_all_real_text(code, texts):
    pack = get_pack(code)
    fast, slow = pack.analyzer(), pack.analyzer(compiled=False)
    for text in texts():
        assert fast(text) == slow(text), text


def test_count_terms_equals_pure_python():
    from beirx.evaluate.retrievers.bm25_index import _count_terms_python

    docs = [["b", "a", "b", "c", "a", "b"], [], ["z"], ["a"] * 300 + [f"t{i}" for i in range(200)]]
    vocab_c, vocab_p = {}, {}
    ids_c, tfs_c, ids_p, tfs_p = bytearray(), bytearray(), bytearray(), bytearray()
    for terms in docs:
        assert native.count_terms(terms, vocab_c, ids_c, tfs_c) == _count_terms_python(terms, vocab_p, ids_p, tfs_p)
    assert vocab_c == vocab_p and list(vocab_c)[:4] == ["b", "a", "c", "z"]
    assert ids_c == ids_p and tfs_c == tfs_p
    assert array("i", tfs_c)[:3].tolist() == [3, 2, 1]


def test_postings_index_equals_bm25s_own_index():
    import bm25s

    from beirx.evaluate.retrievers.bm25_index import PostingsBuilder

    pack = get_pack("en")
    docs = [pack.analyze(t) for t in _scifact_texts()[:2000]]
    builder = PostingsBuilder()
    for pos, terms in enumerate(docs):
        builder.add(pos, terms)
    ours = builder.to_bm25s(bm25s, 1.2, 0.75, length_norm="exact")  # bm25s keeps exact lengths
    theirs = bm25s.BM25(k1=1.2, b=0.75, method="lucene", idf_method="lucene")
    theirs.index([d for d in docs if d], show_progress=False)
    assert ours.scores["num_docs"] == theirs.scores["num_docs"]
    assert set(ours.vocab_dict) == set(theirs.vocab_dict)

    def column(index, term):
        i = index.vocab_dict[term]
        lo, hi = index.scores["indptr"][i], index.scores["indptr"][i + 1]
        return index.scores["indices"][lo:hi].tolist(), index.scores["data"][lo:hi].tobytes()

    for term in theirs.vocab_dict:
        if term:
            assert column(ours, term) == column(theirs, term), term  # bit-identical float32 scores
    query = pack.analyze("vitamin D deficiency and cancer risk")
    assert np.array_equal(ours.get_scores_from_ids(ours.get_tokens_ids(query)),
                          theirs.get_scores_from_ids(theirs.get_tokens_ids(query)))


def test_lucene_norm_index_equals_pure_python():
    import bm25s

    from beirx.evaluate.retrievers.bm25_index import PostingsBuilder, _count_terms_python

    pack = get_pack("en")
    compiled, python = PostingsBuilder(), PostingsBuilder()
    python._count = _count_terms_python
    for pos, text in enumerate(_scifact_texts()[:600]):
        terms = pack.analyze(text)
        compiled.add(pos, terms)
        python.add(pos, terms)
    ours, theirs = compiled.to_bm25s(bm25s, 0.9, 0.4), python.to_bm25s(bm25s, 0.9, 0.4)
    assert ours.vocab_dict == theirs.vocab_dict
    for part in ("data", "indices", "indptr"):
        assert ours.scores[part].tobytes() == theirs.scores[part].tobytes(), part


def test_trec_lines_equal_pure_python():
    from beirx.evaluate.runs import _trec_lines

    docs = {"d1": 1.5, "d10": 1.5, "d2": 0.1 + 0.2, "ż": 3.0, "d3": 1e-300, "d4": np.float32(2.25), "d5": 7}
    assert native.trec_lines("q1", docs, "tag") == _trec_lines("q1", docs, "tag")
    assert native.trec_lines("q1", docs, "tag").splitlines()[0] == "q1 Q0 d5 1 7.0 tag"
    assert native.trec_lines("q1", {"d": float("nan")}, "tag") is None  # NaN: the Python path decides
    assert native.trec_lines("q", {}, "t") == ""
