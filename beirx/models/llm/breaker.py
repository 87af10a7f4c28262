"""A circuit breaker: stop calling a server that is down instead of retrying every request for hours.

After ``threshold`` consecutive failed attempts that say the server itself is unwell (connection refused,
timeout, 5xx; not 429, which means it is up and pacing us), once nothing has succeeded for ``min_seconds``,
the breaker opens and every request fails at once with a clear error (Nygard, "Release It!", 2007, ch. 5).
It also opens, whatever the time, when a request has spent all its attempts during such a run of failures:
retries with backoff did not bring the server back, so the others in flight will not fare better.
The caller stops the run; whatever it had committed stays committed and a rerun resumes. Any success
closes the count again. The time condition keeps one stall of a slow server (every request in flight timing
out together) from stopping a run that would have recovered.
"""

from __future__ import annotations

import threading
import time


class CircuitBreaker:
    def __init__(self, threshold: int = 10, min_seconds: float = 30.0):
        self.threshold = max(1, int(threshold))
        self.min_seconds = min_seconds
        self.consecutive = 0
        self.last_failure = ""
        self.open = False
        self._last_success = time.monotonic()
        self._lock = threading.Lock()

    def success(self) -> None:
        with self._lock:
            if not self.open:
                self.consecutive = 0
                self._last_success = time.monotonic()

    def failure(self, description: str, gave_up: bool = False) -> bool:
        """Record a failed attempt (``gave_up``: its request's last); True once the breaker is open."""
        with self._lock:
            if not self.open:
                self.consecutive += 1
                self.last_failure = description
                self.open = self.consecutive >= self.threshold and \
                    (gave_up or time.monotonic() - self._last_success >= self.min_seconds)
            return self.open
