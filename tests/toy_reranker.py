"""A toy pairwise reranker: the whole of what a new reranker needs besides its one registry line (see
test_layering).

A document scores the number of distinct query words it contains, plus ``--toy-boost-score`` (default 10)
when it contains the word ``--toy-boost``: its own flags, declared here and nowhere else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from beirx.argtypes import non_negative_float
from beirx.evaluate.rerankers.base import Pair, PairwiseReranker
from beirx.options import Option

BOOST_SCORE = 10.0


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class ToyReranker(PairwiseReranker):
    name = "toy"

    OPTIONS = (Option("device"),
               Option("boost", flag="--toy-boost", metavar="WORD", help="documents containing WORD score higher"),
               Option("boost_score", non_negative_float, default=BOOST_SCORE, flag="--toy-boost-score",
                      help="what --toy-boost adds"))

    @classmethod
    def model_is_local(cls, params: dict[str, Any]) -> bool:
        return False  # its "model" is only a name: nothing to look for before the run

    def __init__(self, model: str, *, lang: str = "en", boost: str | None = None, boost_score: float = BOOST_SCORE,
                 device: str | None = None, show_progress: bool = True, use_cache: bool = True):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        self.model, self.boost, self.boost_score = model, boost, boost_score

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.name, "model": self.model, "boost": self.boost, "boost_score": self.boost_score}

    def score_pairs(self, pairs: list[Pair], progress: Callable[[int], None]) -> list[float]:
        scores = []
        for query, doc in pairs:
            text = words(f"{doc.title} {doc.text}")
            scores.append(len(words(query.text) & text) + (self.boost_score if self.boost in text else 0.0))
        progress(len(pairs))
        return scores
