"""Run the review web app with uvicorn (one process; FastAPI runs each request in a worker thread)."""

from __future__ import annotations

import ipaddress
import logging

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


def serve(store: ReviewStore, host: str, port: int, token: str | None, languages: tuple[str, str]) -> None:
    """Serve until interrupted. Binding beyond this machine without an access token is refused."""
    uvicorn = require("uvicorn", "review", "the review web app")
    if not is_loopback(host) and not token:
        raise BeirxError(f"refusing to serve the review on {host} without an access token")
    app = create_app(store, token, languages)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, server_header=False)
