"""The quality-estimation methods by name: each one module behind
:class:`~beirx.translate.quality.base.QualityMethod`; adding one is that module plus one line here. Methods run in
this order; those marked ``default`` when nobody chose (``checks``, ``translation_flags``, ``similarity``),
in ``beirx quality`` ``checks`` and ``translation_flags`` always, ``similarity`` unless ``--no-similarity``, the
others when their flags ask for them.
"""

from __future__ import annotations

from collections.abc import Sequence

from beirx.errors import BeirxError
from beirx.registry import Registry
from beirx.translate.quality.base import QualityMethod

QUALITY_METHODS = Registry("quality method", {
    "checks": "beirx.translate.quality.checks:Checks",
    "translation_flags": "beirx.translate.quality.translation_flags:TranslationFlags",
    "similarity": "beirx.translate.quality.embedding:EmbeddingSimilarity",
    "roundtrip": "beirx.translate.quality.roundtrip:RoundTrip",
    "comet": "beirx.translate.quality.comet:Comet",
    "judge": "beirx.translate.quality.judge:LLMJudge",
})

MethodSpec = QualityMethod | str  # a built method, or a registry name built with its defaults


def resolve_methods(specs: Sequence[MethodSpec] | None) -> list[QualityMethod]:
    """The methods to run: ``specs`` built (a name through the registry, with its defaults), by default every
    registered method marked ``default``; two methods with one name or one score name are refused."""
    if specs is None:
        specs = [name for name in QUALITY_METHODS.in_order() if QUALITY_METHODS.get(name).default]
    methods = [spec if isinstance(spec, QualityMethod) else _build(spec) for spec in specs]
    _check_unique_scores(methods)
    return methods


def _build(name: str) -> QualityMethod:
    cls = QUALITY_METHODS.get(name)
    try:
        return cls()
    except TypeError:
        raise BeirxError(f"quality method {name!r} needs options: build it (e.g. from its beirx quality flags, "
                         f"{cls.__name__}.from_args) and pass the method instead of its name") from None


def _check_unique_scores(methods: Sequence[QualityMethod]) -> None:
    seen: dict[str, str] = {}
    for method in methods:
        for score in method.scores:
            if score.name in seen:
                raise BeirxError(f"quality methods {seen[score.name]} and {method.name} both produce a score named "
                                 f"{score.name!r}")
            seen[score.name] = method.name
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise BeirxError(f"a quality method is listed twice: {', '.join(names)}")
