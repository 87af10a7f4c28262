"""The compiled speed-ups (``beirx._speedups``, built from beirx/_speedups.c) or ``None``.

The extension is optional (setup.py builds it when a C compiler is there); every function in it has a
pure-Python twin next to its caller, with identical output -- tests assert the two agree. Setting
``BEIRX_PURE_PYTHON=1`` forces the pure-Python paths (for comparisons and debugging).
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)


def _load():
    if os.environ.get("BEIRX_PURE_PYTHON", "") not in ("", "0"):
        log.debug("BEIRX_PURE_PYTHON is set: using the pure-Python analysis, BM25 and run-file code")
        return None
    try:
        from beirx import _speedups
    except ImportError as exc:  # no compiler at install time: the pure-Python twins do the same work
        log.debug("compiled speed-ups not available (%s): using the pure-Python code paths", exc)
        return None
    return _speedups


native = _load()
