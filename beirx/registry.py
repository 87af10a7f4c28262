"""A registry of backends by name, resolved lazily (as ir_measures' providers).

Each entry maps a name to ``"module:attribute"``; nothing is imported until the backend is used, so
listing names (``--help``, error messages) never pulls in torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

from beirx.errors import BeirxError


class Registry:
    def __init__(self, kind: str, entries: dict[str, str]):
        self.kind = kind
        self._entries = dict(entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def in_order(self) -> list[str]:
        """Names in registration order (for backends that run in a stated order)."""
        return list(self._entries)

    def register(self, name: str, target: str) -> None:
        """Add a backend: ``target`` is ``"package.module:ClassName"``."""
        self._entries[name] = target

    def get(self, name: str) -> Any:
        """The registered object (usually a class) for ``name``."""
        try:
            target = self._entries[name]
        except KeyError:
            raise BeirxError(f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}") from None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def __contains__(self, name: str) -> bool:
        return name in self._entries
