"""Language packs against real Lucene 8.7 (the analysis code Elasticsearch runs).

tools/lucene_analyze/LuceneAnalyze.java is compiled with javac into a temporary directory against
the Debian liblucene8-java jars and run once over all test texts for every analyzer: Lucene's
PolishAnalyzer and EnglishAnalyzer, the bare StandardTokenizer, and, for every declared pack, the
chain its ``es_settings()`` declares. Skipped, with the reason, when java/javac or the jars are
missing (CI installs apt packages default-jdk-headless liblucene8-java).

Texts: the 7,909 PolEval 2022 questions, the 1,109 SciFact queries and the first 500 SciFact
documents (from ../shared, skipped when absent), plus 2,000 seeded random strings over an
alphabet of word-break troublemakers (Mid letters, Hebrew quotes, emoji sequences, Thai, CJK...).
"""

from __future__ import annotations

import glob
import json
import os
import random
import re
from pathlib import Path

import pytest

from beirx.language_packs import get_pack, list_packs
from beirx.language_packs.tokenizer import tokenize_raw
from lucene_java import JavaHarness, skip_reason

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "tools" / "lucene_analyze" / "LuceneAnalyze.java"
JAR_PREFIXES = ("lucene-core-8", "lucene-analyzers-common-8", "lucene-analyzers-stempel-8")
DATA = Path(os.environ.get("BEIRX_SHARED", REPO.parent / "shared")) / "data"

# Lucene's analyzer class whose default stop set each pack's list must equal.
LUCENE_STOP_SETS = {"pl": "polish", "en": "english", "es": "spanish", "ca": "catalan", "gl": "galician",
                    "de": "german", "fr": "french", "it": "italian", "pt": "portuguese", "nl": "dutch",
                    "ru": "russian"}
# Token-level agreement of each pack with Lucene 8.7 running its es_settings() chain, as measured.
# PyStemmer ships Snowball 3.0; Lucene 8.7 bundles an older Snowball whose German and French
# stemmers differ for some words (German: apostrophes, ae/oe/ue, ...; French: e.g. "nie" -> "ni").
MIN_TOKEN_AGREEMENT = {"de": 0.990, "fr": 0.999}
FUZZ_ALPHABET = (list("aZ1\u0663.,:;'\"\u2019_- /\u0301\u200d\ufe0f\u20e3#*\u00ad\u00e4\u0130\u00a9\u202f")
                 + ["\u05d0", "\u05d1", "\u30ab", "\u3072", "\u4e2d", "\u0e01", "\u0e31", "\U0001f600", "\U0001f44d",
                    "\U0001f3fd", "\U0001f1f5", "\U0001f1f1", "\u24c2", "\U000e0067", "\U000e007f", "\u066c"])


_SKIP = skip_reason(JAR_PREFIXES)
pytestmark = pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")


