"""The QUALITY stage: how good is a machine-translated BEIR dataset? (``beirx quality``; also run by
``beirx translate`` when it finishes.)

Quality-estimation methods by name, each one module behind :class:`~beirx.translate.quality.base.QualityMethod`
declaring its options, its per-row scores, its flags, its report and card lines. Adding one is a module plus one
line in :mod:`beirx.translate.quality.registry`; ``beirx quality`` offers its flags, and ``quality.json``,
``rows.jsonl``, ``flagged.jsonl``, ``quality.md`` and dataset cards carry it without further change.
"""

from beirx.translate.quality.registry import QUALITY_METHODS
from beirx.translate.quality.run import report_dir, run_quality  # (the stage's entry points)
from beirx.translate.quality.stats import distribution

__all__ = ["QUALITY_METHODS", "distribution", "report_dir", "run_quality"]
