"""What an executor is handed and hands back, shared by every executor.

An executor maps claimed batches ``(key, segments)`` to ``(key, segments, translations)`` in any order
(:mod:`beirx.translate.execution.executors` in this process, :mod:`beirx.translate.execution.ray_executor` on Ray). The
types live here, not in either executor's module, so neither imports the other for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

Work = Iterable[tuple[str, list[str]]]
Done = Iterator[tuple[str, list[str], list[str]]]


class Executor(Protocol):
    def map(self, work: Work) -> Done:
        """Translate each claimed batch; yield it back with its translations, in any order."""

    def close(self) -> None:
        """Release the workers (a no-op in this process)."""
