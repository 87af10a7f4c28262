"""A toy translator: the whole of what a new backend needs besides its one registry line (see test_layering).

It upper-cases each segment, after an optional ``--toy-prefix``: its own flag, declared here and nowhere else.
"""

from __future__ import annotations

from typing import Any

from beirx.options import Option
from beirx.translate.backends.base import Translator


class ToyTranslator(Translator):
    name = "toy"

    OPTIONS = (Option("prefix", default="", flag="--toy-prefix",
                      help="text put before every translated segment (default none)"),)

    def __init__(self, src: str, tgt: str, model: str | None = None, *, prefix: str = "", **options: Any):
        super().__init__(src, tgt, model, **options)
        self.prefix = prefix

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "prefix": self.prefix}

    def translate_batch(self, segments: list[str]) -> list[str]:
        return [self.prefix + s.upper() for s in segments]
