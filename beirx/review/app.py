"""The review web app (FastAPI): native speakers rate the sampled translations in a browser.

Each annotator enters a name, then sees one item at a time: the source and the translation side by side,
adequacy and fluency (1-5), MQM-lite error marks (category and severity), and the translation in an editable
box to correct. Keyboard: ``1``-``5`` adequacy, ``q w e r t`` fluency 1-5, ``Enter`` save and go to the next
unrated item, ``←``/``→`` previous/next, ``c`` edit the correction (``Esc`` leaves it, ``Ctrl+Enter`` saves).
A bar shows the annotator's progress. Every submission is committed before the next page is sent.

The app is :func:`create_app`: the routes (:mod:`beirx.review.routes`) get a :class:`~beirx.review.security.Review`
(the store, the review's settings and its security checks, :mod:`beirx.review.security`) and the signed-in
annotator as dependencies, every request passes :func:`guard` first, and a check that refuses a request raises
:class:`~beirx.review.security.Refused` with the page to send instead.

``beirx review`` binds the port (:func:`listen`) before it writes or prints anything, so a port in use is a clear
error (exit 2) instead of a link to a server that never started; uvicorn then serves on that very socket
(:func:`serve`), one process and one event loop.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import secrets
import socket
from pathlib import Path

from beirx.errors import BeirxError, require
from beirx.review.security import CSP, SID, Refused, Review
from beirx.review.store import ReviewStore

log = logging.getLogger(__name__)

HERE = Path(__file__).parent


def create_app(store: ReviewStore, token: str | None = None, languages: tuple[str, str] = ("source", "translation"),
               host: str = "127.0.0.1", port: int | None = None):
    """The ASGI app over ``store``, served on ``host``:``port``; ``token`` (optional) is required once per browser."""
    fastapi = require("fastapi", "review", "the review web app")
    jinja2 = require("jinja2", "review", "the review web app")
    from fastapi.staticfiles import StaticFiles

    from beirx.review.routes import router

    templates = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                                   autoescape=jinja2.select_autoescape(["html"], default=True),
                                   undefined=jinja2.StrictUndefined)
    app = fastapi.FastAPI(title="beirx review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.review = Review(store, token, languages, host, port, templates)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.add_exception_handler(Refused, lambda request, refused: refused.args[0])
    app.middleware("http")(guard)
    app.include_router(router)
    return app


async def guard(request, call_next):
    """Every request: a session cookie, the checks of :meth:`Review.refusal`, and the security headers (on a
    refusal and on a failure too)."""
    review: Review = request.app.state.review
    sid = request.cookies.get(SID)
    fresh = not (sid and len(sid) == 32 and all(c in "0123456789abcdef" for c in sid))
    request.state.sid = secrets.token_hex(16) if fresh else sid
    try:
        response = review.refusal(request) or await call_next(request)
    except Exception:  # a bug: logged, and the refusal still carries the headers below
        log.exception("the review app failed on %s %s", request.method, request.url.path)
        response = review.html("denied.html", status=500, reason="the server failed; see its log")
    response.headers.update({"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                             "Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "X-Frame-Options": "DENY"})
    if fresh:
        response.set_cookie(SID, request.state.sid, httponly=True, samesite="strict")
    return response


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
    except OSError as exc:  # socket.gaierror (a host name that does not resolve) included
        sock.close()
        if isinstance(exc, socket.gaierror):
            raise BeirxError(f"cannot listen on --host {host}: {exc.strerror}") from None
        if exc.errno == errno.EADDRINUSE:
            raise BeirxError(f"port {port} on {host} is already in use (another beirx review, or another "
                             "program): choose a free one with --port") from None
        raise BeirxError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def serve(store: ReviewStore, sock: socket.socket, host: str, token: str | None, languages: tuple[str, str]) -> None:
    """Serve on ``sock`` (from :func:`listen` on ``host``) until interrupted. Serving beyond this machine without
    an access token is refused (the command refuses it before binding; this is the last guard)."""
    uvicorn = require("uvicorn", "review", "the review web app")
    if not is_loopback(host) and not token:
        raise BeirxError(f"refusing to serve the review on {host} without an access token")
    app = create_app(store, token, languages, host=host, port=sock.getsockname()[1])
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
