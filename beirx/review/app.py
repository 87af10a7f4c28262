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
  double-submit pattern) and must come from the app's own origin (``Origin``/``Sec-Fetch-Site``);
  cookies are ``HttpOnly`` and ``SameSite=Strict``;
- with an access token (``--token``), nothing is served until the browser has shown it once
  (``?token=...``), after which a cookie carries an HMAC of it.
"""

# No "from __future__ import annotations": FastAPI injects the request by the endpoints' evaluated annotations,
# and Request is imported inside create_app (the extra is optional).
import hashlib
import hmac
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
        return bool(tag) and hmac.compare_digest(tag, self.tag(*parts))


def valid_name(name: str) -> str | None:
    """A trimmed annotator name, or None when empty, too long or holding control characters."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME or not name.isprintable():
        return None
    return name


def create_app(store: ReviewStore, token: str | None = None, languages: tuple[str, str] = ("source", "translation")):
    """The ASGI app over ``store``; ``token`` (optional) is required once per browser."""
    fastapi = require("fastapi", "review", "the review web app")
    jinja2 = require("jinja2", "review", "the review web app")
    from fastapi import Request  # endpoints are typed with it, so FastAPI injects the request
    from fastapi.responses import HTMLResponse, RedirectResponse
    from fastapi.staticfiles import StaticFiles

    signer = Signer(store.secret())
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
        response = gate(request)
        if response is None:
            response = await call_next(request)
        response.headers.update({"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                                 "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
                                 "X-Frame-Options": "DENY"})
        if fresh:
            response.set_cookie(SID, request.state.sid, httponly=True, samesite="strict")
        return response

    def gate(request: Request):
        """The refusal (or the token's redirect) for a request that may not go through, else None."""
        if token is not None:
            given = request.query_params.get("token")
            if given is not None and hmac.compare_digest(given, token):
                response = RedirectResponse(str(request.url.remove_query_params("token")), status_code=303)
                response.set_cookie(ACCESS, signer.tag("access", token), httponly=True, samesite="strict")
                return response
            if not signer.check(request.cookies.get(ACCESS), "access", token):
                return _html(templates, "denied.html", status=401)
        if request.method == "POST" and not _same_origin(request):
            return _html(templates, "denied.html", status=403, reason="cross-site form post refused")
        return None

    def session(request: Request) -> str:
        return request.state.sid

    def annotator(request: Request) -> str | None:
        sid = session(request)
        raw = request.cookies.get(ANNOTATOR) or ""
        name, _, tag = unquote(raw).rpartition("\x1f")
        return name if name and signer.check(tag, "annotator", sid, name) else None

    async def form(request: Request) -> dict[str, str] | None:
        """The posted form, or None when its CSRF token does not match the session."""
        body = (await request.body()).decode("utf-8", errors="replace")
        fields = {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}
        return fields if signer.check(fields.get("csrf"), "csrf", session(request)) else None

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
        fields = await form(request)
        if fields is None:
            return page(request, "denied.html", status=403, reason="the form expired: reload the page")
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
        if await form(request) is None:
            return page(request, "denied.html", status=403, reason="the form expired: reload the page")
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

    @app.get("/items/{position}", response_class=HTMLResponse)
    def show(request: Request, position: int):
        who = annotator(request)
        if who is None:
            return RedirectResponse("/", status_code=303)
        item = store.item(position)
        if item is None:
            return page(request, "denied.html", status=404, reason=f"there is no item {position}")
        return item_page(request, item, who)

    @app.post("/items/{position}")
    async def rate(request: Request, position: int):
        who = annotator(request)
        fields = await form(request)
        if who is None or fields is None:
            return page(request, "denied.html", status=403, reason="the form expired: reload the page")
        item = store.item(position)
        if item is None:
            return page(request, "denied.html", status=404, reason=f"there is no item {position}")
        adequacy, fluency = fields.get("adequacy", ""), fields.get("fluency", "")
        if adequacy not in tuple("12345") or fluency not in tuple("12345"):
            return item_page(request, item, who, status=400, error="rate both adequacy and fluency (1-5)",
                             posted=fields)
        errors = {c: fields[f"error_{c}"] for c in ERROR_CATEGORIES if fields.get(f"error_{c}") in SEVERITIES}
        store.save_rating(position, who, int(adequacy), int(fluency), errors, _correction(item, fields))
        target = next_unrated(who, position)
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


def _same_origin(request) -> bool:
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None or origin == "null" and site == "same-origin":
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def _html(templates, name: str, status: int = 200, **values: Any):
    from fastapi.responses import HTMLResponse

    defaults = {"reason": None, "csrf": ""}
    return HTMLResponse(templates.get_template(name).render(**{**defaults, **values}), status_code=status)
