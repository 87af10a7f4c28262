"""Who translates the batches: this process, or replicas of the translator on Ray (``--executor ray``).

An executor maps claimed batches ``(key, segments)`` to ``(key, segments, translations)`` in any order
(:mod:`beirx.translate.work`); the pipeline owns the plan, the memory, leases and commits, so every executor
translates exactly the batches a single process would and the output bytes do not depend on the executor.
"""

from __future__ import annotations

from collections.abc import Callable

from beirx.translate.backends.base import Translator
from beirx.translate.work import Done, Executor, Work


class LocalExecutor:
    """Translate each batch in this process, one after the other."""

    def __init__(self, translator: Translator):
        self.translator = translator

    def map(self, work: Work) -> Done:
        for key, segments in work:
            yield key, segments, self.translator.translate_batch(segments)

    def close(self) -> None:
        pass


def make_executor(name: str, translator: Translator, factory: Callable[[], Translator] | None = None,
                  **options) -> Executor:
    """``local`` (this process) or ``ray`` (replicas built by ``factory`` on Ray; see :mod:`.ray_executor`)."""
    if name == "local":
        return LocalExecutor(translator)
    if name == "ray":
        from beirx.translate.ray_executor import RayExecutor

        return RayExecutor(factory, **options)
    from beirx.errors import BeirxError

    raise BeirxError(f"unknown executor {name!r}; choose local or ray")
