"""The review web app (FastAPI): native speakers rate the sampled translations in a browser.

Each annotator enters a name, then sees one item at a time: the source and the translation side by side,
adequacy and fluency (1-5), MQM-lite error marks (category and severity), and the translation in an editable
box to correct. Keyboard: ``1``-``5`` adequacy, ``q w e r t`` fluency 1-5, ``Enter`` save and go to the next
unrated item, ``←``/``→`` previous/next, ``c`` edit the correction (``Esc`` leaves it, ``Ctrl+Enter`` saves).
A bar shows the annotator's progress. Every submission is committed before the next page is sent.

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

# No "from __future__ import annotations": FastAPI injects the request by the endpoints' evaluated annotations,
# and Request is imported inside create_app (the extra is optional).
import hashlib
import hmac
import ipaddress
import logging
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote

from beirx.errors import require
from beirx.review.store import ERROR_CATEGORIES, SEVERITIES, Item, ReviewStore

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
SID, ANNOTATOR, ACCESS = "beirx_sid", "beirx_annotator", "beirx_access"
MAX_NAME = 40
BODY_LIMIT = 64 * 1024  # bytes of a form, besides the correction boxes
CORRECTION_FACTOR = 4  # a correction may be this many times as long as its item's source or translation ...
CORRECTION_SLACK = 2000  # ... plus this many characters
ENCODED_CHAR = 12  # the most bytes one character takes in a form post (4 UTF-8 bytes, percent-encoded)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
SCALES = {
    "adequacy": ("Adequacy", "1 none of the meaning · 2 little · 3 much · 4 most · 5 all of it", "12345"),
    "fluency": ("Fluency", "1 incomprehensible · 2 disfluent · 3 non-native · 4 good · 5 flawless", "qwert"),
}


class Signer:
    """HMAC-SHA256 tags with the review's secret (kept in the review database, so restarts keep sessions)."""

    def __init__(self, secret: bytes):
        self.secret = secret

    def tag(self, *parts: str) -> str:
        return hmac.new(self.secret, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()

    def check(self, tag: str | None, *parts: str) -> bool:
        return bool(tag) and same_secret(tag, self.tag(*parts))


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
    if not name or len(name) > MAX_NAME or not name.isprintable():
        return None
    return name


def create_app(store: ReviewStore, token: str | None = None, languages: tuple[str, str] = ("source", "translation"),
               host: str = "127.0.0.1", port: int | None = None):
    """The ASGI app over ``store``, served on ``host``:``port``; ``token`` (optional) is required once per browser."""
    fastapi = require("fastapi", "review", "the review web app")
    jinja2 = require("jinja2", "review", "the review web app")
    from fastapi import Request  # endpoints are typed with it, so FastAPI injects the request
    from fastapi.responses import HTMLResponse, RedirectResponse
    from fastapi.staticfiles import StaticFiles
    from starlette.concurrency import run_in_threadpool

    signer = Signer(store.secret())
    names = host_names(host)
    hosts = None if names is None else frozenset(v for n in names for v in (n, f"{n}:{port}" if port else n))
    body_limit = BODY_LIMIT + ENCODED_CHAR * max((correction_limit(i) for i in store.items()), default=0)
    templates = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                                   autoescape=jinja2.select_autoescape(["html"], default=True),
                                   undefined=jinja2.StrictUndefined)
    size = store.size()
    app = fastapi.FastAPI(title="beirx review", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.middleware("http")
    async def guard(request: Request, call_next):
        sid = request.cookies.get(SID)
        fresh = not (sid and len(sid) == 32 and all(c in "0123456789abcdef" for c in sid))
        request.state.sid = secrets.token_hex(16) if fresh else sid
        try:
            response = gate(request)
            if response is None:
                response = await call_next(request)
        except Exception:  # a bug: logged, and the refusal still carries the headers below
            log.exception("the review app failed on %s %s", request.method, request.url.path)
            response = _html(templates, "denied.html", status=500, reason="the server failed; see its log")
        response.headers.update({"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                                 "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
                                 "X-Frame-Options": "DENY"})
        if fresh:
            response.set_cookie(SID, request.state.sid, httponly=True, samesite="strict")
        return response

    def gate(request: Request):
        """The refusal (or the token's redirect) for a request that may not go through, else None."""
        if hosts is not None and request.headers.get("host", "").lower() not in hosts:
            return _html(templates, "denied.html", status=400,
                         reason=f"this review answers only as {', '.join(names)} (the address it was started on)")
        length = request.headers.get("content-length", "0")
        if not length.isascii() or not length.isdigit():
            return _html(templates, "denied.html", status=400, reason="invalid Content-Length")
        if int(length) > body_limit:
            return _html(templates, "denied.html", status=413, reason=_too_large(body_limit))
        if token is not None:
            given = request.query_params.get("token")
            if given is not None and same_secret(given, token):
                response = RedirectResponse(str(request.url.remove_query_params("token")), status_code=303)
                response.set_cookie(ACCESS, signer.tag("access", token), httponly=True, samesite="strict")
                return response
            if not signer.check(request.cookies.get(ACCESS), "access", token):
                return _html(templates, "denied.html", status=401)
        if request.method == "POST" and not _same_origin(request, hosts):
            return _html(templates, "denied.html", status=403, reason="cross-site form post refused")
        return None

    def session(request: Request) -> str:
        return request.state.sid

    def annotator(request: Request) -> str | None:
        sid = session(request)
        raw = request.cookies.get(ANNOTATOR) or ""
        name, _, tag = unquote(raw).rpartition("\x1f")
        return name if name and signer.check(tag, "annotator", sid, name) else None

    async def form(request: Request):
        """``(fields, None)``, or ``(None, refusal)`` when the form is too large or its CSRF token does not match
        the session (read here, on the event loop: the body is bounded and no database is touched)."""
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > body_limit:  # a body sent without its length
                return None, page(request, "denied.html", status=413, reason=_too_large(body_limit))
        fields = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True).items()}
        if not signer.check(fields.get("csrf"), "csrf", session(request)):
            return None, page(request, "denied.html", status=403, reason="the form expired: reload the page")
        return fields, None

    def page(request: Request, name: str, status: int = 200, **values: Any):
        return _html(templates, name, status, csrf=signer.tag("csrf", session(request)), **values)

    def next_unrated(who: str, after: int = 0) -> int | None:
        done = store.rated_positions(who)
        order = list(range(after + 1, size + 1)) + list(range(1, after + 1))
        return next((p for p in order if p not in done), None)

    @app.get("/", response_class=HTMLResponse)
    def home(request: Request):
        who = annotator(request)
        if who is None:
            return page(request, "login.html", size=size, error=None)
        target = next_unrated(who)
        return RedirectResponse(f"/items/{target}" if target else "/done", status_code=303)

    @app.post("/login")
    async def login(request: Request):
        fields, refusal = await form(request)
        if refusal is not None:
            return refusal
        name = valid_name(fields.get("name", ""))
        if name is None:
            return page(request, "login.html", status=400, size=size,
                        error=f"enter a name of 1 to {MAX_NAME} printable characters")
        response = RedirectResponse("/", status_code=303)
        tag = signer.tag("annotator", session(request), name)
        response.set_cookie(ANNOTATOR, quote(f"{name}\x1f{tag}"), httponly=True, samesite="strict")
        return response

    @app.post("/logout")
    async def logout(request: Request):
        refusal = (await form(request))[1]
        if refusal is not None:
            return refusal
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(ANNOTATOR)
        return response

    def item_page(request: Request, item: Item, who: str, status: int = 200, error: str | None = None,
                  posted: dict[str, str] | None = None):
        saved = store.rating(item.position, who)
        title, text = _split(item)
        corrected = (saved.correction if saved else None) or {}
        values = {"adequacy": str(saved.adequacy) if saved else "", "fluency": str(saved.fluency) if saved else "",
                  "errors": dict(saved.errors) if saved else {},
                  "correction_title": corrected.get("title", title), "correction_text": corrected.get("text", text)}
        if posted is not None:
            values.update(adequacy=posted.get("adequacy", ""), fluency=posted.get("fluency", ""),
                          errors={c: posted.get(f"error_{c}", "") for c in ERROR_CATEGORIES},
                          correction_title=posted.get("correction_title", title),
                          correction_text=posted.get("correction_text", text))
        mine = len(store.rated_positions(who))
        return page(request, "item.html", status, item=item, who=who, size=size, mine=mine, saved=saved,
                    total_ratings=store.rating_count(), languages=languages, scales=SCALES,
                    categories=ERROR_CATEGORIES, severities=SEVERITIES, values=values, error=error,
                    has_title=bool(item.title), previous=item.position - 1 if item.position > 1 else None,
                    next=item.position + 1 if item.position < size else None)

    def item_at(request: Request, position: str):
        """``(item, None)``, or ``(None, 404 page)`` for a number that is not an item's (any text, any size)."""
        number = int(position) if position.isascii() and position.isdigit() and len(position) <= 9 else 0
        item = store.item(number) if 1 <= number <= size else None  # SQLite's integers end at 2**63 - 1
        if item is None:
            return None, page(request, "denied.html", status=404, reason=f"there is no item {position[:20]}")
        return item, None

    @app.get("/items/{position}", response_class=HTMLResponse)
    def show(request: Request, position: str):
        who = annotator(request)
        if who is None:
            return RedirectResponse("/", status_code=303)
        item, missing = item_at(request, position)
        return missing or item_page(request, item, who)

    @app.post("/items/{position}")
    async def rate(request: Request, position: str):
        who = annotator(request)
        fields, refusal = await form(request)
        if refusal is not None:
            return refusal
        if who is None:
            return page(request, "denied.html", status=403, reason="the form expired: reload the page")
        return await run_in_threadpool(save, request, position, who, fields)

    def save(request: Request, position: str, who: str, fields: dict[str, str]):
        """Check and store one rating (in a worker thread: the database may wait for another writer)."""
        item, missing = item_at(request, position)
        if missing is not None:
            return missing
        adequacy, fluency = fields.get("adequacy", ""), fields.get("fluency", "")
        if adequacy not in tuple("12345") or fluency not in tuple("12345"):
            return item_page(request, item, who, status=400, error="rate both adequacy and fluency (1-5)",
                             posted=fields)
        correction = _correction(item, fields)
        length = sum(map(len, (correction or {}).values()))
        if length > correction_limit(item):
            return item_page(request, item, who, status=400, posted=fields,
                             error=f"the correction has {length} characters; at most {correction_limit(item)} are "
                                   f"accepted for this item ({CORRECTION_FACTOR} times its text plus "
                                   f"{CORRECTION_SLACK}): nothing was saved")
        errors = {c: fields[f"error_{c}"] for c in ERROR_CATEGORIES if fields.get(f"error_{c}") in SEVERITIES}
        store.save_rating(item.position, who, int(adequacy), int(fluency), errors, correction)
        target = next_unrated(who, item.position)
        return RedirectResponse(f"/items/{target}" if target else "/done", status_code=303)

    @app.get("/done", response_class=HTMLResponse)
    def done(request: Request):
        who = annotator(request)
        if who is None:
            return RedirectResponse("/", status_code=303)
        rated = store.rated_positions(who)
        return page(request, "done.html", who=who, size=size, mine=len(rated),
                    unrated=[p for p in range(1, size + 1) if p not in rated])

    return app


def _split(item: Item) -> tuple[str, str]:
    """``(title, text)`` of the translation as the correction boxes show it."""
    if item.title and item.translation.startswith(item.title):
        return item.title, item.translation[len(item.title):].lstrip()
    return "", item.translation


def _correction(item: Item, fields: dict[str, str]) -> dict[str, str] | None:
    """The typed correction, or None when the boxes still hold the machine translation."""
    title, text = _split(item)
    new_text = fields.get("correction_text", text).strip()
    new_title = fields.get("correction_title", title).strip() if item.title else None
    if new_text == text.strip() and (new_title is None or new_title == title.strip()):
        return None
    if not new_text:
        return None
    return {"text": new_text} | ({"title": new_title} if new_title is not None else {})


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


def _too_large(limit: int) -> str:
    return f"the form is larger than {limit} bytes, the most this review accepts: nothing was saved"


def _html(templates, name: str, status: int = 200, **values: Any):
    from fastapi.responses import HTMLResponse

    defaults = {"reason": None, "csrf": ""}
    return HTMLResponse(templates.get_template(name).render(**{**defaults, **values}), status_code=status)
