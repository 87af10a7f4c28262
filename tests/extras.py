"""Tests of an optional extra skip, naming the extra, where its package is not installed (CI installs them all)."""

from __future__ import annotations

import pytest


def needs(module: str, extra: str):
    """``pytest.importorskip(module)`` whose skip says which extra installs it: call it in a test or fixture that
    uses the extra, or at module level when every test of the module does. Returns the module."""
    return pytest.importorskip(module, reason=f"needs beirx[{extra}] ({module} is not installed): pip install "
                                              f"'beirx[{extra}]'")
