"""The QUALITY stage: how good is a machine-translated BEIR dataset? (``beirx quality``; also run by
``beirx translate`` when it finishes.)

Quality-estimation methods by name, each one module behind :class:`~beirx.translate.quality.base.QualityMethod`
declaring its options, its per-row scores and its flags. Adding one is a module plus one line here;
``beirx quality`` offers its flags, and ``quality.json``, ``flagged.jsonl`` and ``quality.md`` carry its
scores without further change. Methods run in this order; ``checks`` and ``translation_flags`` always run,
``similarity`` unless ``--no-similarity``, the others when their flags ask for them.
"""

from beirx.registry import Registry

QUALITY_METHODS = Registry("quality method", {
    "checks": "beirx.translate.quality.checks:Checks",
    "translation_flags": "beirx.translate.quality.translation_flags:TranslationFlags",
    "similarity": "beirx.translate.quality.embedding:EmbeddingSimilarity",
    "roundtrip": "beirx.translate.quality.roundtrip:RoundTrip",
    "comet": "beirx.translate.quality.comet:Comet",
    "judge": "beirx.translate.quality.judge:LLMJudge",
})

from beirx.translate.quality.run import report_dir, run_quality  # noqa: E402  (the stage's entry points)
from beirx.translate.quality.stats import distribution  # noqa: E402

__all__ = ["QUALITY_METHODS", "distribution", "report_dir", "run_quality"]
