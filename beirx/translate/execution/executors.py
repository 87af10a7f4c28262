"""Who translates the batches: this process, or replicas of the translator on Ray (``--executor ray``).

An executor maps claimed batches ``(key, segments)`` to ``(key, segments, translations)`` in any order
(:mod:`beirx.translate.execution.work`); the pipeline owns the plan, the memory, leases and commits, so every executor
translates exactly the batches a single process would and the output bytes do not depend on the executor. An
executor may return a batch in parts (``segments`` a subset of the batch's): :class:`StreamingExecutor` returns
each unit of an LLM backend as soon as it is validated, so it is committed at once and never sent again after a
crash.
"""

from __future__ import annotations

import queue
from collections.abc import Callable

from beirx.translate.backends.base import Translator
from beirx.translate.execution.work import Done, Executor, Work


class LocalExecutor:
    """Translate each batch in this process, one after the other."""

    def __init__(self, translator: Translator):
        self.translator = translator

    def map(self, work: Work) -> Done:
        for key, segments in work:
            yield key, segments, self.translator.translate_batch(segments)

    def close(self) -> None:
        pass


class StreamingExecutor:
    """Keep about ``in_flight`` units of a backend with ``document_units`` (its ``submit_unit(segment)`` returns
    a future) in flight across batch boundaries, and hand each back as soon as it is done.

    The server never idles between batches (no batch waits for its slowest unit), and each unit is
    committed as soon as it is done (units that finish together share one transaction). An error (the server
    is down, the budget is spent) stops sending more; the units
    in flight are still handed back as they finish (so they are committed), then the error is raised.
    """

    def __init__(self, translator: Translator, in_flight: int):
        self.translator = translator
        self.in_flight = max(1, in_flight)

    def map(self, work: Work) -> Done:
        done: queue.SimpleQueue = queue.SimpleQueue()
        batches = iter(work)
        pending, exhausted, error = 0, False, None
        while True:
            while not exhausted and error is None and pending < self.in_flight:
                item = next(batches, None)
                if item is None:
                    exhausted = True
                    break
                key, segments = item
                for segment in segments:
                    future = self.translator.submit_unit(segment)
                    future.add_done_callback(lambda f, key=key, segment=segment: done.put((key, segment, f)))
                    pending += 1
            if not pending:
                if error is not None:
                    raise error
                return
            finished = [done.get()]  # wait for one, then take every other one done meanwhile: one commit
            while not done.empty():
                finished.append(done.get())
            pending -= len(finished)
            by_key: dict[str, tuple[list[str], list[str]]] = {}
            for key, segment, future in finished:
                if future.exception() is not None:
                    error = error or future.exception()
                    continue
                segments, outputs = by_key.setdefault(key, ([], []))
                segments.append(segment)
                outputs.append(future.result())
            for key, (segments, outputs) in by_key.items():
                yield key, segments, outputs

    def close(self) -> None:
        pass


def make_executor(name: str, translator: Translator, factory: Callable[[], Translator] | None = None,
                  **options) -> Executor:
    """``local`` (this process: streaming for a backend with ``document_units``) or ``ray`` (replicas built by
    ``factory`` on Ray; see :mod:`.ray_executor`)."""
    if name == "local":
        if translator.document_units:
            return StreamingExecutor(translator, translator.units_in_flight)
        return LocalExecutor(translator)
    if name == "ray":
        from beirx.translate.execution.ray_executor import RayExecutor

        return RayExecutor(factory, **options)
    from beirx.errors import BeirxError

    raise BeirxError(f"unknown executor {name!r}; choose local or ray")
