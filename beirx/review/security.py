"""The review app's security checks and the dependencies every route gets (:class:`Review`).

Safety, since translations are untrusted text and the server may be reachable by others:

- every text goes through Jinja2's autoescaping (a document containing ``<script>`` shows as text), and a
  Content-Security-Policy allows only the app's own script and style files, never inline code;
- every asset is served by the app itself (``static/``): no CDN, works offline;
- form posts carry a token derived from the session cookie (HMAC with the review's secret; the
  double-submit pattern) and must come from one of the app's own origins (``Sec-Fetch-Site``, then
  ``Origin``, or ``Referer`` where a client sends no ``Origin``); cookies are ``HttpOnly`` and
  ``SameSite=Strict``;
- only the names the server is reached by are answered (``Host``: 127.0.0.1, localhost, [::1] and the
  ``--host`` it listens on), so a page whose domain is rebound to 127.0.0.1 (DNS rebinding) can neither read
  items nor post ratings; an app bound to every interface (0.0.0.0) cannot know its names, and requires
  the access token instead;
- with an access token (``--token``), nothing is served until the browser has shown it once
  (``?token=...``), after which a cookie carries an HMAC of it;
- every secret is compared as UTF-8 bytes in constant time (any text, ASCII or not, is a clean refusal);
- a form is at most :data:`BODY_LIMIT` bytes plus room for the longest item's correction (413 beyond), and a
  correction at most :data:`CORRECTION_FACTOR` times its item's text plus :data:`CORRECTION_SLACK`
  characters (400): nothing larger is read, stored or served back;
- the review database is called only from worker threads (FastAPI's threadpool), never from the event loop,
  so a database busy with another annotator's write delays that request alone.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from typing import Any
from urllib.parse import parse_qs, unquote

from beirx.review.store import Item, ReviewStore

SID, ANNOTATOR, ACCESS = "beirx_sid", "beirx_annotator", "beirx_access"
MAX_NAME = 40
BODY_LIMIT = 64 * 1024  # bytes of a form, besides the correction boxes
CORRECTION_FACTOR = 4  # a correction may be this many times as long as its item's source or translation ...
CORRECTION_SLACK = 2000  # ... plus this many characters
ENCODED_CHAR = 12  # the most bytes one character takes in a form post (4 UTF-8 bytes, percent-encoded)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")


def same_secret(given: str, expected: str) -> bool:
    """Constant-time equality of two texts as UTF-8 bytes (``hmac.compare_digest`` refuses non-ASCII ``str``)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


def correction_limit(item: Item) -> int:
    """The most characters (title and text together) a correction of ``item`` may have."""
    return CORRECTION_FACTOR * max(len(item.source), len(item.translation)) + CORRECTION_SLACK


def host_names(host: str) -> tuple[str, ...] | None:
    """The names the app answers to (lower case, an IPv6 address in brackets): the loopback names and ``host``;
    None for a wildcard address (0.0.0.0, ::), whose names the app cannot know."""
    bare = host.strip("[]").lower()
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        address = None
    if address is not None and address.is_unspecified:
        return None
    own = f"[{bare}]" if address is not None and address.version == 6 else bare
    return LOOPBACK_NAMES + ((own,) if own not in LOOPBACK_NAMES else ())


def valid_name(name: str) -> str | None:
    """A trimmed annotator name, or None when empty, too long or holding control characters."""
    name = " ".join(name.split())
    return name if name and len(name) <= MAX_NAME and name.isprintable() else None


