"""The QUALITY stage: how good is a machine-translated BEIR dataset? (``beirx quality``; also run by
``beirx translate`` when it finishes.) Each quality-estimation method is one module behind
:class:`~beirx.translate.quality.base.QualityMethod` and one line in
:data:`~beirx.translate.quality.base.QUALITY_METHODS`.
"""

from beirx.translate.quality.base import QUALITY_METHODS
from beirx.translate.quality.run import report_dir, run_quality  # (the stage's entry points)
from beirx.translate.quality.stats import distribution

__all__ = ["QUALITY_METHODS", "distribution", "report_dir", "run_quality"]
