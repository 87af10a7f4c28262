"""An event loop in a daemon thread, for async model code driven from synchronous stage code.

The LLM client and the in-process LLM backend run their coroutines here: stage code (and threads, and
other event loops) submits work with :meth:`BackgroundLoop.submit`, which returns a
``concurrent.futures.Future``. Nothing starts until the first submission.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any


class BackgroundLoop:
    def __init__(self, name: str):
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def running(self) -> asyncio.AbstractEventLoop:
        """The loop, started if needed."""
        with self._lock:
            if self.loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                self._thread.start()
                self.loop = loop
            return self.loop

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coroutine, self.running())

    def here(self) -> bool:
        """Whether the caller runs on this loop."""
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def stop(self) -> None:
        """Stop the loop and join its thread (idempotent)."""
        with self._lock:
            loop, thread = self.loop, self._thread
            self.loop = self._thread = None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
