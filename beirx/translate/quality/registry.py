"""The quality-estimation methods by name: each one module behind
:class:`~beirx.translate.quality.base.QualityMethod`; adding one is that module plus one line here. Methods run in
this order; those marked ``default`` when nobody chose (``checks``, ``translation_flags``, ``similarity``),
in ``beirx quality`` ``checks`` and ``translation_flags`` always, ``similarity`` unless ``--no-similarity``, the
others when their flags ask for them.
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
