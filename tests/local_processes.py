"""Servers the tests start on 127.0.0.1 (noida-db, llama.cpp, ``beirx review``): a free port, and a stop that
cannot hang a test session."""

from __future__ import annotations

import socket
import subprocess


def free_port() -> int:
    """A local TCP port nothing listens on now (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM, and SIGKILL if the process has not exited within ``grace`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
