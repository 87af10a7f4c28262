"""Run the review web app with uvicorn (one process; FastAPI runs each request in a worker thread).

The port is bound before anything is printed (:func:`listen`), so a port in use is a clear error (exit 2)
instead of a link to a server that never started; uvicorn then serves on that very socket.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket

from beirx.errors import BeirxError, require
from beirx.review.app import create_app
from beirx.review.store import ReviewStore

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` and listening; a port in use or an address this machine does not have
    is a :class:`BeirxError` naming them."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)  # as uvicorn binds a host
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a restart need not wait
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except socket.gaierror as exc:
        sock.close()
        raise BeirxError(f"cannot listen on --host {host}: {exc.strerror}") from None
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BeirxError(f"port {port} on {host} is already in use (another beirx review, or another "
                             "program): choose a free one with --port") from None
        raise BeirxError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def serve(store: ReviewStore, sock: socket.socket, host: str, token: str | None, languages: tuple[str, str]) -> None:
    """Serve on ``sock`` (from :func:`listen` on ``host``) until interrupted. Binding beyond this machine
    without an access token is refused."""
    uvicorn = require("uvicorn", "review", "the review web app")
    if not is_loopback(host) and not token:
        raise BeirxError(f"refusing to serve the review on {host} without an access token")
    app = create_app(store, token, languages, host=host, port=sock.getsockname()[1])
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
