"""The review app's pages and form posts (mounted by :func:`beirx.review.app.create_app`, whose docstring says what
every route depends on and what every request has passed before it gets here). Synchronous routes run in FastAPI's
worker threads; form posts read their bounded body on the event loop and touch the database only in a worker thread.
"""

# No "from __future__ import annotations": FastAPI injects the request and the dependencies by the routes'
# evaluated annotations (this module is imported only once the optional extra is known to be installed).
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from beirx.review.security import ANNOTATOR, CORRECTION_FACTOR, CORRECTION_SLACK, MAX_NAME, Refused, Review, \
    correction_limit, valid_name
from beirx.review.store import ERROR_CATEGORIES, SEVERITIES, Item

SCALES = {
    "adequacy": ("Adequacy", "1 none of the meaning · 2 little · 3 much · 4 most · 5 all of it", "12345"),
    "fluency": ("Fluency", "1 incomprehensible · 2 disfluent · 3 non-native · 4 good · 5 flawless", "qwert"),
}

router = APIRouter()


async def review_of(request: Request) -> Review:
    return request.app.state.review


async def annotator(request: Request, review: Review = Depends(review_of)) -> str | None:
    return review.annotator(request)


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, review: Review = Depends(review_of), who: str | None = Depends(annotator)):
    if who is None:
        return review.page(request, "login.html", size=review.size, error=None)
    return next_unrated(review, who)


@router.post("/login")
async def login(request: Request, review: Review = Depends(review_of)):
    fields = await review.form(request)
    name = valid_name(fields.get("name", ""))
    if name is None:
        return review.page(request, "login.html", status=400, size=review.size,
                           error=f"enter a name of 1 to {MAX_NAME} printable characters")
    response = _redirect("/")
    tag = review.tag("annotator", request.state.sid, name)
    response.set_cookie(ANNOTATOR, quote(f"{name}\x1f{tag}"), httponly=True, samesite="strict")
    return response


@router.post("/logout")
async def logout(request: Request, review: Review = Depends(review_of)):
    await review.form(request)
    response = _redirect("/")
    response.delete_cookie(ANNOTATOR)
    return response


@router.get("/items/{position}", response_class=HTMLResponse)
def show(request: Request, position: str, review: Review = Depends(review_of), who: str | None = Depends(annotator)):
    if who is None:
        return _redirect("/")
    return item_page(review, request, item_at(review, request, position), who)


@router.post("/items/{position}")
async def rate(request: Request, position: str, review: Review = Depends(review_of),
               who: str | None = Depends(annotator)):
    fields = await review.form(request)
    if who is None:
        return review.page(request, "denied.html", status=403, reason="the form expired: reload the page")
    return await run_in_threadpool(save, review, request, position, who, fields)


@router.get("/done", response_class=HTMLResponse)
def done(request: Request, review: Review = Depends(review_of), who: str | None = Depends(annotator)):
    if who is None:
        return _redirect("/")
    rated = review.store.rated_positions(who)
    return review.page(request, "done.html", who=who, size=review.size, mine=len(rated),
                       unrated=[p for p in range(1, review.size + 1) if p not in rated])


def save(review: Review, request: Request, position: str, who: str, fields: dict[str, str]):
    """Check and store one rating (in a worker thread: the database may wait for another writer)."""
    item = item_at(review, request, position)
    adequacy, fluency = fields.get("adequacy", ""), fields.get("fluency", "")
    if adequacy not in tuple("12345") or fluency not in tuple("12345"):
        return item_page(review, request, item, who, status=400, error="rate both adequacy and fluency (1-5)",
                         posted=fields)
    correction = _correction(item, fields)
    length = sum(map(len, (correction or {}).values()))
    if length > correction_limit(item):
        return item_page(review, request, item, who, status=400, posted=fields,
                         error=f"the correction has {length} characters; at most {correction_limit(item)} are "
                               f"accepted for this item ({CORRECTION_FACTOR} times its text plus "
                               f"{CORRECTION_SLACK}): nothing was saved")
    errors = {c: fields[f"error_{c}"] for c in ERROR_CATEGORIES if fields.get(f"error_{c}") in SEVERITIES}
    review.store.save_rating(item.position, who, int(adequacy), int(fluency), errors, correction)
    return next_unrated(review, who, item.position)


def next_unrated(review: Review, who: str, after: int = 0) -> RedirectResponse:
    """To the annotator's first unrated item after ``after`` (wrapping around), or to the end page."""
    done = review.store.rated_positions(who)
    order = [*range(after + 1, review.size + 1), *range(1, after + 1)]
    target = next((p for p in order if p not in done), None)
    return _redirect(f"/items/{target}" if target else "/done")


def item_at(review: Review, request: Request, position: str) -> Item:
    """The item numbered ``position``; :class:`Refused` with a 404 page for any other text (any size)."""
    number = int(position) if position.isascii() and position.isdigit() and len(position) <= 9 else 0
    item = review.store.item(number) if 1 <= number <= review.size else None  # SQLite's integers end at 2**63 - 1
    if item is None:
        raise Refused(review.page(request, "denied.html", status=404, reason=f"there is no item {position[:20]}"))
    return item


def item_page(review: Review, request: Request, item: Item, who: str, status: int = 200, error: str | None = None,
              posted: dict[str, str] | None = None):
    saved = review.store.rating(item.position, who)
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
    return review.page(request, "item.html", status, item=item, who=who, size=review.size,
                       mine=len(review.store.rated_positions(who)), saved=saved,
                       total_ratings=review.store.rating_count(), languages=review.languages, scales=SCALES,
                       categories=ERROR_CATEGORIES, severities=SEVERITIES, values=values, error=error,
                       has_title=bool(item.title), previous=item.position - 1 if item.position > 1 else None,
                       next=item.position + 1 if item.position < review.size else None)


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
    if not new_text or (new_text == text.strip() and (new_title is None or new_title == title.strip())):
        return None
    return {"text": new_text} | ({"title": new_title} if new_title is not None else {})
