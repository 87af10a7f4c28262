"""A synthetic retrieval dataset with enough queries for a dev slice, and a tiny bi-encoder that reads its words.

Query ``q<i>`` asks for its topic word ``t<i>``; its one relevant document ``d<i>`` holds the topic word among
filler words, and distractor documents ``x<i>`` share the filler but not the topic. Built in milliseconds, so the
training tests can run the whole dev-slice selection (base, checkpoints, the choice) for real.
"""

from __future__ import annotations

import random
from pathlib import Path

from conftest import write_beir

FILLER = [f"w{i}" for i in range(30)]


def synthetic_dataset(root: Path, queries: int = 40, seed: int = 0) -> Path:
    """``queries`` judged train queries (and ten test ones), a document per query and as many distractors."""
    rng = random.Random(seed)
    corpus, texts, qrels = [], [], {"train": [], "test": []}
    for i in range(queries + 10):
        corpus.append({"_id": f"d{i}", "title": "", "text": " ".join([f"t{i}", *rng.sample(FILLER, 6)])})
        corpus.append({"_id": f"x{i}", "title": "", "text": " ".join(rng.sample(FILLER, 7))})
        texts.append({"_id": f"q{i}", "text": f"t{i} " + " ".join(rng.sample(FILLER, 2))})
        qrels["train" if i < queries else "test"].append((f"q{i}", f"d{i}", 1))
    return write_beir(root, corpus, texts, qrels)


def synthetic_bi_encoder(folder: Path, topics: int = 50, seed: int = 3) -> Path:
    """A 2-layer, 16-dim BERT with mean pooling over the synthetic vocabulary, as a sentence-transformers folder."""
    from hardening_helpers import build_tiny_st

    return build_tiny_st(folder, [*FILLER, *(f"t{i}" for i in range(topics))], seed=seed, max_seq_length=32)
