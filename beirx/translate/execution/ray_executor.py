"""``--executor ray``: translator replicas as Ray actors, fed batches by the driver.

One actor per worker holds one translator (the model is loaded once per replica; ``--gpus-per-worker``
reserves GPUs, and Ray's ``CUDA_VISIBLE_DEVICES`` gives each replica its own). The driver keeps the plan,
the memory, the leases and the commits (:mod:`beirx.translate.pipeline`), so replicas need no shared file
system, every batch is the one a single process would send (identical bytes), and a batch is committed
once. Two batches per replica are in flight, so a replica never waits for the driver. A replica that dies
is restarted by Ray and its unfinished batches are retried (``max_restarts``/``max_task_retries``);
committed batches are never redone. Without an address, a private local Ray instance is started
(127.0.0.1, no dashboard); ``auto`` or ``HOST:PORT`` joins an existing cluster.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from beirx.errors import BeirxError, require
from beirx.translate.backends.base import Translator
from beirx.translate.execution.work import Done, Work

log = logging.getLogger(__name__)

IN_FLIGHT_PER_WORKER = 2


class _Replica:
    """A Ray actor holding one translator."""

    def __init__(self, factory: Callable[[], Translator]):
        self.translator = factory()

    def translate(self, segments: list[str]) -> list[str]:
        return self.translator.translate_batch(segments)

    def pid(self) -> int:
        return os.getpid()


class RayExecutor:
    def __init__(self, factory: Callable[[], Translator], workers: int = 2, address: str | None = None,
                 gpus_per_worker: float = 0.0, max_retries: int = 3):
        if workers < 1:
            raise BeirxError(f"--workers must be at least 1, got {workers}")
        ray = self._ray = require("ray", "ray", "--executor ray")
        self._started = not ray.is_initialized()
        if self._started:
            if address:
                ray.init(address=address, logging_level=logging.WARNING)
            else:
                ray.init(address="local", num_cpus=max(workers, os.cpu_count() or 1), include_dashboard=False,
                         _node_ip_address="127.0.0.1", logging_level=logging.WARNING)
        actor = ray.remote(num_cpus=0 if gpus_per_worker else 1, num_gpus=gpus_per_worker, max_restarts=max_retries,
                           max_task_retries=max_retries)(_Replica)
        self.actors = [actor.remote(factory) for _ in range(workers)]
        log.info("Ray: %d translator replicas (%s GPUs each) on %s", workers, gpus_per_worker or "no",
                 address or "a local instance")

    def pids(self) -> list[int]:
        """The replicas' process IDs (for tests and monitoring)."""
        return self._ray.get([a.pid.remote() for a in self.actors])

    def map(self, work: Work) -> Done:
        ray = self._ray
        free = [a for a in self.actors for _ in range(IN_FLIGHT_PER_WORKER)]
        pending: dict = {}

        def finished():
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                actor, key, segments = pending.pop(ref)
                free.append(actor)
                yield key, segments, ray.get(ref)

        for key, segments in work:
            if not free:
                yield from finished()
            actor = free.pop(0)
            pending[actor.translate.remote(segments)] = (actor, key, segments)
        while pending:
            yield from finished()

    def close(self) -> None:
        for actor in self.actors:
            self._ray.kill(actor)
        if self._started:
            self._ray.shutdown()
