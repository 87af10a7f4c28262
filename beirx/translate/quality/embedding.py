"""The ``similarity`` quality method: cross-lingual similarity of source and translation.

BEIR-PL (Wojtasik et al., 2024, Table 2) judged its translations by the mean cosine similarity of LaBSE
embeddings (Feng et al., 2022) of each original and its translation: a language-agnostic encoder maps a
sentence and its faithful translation close together, so a low score points to a translation that lost or
changed meaning. It cannot see a translation left in the source language (that scores ~1; the ``checks``
method flags it). The encoder is the run's (``--encoder``, :class:`~beirx.translate.similarity.PairEncoder`),
shared with the round trip. On unless ``--no-similarity``.
"""

from __future__ import annotations

from typing import Any

from beirx.translate.quality.base import FieldPairs, MethodResult, QualityContext, QualityMethod, Score
from beirx.translate.quality.stats import ROBUST_Z, flag_low_outliers


class EmbeddingSimilarity(QualityMethod):
    name = "similarity"
    default = True
    scores = (Score("similarity", "cosine similarity of source and translation embeddings", scale=(0.0, 1.0)),)
    flags = {"low_similarity": f"similarity is a low outlier for this field (robust z < -{ROBUST_Z})"}

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--no-similarity", action="store_true",
                           help="skip the cross-lingual similarity (e.g. when only an LLM judge or COMET should run)")

    @classmethod
    def from_args(cls, args, src: str, tgt: str) -> EmbeddingSimilarity | None:
        return None if args.no_similarity else cls()

    def describe(self, context: QualityContext) -> dict[str, Any]:
        return context.encoder().describe()

    def score(self, pairs: FieldPairs, context: QualityContext) -> MethodResult:
        sims = context.encoder().similarities(pairs.sources, pairs.translations, pairs.role, f"quality-{pairs.field}")
        values = {item: float(sim) for item, sim in zip(pairs.ids, sims)}
        result = MethodResult(values={"similarity": values}, scored=len(values))
        for item in flag_low_outliers(values):
            result.flag(item, "low_similarity")
        return result