class Lucene:
    """The compiled harness."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._harness = JavaHarness(HARNESS, workdir, JAR_PREFIXES)

    def _run(self, args: list[str], data: str) -> list[str]:
        return self._harness.run(args, data)

    def analyze(self, specs: list[list[str]], lines: list[str]) -> list[list[list[str]]]:
        """Token lists per line, for each analyzer spec (one JVM for all)."""
        assert all("\n" not in line and "\r" not in line for line in lines)
        args = [arg for i, spec in enumerate(specs) for arg in ([] if i == 0 else ["+"]) + spec]
        rows = self._run(args, "".join(f"{line}\n" for line in lines))
        assert len(rows) == len(specs) * len(lines)
        tokens = [row.split(" ") if row else [] for row in rows]
        return [tokens[i * len(lines):(i + 1) * len(lines)] for i in range(len(specs))]

    def stop_sets(self, names: list[str]) -> dict[str, set[str]]:
        sets: dict[str, set[str]] = {name: set() for name in names}
        for row in self._run(["stopset", *names], ""):
            name, word = row.split("\t")
            sets[name].add(word)
        return sets

    def chain_for(self, pack) -> list[str]:
        """Harness steps for the chain ``pack.es_settings()`` declares (so the ES settings are tested too)."""
        analysis = pack.es_settings()["analysis"]
        analyzer = analysis["analyzer"][pack.es_analyzer_name]
        assert analyzer["tokenizer"] == "standard" and analyzer["type"] == "custom"
        filters = analysis.get("filter", {})
        steps = ["chain"]
        for name in analyzer["filter"]:
            spec = filters.get(name, {"type": name})
            kind = spec["type"]
            if kind == "lowercase":
                steps.append("lowercase")
            elif kind == "stop":
                path = self.workdir / f"{pack.code}.stop"
                path.write_text("".join(f"{w}\n" for w in spec["stopwords"]), encoding="utf-8")
                steps.append(f"stop={path}")
            elif kind == "elision":
                assert spec["articles_case"] is True
                steps.append("elision=" + ",".join(spec["articles"]))
            elif kind == "stemmer" and spec["language"] == "possessive_english":
                steps.append("possessive")
            elif kind == "snowball":
                steps.append(f"snowball={spec['language']}")
            elif kind == "porter_stem":
                steps.append("porter")
            elif kind == "polish_stem":
                steps.append("stempel")
            else:
                raise AssertionError(f"no harness step for ES filter {spec}")
        return steps


def _texts() -> dict[str, list[str]]:
    def one_line(text: str) -> str:
        return re.sub(r"[\r\n]", " ", text)

    texts: dict[str, list[str]] = {"polish": [], "scifact": []}
    for path in sorted(glob.glob(str(DATA / "poleval2022" / "*" / "in.tsv"))):
        with open(path, encoding="utf-8") as fh:
            texts["polish"] += [one_line(line.rstrip("\n").split("\t", 1)[1]) for line in fh if line.strip()]
    scifact = DATA / "beir" / "scifact"
    if scifact.is_dir():
        with open(scifact / "queries.jsonl", encoding="utf-8") as fh:
            texts["scifact"] += [one_line(json.loads(line)["text"]) for line in fh]
        with open(scifact / "corpus.jsonl", encoding="utf-8") as fh:
            for i, line in zip(range(500), fh):
                doc = json.loads(line)
                texts["scifact"].append(one_line(f"{doc.get('title', '')} {doc['text']}"))
    rng = random.Random(29)
    texts["fuzz"] = ["".join(rng.choice(FUZZ_ALPHABET) for _ in range(rng.randint(1, 30))) for _ in range(2000)]
    return texts


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """(texts by source, Lucene token lists by analyzer name, all lines in order)."""
    lucene = Lucene(tmp_path_factory.mktemp("lucene"))
    texts = _texts()
    lines = [line for source in ("polish", "scifact", "fuzz") for line in texts[source]]
    specs = {"tokenizer": ["chain"], "polish": ["polish"], "english": ["english"]}
    specs.update({f"pack:{pack.code}": lucene.chain_for(pack) for pack in list_packs()})
    results = lucene.analyze(list(specs.values()), lines)
    stop_sets = lucene.stop_sets(sorted(set(LUCENE_STOP_SETS.values())))
    return texts, dict(zip(specs, results)), lines, stop_sets


def _agreement(expected: list[list[str]], actual: list[list[str]]) -> tuple[int, int, int, int]:
    """(lines equal, lines, tokens equal position-wise, tokens in the longer of each pair)."""
    same_lines = sum(e == a for e, a in zip(expected, actual))
    tokens = sum(max(len(e), len(a)) for e, a in zip(expected, actual))
    same_tokens = sum(sum(x == y for x, y in zip(e, a)) for e, a in zip(expected, actual))
    return same_lines, len(expected), same_tokens, tokens


def test_tokenizer_equals_lucene_standard_tokenizer(reference):
    _, lucene, lines, _ = reference
    assert [tokenize_raw(line) for line in lines] == lucene["tokenizer"]


def test_polish_pack_equals_polish_analyzer_on_every_line(reference):
    texts, lucene, lines, _ = reference
    if not texts["polish"]:
        pytest.skip(f"PolEval 2022 questions not found under {DATA}")
    assert len(texts["polish"]) == 7909
    analyze = get_pack("pl").analyzer()
    mine = [analyze(line) for line in lines]
    polish = slice(0, len(texts["polish"]))
    assert _agreement(lucene["polish"][polish], mine[polish])[:2] == (7909, 7909)
    assert mine == lucene["polish"]  # the SciFact and fuzz lines too


def test_english_pack_equals_english_analyzer_on_every_line(reference):
    texts, lucene, lines, _ = reference
    if not texts["scifact"]:
        pytest.skip(f"SciFact not found under {DATA}")
    analyze = get_pack("en").analyzer()
    assert [analyze(line) for line in lines] == lucene["english"]


@pytest.mark.parametrize("code", [pack.code for pack in list_packs()])
def test_pack_equals_lucene_running_its_es_settings(reference, code):
    _, lucene, lines, _ = reference
    analyze = get_pack(code).analyzer()
    same_lines, n_lines, same_tokens, n_tokens = _agreement(lucene[f"pack:{code}"], [analyze(x) for x in lines])
    minimum = MIN_TOKEN_AGREEMENT.get(code, 1.0)
    assert same_tokens / n_tokens >= minimum, (code, same_lines, n_lines, same_tokens, n_tokens)
    if minimum == 1.0:
        assert (same_lines, same_tokens) == (n_lines, n_tokens)


@pytest.mark.parametrize("code", sorted(LUCENE_STOP_SETS))
def test_stopwords_are_lucene_default_stop_sets(reference, code):
    lucene = reference[3][LUCENE_STOP_SETS[code]]
    # GalicianAnalyzer reads its file's "# galican stopwords" header as a stop word; no token has a space.
    assert get_pack(code).stopwords == {w for w in lucene if " " not in w}
