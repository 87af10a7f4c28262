"""The ``roundtrip`` quality method: translate the translation back and compare it with the source.

With no human reference, the round trip is a reference-free proxy of adequacy: what the translation lost
or changed tends to stay lost on the way back. Per row it gives two scores, so round trips can flag rows
like the other methods:

- ``roundtrip_chrf``: sentence-level chrF (Popović, 2015, "chrF: character n-gram F-score for automatic MT
  evaluation"; sacrebleu's implementation and defaults: character 6-grams, beta 2) of the back-translation
  against the source, 0-100;
- ``roundtrip_similarity``: cosine similarity of the source and back-translation embeddings (the run's
  encoder; both sides are in the source language, so it forgives paraphrase that chrF punishes).

A row is flagged when a score is a low outlier of its field (robust z, :mod:`~beirx.translate.quality.stats`).
The field summary keeps the corpus-level chrF and sacrebleu's signature. The back-translation goes
through the same sentence segmentation as ``beirx translate`` (a model's input limit never truncates a
document), over every row or a seeded sample (``--roundtrip-sample``).

Known blind spot: a row left in the source language comes back unchanged and scores high; the ``checks``
method flags it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from beirx.argtypes import key_value
from beirx.errors import require
from beirx.options import Option
from beirx.translate.backends.base import Translator
from beirx.translate.planning.text_plan import translate_texts
from beirx.translate.quality.base import (FieldPairs, JudgedRows, MethodResult, QualityContext, QualityMethod,
                                          Score, rows_to_score)
from beirx.translate.quality.stats import ROBUST_Z

if TYPE_CHECKING:
    from beirx.artifacts.quality import FieldQuality, QualityReport

DEFAULT_SAMPLE = 200


class RoundTrip(QualityMethod):
    name = "roundtrip"
    scores = (Score("roundtrip_chrf", "sentence chrF of the back-translation against the source", scale=(0.0, 100.0),
                    low_outlier="low_roundtrip_chrf"),
              Score("roundtrip_similarity", "cosine similarity of source and back-translation embeddings",
                    scale=(0.0, 1.0), low_outlier="low_roundtrip_similarity"))
    whole_field = True  # its sample is drawn over the field, its corpus chrF is over the sample
    flags = {"low_roundtrip_chrf": f"round-trip chrF is a low outlier for this field (robust z < -{ROBUST_Z})",
             "low_roundtrip_similarity": "round-trip similarity is a low outlier for this field "
                                         f"(robust z < -{ROBUST_Z})"}

    def __init__(self, translator: Translator, sample: int | JudgedRows | None = DEFAULT_SAMPLE):
        self.translator = translator
        self.sample = sample

    OPTIONS = (
        Option("translator", flag="--roundtrip-translator", metavar="NAME",
               help="back-translate with this backend (e.g. apertium): per-row chrF and similarity"),
        Option("model", flag="--roundtrip-model", metavar="M", help="model of the round-trip backend"),
        Option("options", key_value, flag="--roundtrip-option", repeat=True, metavar="KEY=VALUE",
               help="option of the round-trip backend (repeatable)"),
        Option("sample", rows_to_score, default=DEFAULT_SAMPLE, flag="--roundtrip-sample", metavar="N|all|qrels:SPLIT",
               help="rows per field to back-translate: a seeded sample, all, or qrels:SPLIT (the queries and "
                    "documents the SPLIT qrels judge)"),
    )

    @classmethod
    def report_lines(cls, report: QualityReport, field: str) -> list[str]:
        """The corpus-level chrF of the back-translations and sacrebleu's signature."""
        trip = report.fields[field].methods.get(cls.name)
        if trip is None or trip.summary.get("chrF") is None:
            return []
        return [f"- Round trip, {field}: corpus chrF {trip.summary['chrF']:.2f} over {trip.scored} back-translations "
                f"(sacrebleu `{trip.summary.get('signature')}`)."]

    @classmethod
    def card_figures(cls, entry: FieldQuality) -> dict[str, float | None]:
        outcome = entry.methods.get(cls.name)
        return {"round-trip chrF": outcome.summary.get("chrF") if outcome else None}

    @classmethod
    def from_options(cls, given, src: str, tgt: str, use_cache: bool = True) -> RoundTrip | None:
        """The back-translator (``tgt`` to ``src``) with its options read by its declared options."""
        if not given.get("translator"):
            return None
        from beirx.translate.backends import TRANSLATORS

        backend = TRANSLATORS.get(given["translator"])
        options = backend.read_options(dict(given.get("options") or []))
        return cls(backend(tgt, src, given.get("model"), **options), given.get("sample", DEFAULT_SAMPLE))

    def close(self) -> None:
        self.translator.close()

    def describe(self, context: QualityContext) -> dict[str, Any]:
        return {"translator": self.translator.describe(), "chrF": "sacrebleu sentence chrF (defaults)",
                "encoder": context.encoder.describe()}

    def score(self, pairs: FieldPairs, context: QualityContext) -> MethodResult:
        sacrebleu = require("sacrebleu", "translate", "round-trip chrF")
        picked = context.sample(pairs, self.sample, "roundtrip")
        ids = [pairs.ids[i] for i in picked]
        sources = [pairs.sources[i] for i in picked]
        back = translate_texts(self.translator, [pairs.translations[i] for i in picked])
        metric = sacrebleu.metrics.CHRF()
        chrf = {item: float(metric.sentence_score(hyp, [ref]).score) for item, hyp, ref in zip(ids, back, sources)}
        sims = context.encoder.similarities(sources, back, pairs.role, f"quality-{pairs.field}-roundtrip")
        similarity = {item: float(sim) for item, sim in zip(ids, sims)}
        result = MethodResult(values={"roundtrip_chrf": chrf, "roundtrip_similarity": similarity},
                              texts={"back_translation": dict(zip(ids, back))}, scored=len(ids))
        if ids:
            corpus = metric.corpus_score(back, [sources])
            result.summary = {"chrF": round(float(corpus.score), 2), "signature": str(metric.get_signature())}
        return result
