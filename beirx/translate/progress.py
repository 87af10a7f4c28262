"""Progress of a long translation: a tqdm bar when bars are on (a terminal), else a log line every
``every`` seconds (batch jobs, Slurm logs, a Ray driver in the background).

Both show segments done out of the total, the rate (segments/s) and the time left at that rate.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("beirx.translate")


class Progress:
    def __init__(self, total: int, desc: str, enabled: bool = True, every: float = 30.0):
        self.total, self.desc, self.every = total, desc, every
        self.done = self._base = 0
        self._start = self._last = time.monotonic()
        self._bar = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="seg", desc=desc, dynamic_ncols=True, smoothing=0.1)

    def skip(self, n: int) -> None:
        """Segments served from the memory: done, but not part of the translation rate."""
        self.done += n
        self._base += n
        if self._bar is not None:
            self._bar.update(n)

    def update(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            rate = (self.done - self._base) / max(now - self._start, 1e-9)
            left = (self.total - self.done) / rate if rate > 0 else float("inf")
            eta = time.strftime("%H:%M:%S", time.gmtime(left)) if left < 1e7 else "?"
            log.info("%s: %d/%d segments, %.1f seg/s, ETA %s", self.desc, self.done, self.total, rate, eta)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
