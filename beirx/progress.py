"""Progress for long steps: a tqdm bar in a terminal, periodic log lines otherwise.

A bar redrawn with ``\\r`` turns a log file (stderr redirected, a cluster job) into one huge line of
bars, and a disabled bar leaves it silent for hours. :func:`progress` therefore returns tqdm only when
stderr is a terminal; otherwise a :class:`LogProgress` that logs ``done/total (percent), rate, ETA``
at most every :data:`INTERVAL` seconds (and once at the end), with the same ``update``/context API.
Every long loop in beirx takes its bar from here, so a job log looks the same whatever the step.

Inside :func:`silenced` nothing is shown or logged: the runner's per-query latency sample searches one query
at a time a hundred times, and a hundred one-query bars would drown the log (and add to what is timed).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time

log = logging.getLogger("beirx.progress")

INTERVAL = 30.0
_silenced = 0


class LogProgress:
    """The part of tqdm's interface beirx uses (``update``, ``close``, context manager, iteration)."""

    def __init__(self, iterable=None, total: int | None = None, initial: int = 0, desc: str = "", unit: str = "it",
                 interval: float = INTERVAL, silent: bool = False):
        self.iterable, self.desc, self.unit, self.interval, self.silent = iterable, desc, unit, interval, silent
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total, self.n, self._start_n = total, initial, initial
        self._start = self._last = time.monotonic()
        self.postfix = ""

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._start, 1e-9)
        rate = (self.n - self._start_n) / elapsed
        done = f"{self.n:,}/{self.total:,} ({100 * self.n / self.total:.1f}%)" if self.total else f"{self.n:,}"
        eta = ""
        if self.total and rate > 0:
            eta = f", ETA {_duration((self.total - self.n) / rate)}"
        extra = f", {self.postfix}" if self.postfix else ""
        return f"{self.desc}: {done} {self.unit}, {rate:,.1f} {self.unit}/s{extra}, elapsed {_duration(elapsed)}{eta}"

    def skip(self, n: int) -> None:
        """Items done without work (e.g. served from a cache): counted as done, left out of the rate."""
        self.n += n
        self._start_n += n

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.interval and not self.silent:
            self._last = now
            log.info("%s", self.line())

    def close(self) -> None:
        if (self.n != self._start_n or self.total) and not self.silent:
            log.info("%s", self.line())

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m{rest % 60:02d}s" if hours else f"{rest // 60}m{rest % 60:02d}s"


def skip(bar, n: int) -> None:
    """Advance ``bar`` by ``n`` items that took no work: a log line's rate leaves them out; a bar just moves."""
    if isinstance(bar, LogProgress):
        bar.skip(n)
    else:
        bar.update(n)


@contextlib.contextmanager
def silenced():
    """No bar and no progress line from any :func:`progress` made inside the block."""
    global _silenced
    _silenced += 1
    try:
        yield
    finally:
        _silenced -= 1


def postfix(bar, text: str) -> None:
    """Show ``text`` after the rate (e.g. an LLM run's tokens/s) on a bar or in the log lines."""
    if isinstance(bar, LogProgress):
        bar.postfix = text
    else:
        bar.set_postfix_str(text, refresh=False)


def progress(iterable=None, *, total: int | None = None, initial: int = 0, desc: str = "", unit: str = "it",
             enabled: bool = True, **tqdm_kwargs):
    """A tqdm bar in a terminal (``enabled``: the caller's bar setting); when stderr is not a terminal,
    :class:`LogProgress` lines at INFO level whatever ``enabled`` says (``-q`` hides them), because a job
    log must show that a long step is alive."""
    if _silenced:
        return LogProgress(iterable, total=total, initial=initial, desc=desc, unit=unit, silent=True)
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(iterable, total=total, initial=initial, desc=desc, unit=unit, disable=not enabled, **tqdm_kwargs)
    return LogProgress(iterable, total=total, initial=initial, desc=desc, unit=unit, interval=INTERVAL)
