"""What produced a result: package versions, platform, device and timings (never a secret)."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
import time
from contextlib import contextmanager

# Distributions whose versions change numbers; reported only when installed.
_TRACKED = ("beirx", "numpy", "bm25s", "pytrec-eval-terrier", "pystempel", "PyStemmer", "torch", "transformers",
            "sentence-transformers", "ctranslate2", "faiss-cpu", "elasticsearch", "mteb", "datasets", "huggingface-hub")


def environment_versions() -> dict[str, str]:
    """Python, platform and the installed versions of the tracked distributions."""
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    return {**versions, **{dist: v for dist in _TRACKED if (v := installed_version(dist)) is not None}}


def installed_version(dist: str) -> str | None:
    """The installed version of the distribution ``dist``, None when it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


class Timer:
    """Named wall-clock sections: ``with timer.section("index"): ...``; ``timer.seconds`` maps name -> s."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def section(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - start, 4)
