"""The ``similarity`` quality method: cross-lingual similarity of source and translation.

BEIR-PL (Wojtasik et al., 2024, Table 2) judged its translations by the mean cosine similarity of LaBSE
embeddings (Feng et al., 2022) of each original and its translation: a language-agnostic encoder maps a
sentence and its faithful translation close together, so a low score points to a translation that lost or
changed meaning. It cannot see a translation left in the source language (that scores ~1; the ``checks``
method flags it). The encoder is the run's (``--encoder``, :class:`~beirx.translate.quality.pair_encoder.PairEncoder`),
shared with the round trip. On unless ``--no-similarity``; every row unless ``--similarity-sample`` (a seeded
sample, or ``qrels:SPLIT``: the rows a split's qrels judge, what retrieval evaluation reads, when encoding a whole
corpus twice costs too much).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from beirx.options import Option
from beirx.translate.quality.base import (FieldPairs, JudgedRows, MethodResult, QualityContext, QualityMethod, Score,
                                          rows_to_score)
from beirx.translate.quality.stats import ROBUST_Z

if TYPE_CHECKING:
    from beirx.artifacts.quality import FieldQuality, QualityReport


class EmbeddingSimilarity(QualityMethod):
    name = "similarity"
    default = True
    scores = (Score("similarity", "cosine similarity of source and translation embeddings", scale=(0.0, 1.0),
                    low_outlier="low_similarity"),)
    flags = {"low_similarity": f"similarity is a low outlier for this field (robust z < -{ROBUST_Z})"}

    def __init__(self, sample: int | JudgedRows | None = None):
        self.sample = sample
        self.whole_field = isinstance(sample, int)  # a seeded sample is drawn over the field; else chunk by chunk

    OPTIONS = (
        Option("skip", switch=True, flag="--no-similarity",
               help="skip the cross-lingual similarity (e.g. when only an LLM judge or COMET should run)"),
        Option("sample", rows_to_score, flag="--similarity-sample", metavar="N|all|qrels:SPLIT",
               help="rows per field to embed: a seeded sample, all, or qrels:SPLIT (the queries and documents the "
                    "SPLIT qrels judge; default all)"),
    )

    @classmethod
    def from_options(cls, given, src: str, tgt: str, use_cache: bool = True) -> EmbeddingSimilarity | None:
        return None if given.get("skip") else cls(given.get("sample"))

    @classmethod
    def report_section(cls, report: QualityReport) -> list[str]:
        """The encoder, BEIR-PL's Table 2 (mean similarity per field) and each field's histogram."""
        from beirx.translate.quality.report_files import fmt, table

        fields = report.parameters.fields
        lines = [f"Encoder: `{report.encoder_model}` (revision `{report.encoder_revision}`), cosine similarity of "
                 "source and translation.", ""]
        if "similarity" in report.scores:
            lines += ["## Mean similarity (BEIR-PL Table 2 layout)", ""]
            lines += table(["Dataset", *(f.capitalize() for f in fields)],
                           [[row.dataset, *(fmt(getattr(row, f)) for f in fields)] for row in report.table], "lr")
            lines.append("")
        for f in fields:
            hist = report.fields[f].similarity.histogram
            if not hist or not sum(hist.counts):
                continue
            top = max(hist.counts)
            lines += [f"Similarity histogram, {f}:", "", "```"]
            for lo, hi, count in zip(hist.edges, hist.edges[1:], hist.counts):
                if count:
                    lines.append(f"{lo:.2f}–{hi:.2f} {count:7d} {'#' * max(1, round(40 * count / top))}")
            lines += ["```", ""]
        return lines

    @classmethod
    def card_figures(cls, entry: FieldQuality) -> dict[str, float | None]:
        return {"similarity (mean)": entry.similarity.mean}

    def describe(self, context: QualityContext) -> dict[str, Any]:
        return context.encoder.describe()

    def score(self, pairs: FieldPairs, context: QualityContext) -> MethodResult:
        picked = context.sample(pairs, self.sample, "similarity")
        if len(picked) < len(pairs):
            pairs = FieldPairs(pairs.field, pairs.role, [pairs.ids[i] for i in picked],
                               [pairs.sources[i] for i in picked], [pairs.translations[i] for i in picked])
        sims = context.encoder.similarities(pairs.sources, pairs.translations, pairs.role, f"quality-{pairs.field}")
        values = {item: float(sim) for item, sim in zip(pairs.ids, sims)}
        return MethodResult(values={"similarity": values}, scored=len(values))