class Review:
    """What every route depends on, built once per app: the store, the review's settings (languages, size, the
    form limit) and its security checks (signed cookies and form tokens, the names it answers to, the access
    token)."""

    def __init__(self, store: ReviewStore, token: str | None, languages: tuple[str, str], host: str,
                 port: int | None, templates):
        self.store, self.token, self.languages, self.templates = store, token, languages, templates
        self.secret = bytes.fromhex(store.meta()["secret"])  # random, stored with the sample: restarts keep sessions
        self.names = host_names(host)
        self.hosts = None if self.names is None else frozenset(v for n in self.names
                                                               for v in (n, f"{n}:{port}" if port else n))
        self.body_limit = BODY_LIMIT + ENCODED_CHAR * max((correction_limit(i) for i in store.items()), default=0)
        self.too_large = (f"the form is larger than {self.body_limit} bytes, the most this review accepts: "
                          "nothing was saved")
        self.size = store.size()

    def tag(self, *parts: str) -> str:
        """An HMAC-SHA256 tag of ``parts`` with the review's secret (signed cookies, form tokens)."""
        return hmac.new(self.secret, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()

    def signed(self, tag: str | None, *parts: str) -> bool:
        return bool(tag) and same_secret(tag, self.tag(*parts))

    def html(self, name: str, status: int = 200, **values: Any):
        from fastapi.responses import HTMLResponse

        return HTMLResponse(self.templates.get_template(name).render(**{"reason": None, "csrf": "", **values}),
                            status_code=status)

    def page(self, request, name: str, status: int = 200, **values: Any):
        """A page whose forms carry the session's CSRF token."""
        return self.html(name, status, csrf=self.tag("csrf", request.state.sid), **values)

    def refusal(self, request):
        """The refusal (or the token's redirect) for a request that may not go through, else None."""
        from fastapi.responses import RedirectResponse

        if self.hosts is not None and request.headers.get("host", "").lower() not in self.hosts:
            return self.html("denied.html", status=400, reason=f"this review answers only as {', '.join(self.names)} "
                                                               "(the address it was started on)")
        length = request.headers.get("content-length", "0")
        if not length.isascii() or not length.isdigit():
            return self.html("denied.html", status=400, reason="invalid Content-Length")
        if int(length) > self.body_limit:
            return self.html("denied.html", status=413, reason=self.too_large)
        if self.token is not None:
            given = request.query_params.get("token")
            if given is not None and same_secret(given, self.token):
                response = RedirectResponse(str(request.url.remove_query_params("token")), status_code=303)
                response.set_cookie(ACCESS, self.tag("access", self.token), httponly=True, samesite="strict")
                return response
            if not self.signed(request.cookies.get(ACCESS), "access", self.token):
                return self.html("denied.html", status=401)
        if request.method == "POST" and not _same_origin(request, self.hosts):
            return self.html("denied.html", status=403, reason="cross-site form post refused")
        return None

    def annotator(self, request) -> str | None:
        """The annotator named by the request's cookie when its tag matches the session, else None."""
        name, _, tag = unquote(request.cookies.get(ANNOTATOR) or "").rpartition("\x1f")
        return name if name and self.signed(tag, "annotator", request.state.sid, name) else None

    async def form(self, request) -> dict[str, str]:
        """The posted fields; :class:`Refused` when the form is too large or its CSRF token does not match the session
        (read here, on the event loop: the body is bounded and no database is touched)."""
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > self.body_limit:  # a body sent without its length
                raise Refused(self.page(request, "denied.html", status=413, reason=self.too_large))
        fields = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True).items()}
        if not self.signed(fields.get("csrf"), "csrf", request.state.sid):
            raise Refused(self.page(request, "denied.html", status=403, reason="the form expired: reload the page"))
        return fields


class Refused(Exception):
    """Raised by a check with the page that answers the request instead of the route (``args[0]``)."""


def _same_origin(request, hosts: frozenset[str] | None) -> bool:
    """Whether a post comes from one of the app's own origins: those of ``hosts`` (None: the ``Host`` it was sent
    to, for an app bound to every interface); ``Referer`` stands in for a missing ``Origin``; a client that sends
    neither is no browser on another site (the CSRF token still has to match)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origins = {f"{scheme}://{h}" for h in (hosts or [request.headers.get("host", "").lower()])
               for scheme in ("http", "https")}
    origin = request.headers.get("origin")
    if origin is None:
        referer = request.headers.get("referer")
        return referer is None or any(referer.lower() == o or referer.lower().startswith(o + "/") for o in origins)
    if origin == "null" and site == "same-origin":
        return True
    return origin.lower() in origins
