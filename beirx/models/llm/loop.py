"""The one event loop of the process for LLM calls: a daemon thread started at the first request, stopped at exit.

Every :class:`~beirx.models.llm.protocol.LLM` (server clients, in-process models, the judge's, the rerankers',
the translator's and its round-trip back-translator) submits its coroutines here, so a process runs one loop
thread however many LLM objects it makes, and closing an object releases its connections without tearing the
loop down (the next object, or the next call, finds it running). A child process made by ``fork`` does not
inherit the thread; its first request starts its own loop.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

#: The loop thread's name (seen in thread dumps and ``threading.enumerate()``).
THREAD_NAME = "beirx-llm-loop"

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process's LLM loop, started if it is not running (first use, or a forked child)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, name=THREAD_NAME, daemon=True)
            _thread.start()
        return _loop


def submit(coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
    """Run ``coroutine`` on the process's LLM loop, from any thread other than the loop's own."""
    return asyncio.run_coroutine_threadsafe(coroutine, shared_loop())


@atexit.register
def stop() -> None:
    """Stop the loop and join its thread (at exit; a later :func:`shared_loop` starts a new one)."""
    global _loop, _thread
    with _lock:
        loop, thread = _loop, _thread
        _loop = _thread = None
    if loop is None or thread is None:
        return
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    if not thread.is_alive():
        loop.close()
