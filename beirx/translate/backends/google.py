"""Google Cloud Translation over REST: Basic (v2, API key) and Advanced (v3, OAuth token) — the service
BEIR-PL used to translate BEIR into Polish (Wojtasik et al., 2024, §3).

Credentials come from the environment only:

* v2 (default): ``GOOGLE_API_KEY`` (or ``GOOGLE_TRANSLATE_API_KEY``), sent in the ``X-goog-api-key``
  header — never in the URL, where proxies and access logs would record it; or ``GOOGLE_ACCESS_TOKEN``
  (``gcloud auth print-access-token``), sent as ``Authorization: Bearer``.
* v3 (``--translator-option api=v3``): ``GOOGLE_ACCESS_TOKEN`` plus the project (option ``project`` or
  env ``GOOGLE_CLOUD_PROJECT``). Access tokens expire after about an hour; a run that outlives its token
  stops with a clear 401 error and resumes, after a new token is exported, where it stopped.

Limits (https://cloud.google.com/translate/quotas and the v2 ``translate`` reference, read 2026-11):
at most 128 text segments per request, and a request should stay under 30,000 code points; Google
recommends about 5,000 per request for latency, which is our default budget (option
``max_request_chars``), while a single longer segment still goes alone up to the 30,000 hard limit.

Placeholders: requests that contain one are sent with ``format=html`` (v3: ``mimeType=text/html``), the
text HTML-escaped and each token wrapped as ``<span translate="no">⟦0⟧</span>``, which Google leaves
untranslated; the spans and entities are removed from the answer. Other requests go as plain text.

Price (https://cloud.google.com/translate/pricing, read 2026-11): Basic and Advanced NMT text translation
list at $20 per million characters (the first 500,000 characters a month are free; not counted here).
Google's quotas count every character sent, whitespace included, and nothing exempts markup, so
:meth:`billable_characters` counts the HTML form of segments with placeholders: an upper bound should
markup turn out to be free (on SciFact en→pl it is 9.54M characters against 7.79M of plain text).
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from beirx.argtypes import positive_int
from beirx.translate.backends.base import setting
from beirx.translate.backends.http_api import (
    ApiError,
    HttpApiTranslator,
    json_body,
    pack_requests,
    protect_placeholders,
)
from beirx.translate.planning.placeholders import PLACEHOLDER

_SPAN = re.compile(r'<span translate="no">\s*(.*?)\s*</span>', re.S)

#: Error reasons Google reports with HTTP 403 that are per-minute rate limits (worth waiting for).
_RATE_LIMIT_REASONS = {"rateLimitExceeded", "userRateLimitExceeded"}


def _code(lang: str) -> str:
    """Google's BCP-47 form of our codes: ``pt_BR`` → ``pt-BR``."""
    return lang.replace("_", "-")


class GoogleTranslator(HttpApiTranslator):
    """Options: ``api`` (``v2``/``v3``), ``project``, ``location`` (v3, default ``global``),
    ``max_request_chars``, plus the common ones of :class:`HttpApiTranslator`. ``model`` is Google's
    model name (``nmt``; v3 also accepts a full model resource) and is omitted when not given."""

    name = "google"
    api_name = "Google Cloud Translation"
    key_envs: ClassVar[tuple[str, ...]] = ("GOOGLE_API_KEY", "GOOGLE_TRANSLATE_API_KEY", "GOOGLE_ACCESS_TOKEN")
    default_base_url = "https://translation.googleapis.com"
    max_batch_size = 128
    keeps_placeholders = True
    cost_per_million_chars = 20.0
    price_source = "https://cloud.google.com/translate/pricing (NMT text, USD 20 per 1M characters; read 2026-11)"

    MAX_SEGMENTS = 128
    HARD_MAX_CHARS = 30_000

    OPTIONS = (*HttpApiTranslator.OPTIONS, setting("api", default="v2", help="v2 or v3"),
               setting("project", help="the Cloud project (v3)"), setting("location", default="global"),
               setting("max_request_chars", positive_int, 5_000, help="characters per request"))

    def __init__(self, src: str, tgt: str, model: str | None = None, *, api: str = "v2", project: str | None = None,
                 location: str = "global", max_request_chars: int = 5_000, **options: Any):
        super().__init__(src, tgt, model, **options)
        if api not in ("v2", "v3"):
            raise ApiError(f"Google Cloud Translation: unknown api {api!r}; use v2 or v3")
        self.api = api
        self.location = location
        self.project = project or (os.environ.get("GOOGLE_CLOUD_PROJECT") if api == "v3" else None)
        if api == "v3" and not self.project:
            raise ApiError("Google Cloud Translation v3 needs a project: --translator-option project=ID "
                           "or the environment variable GOOGLE_CLOUD_PROJECT")
        self.max_request_chars = min(self.read_option("max_request_chars", max_request_chars),
                                     self.HARD_MAX_CHARS)

    @property
    def _env_names(self) -> tuple[str, ...]:
        if self.key_env:
            return (self.key_env,)
        return ("GOOGLE_ACCESS_TOKEN",) if self.api == "v3" else self.key_envs

    def describe(self) -> dict[str, Any]:
        out = {"backend": self.name, "api": self.api, "src": self.src, "tgt": self.tgt, "model": self.model}
        if self.api == "v3":
            out["location"] = self.location
        return out

    # -- wire format -------------------------------------------------------------------------------
    def _auth_headers(self) -> dict[str, str]:
        key = self._credential()
        uses_token = self.api == "v3" or self._key_source == "GOOGLE_ACCESS_TOKEN"
        return {"Authorization": f"Bearer {key}"} if uses_token else {"X-goog-api-key": key}

    def _request(self, texts: list[str], markup: bool) -> tuple[str, dict[str, str], bytes]:
        headers = {"Content-Type": "application/json; charset=utf-8", **self._auth_headers()}
        if self.api == "v2":
            body: dict[str, Any] = {"q": texts, "source": _code(self.src), "target": _code(self.tgt),
                                    "format": "html" if markup else "text"}
            if self.model:
                body["model"] = self.model
            return f"{self._api_root()}/language/translate/v2", headers, json_body(body)
        parent = f"projects/{self.project}/locations/{self.location}"
        body = {"contents": texts, "sourceLanguageCode": _code(self.src), "targetLanguageCode": _code(self.tgt),
                "mimeType": "text/html" if markup else "text/plain"}
        if self.model:
            body["model"] = self.model if "/" in self.model else f"{parent}/models/general/{self.model}"
        return f"{self._api_root()}/v3/{parent}:translateText", headers, json_body(body)

    def _parse(self, payload: Any) -> list[str]:
        try:
            rows = payload["data"]["translations"] if self.api == "v2" else payload["translations"]
            return [row["translatedText"] for row in rows]
        except (KeyError, TypeError) as exc:
            raise ApiError(f"{self.api_name}: unexpected response shape (missing {exc})") from None

    def _permanent_error(self, status: int, payload: Any) -> str | None:
        reasons = set()
        if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
            reasons = {e.get("reason") for e in payload["error"].get("errors", []) if isinstance(e, dict)}
        if status == 403 and reasons & _RATE_LIMIT_REASONS:
            return None  # per-minute quota: waiting helps
        if status in (401, 403):
            return f"the credential was refused; check {' / '.join(self._env_names)} and that the API is enabled"
        return "the request was rejected; this is not transient, so it was not retried"

    def _pack(self, encoded: list[str]) -> list[tuple[int, int]]:
        return pack_requests(encoded, self.MAX_SEGMENTS, self.max_request_chars, len, self.HARD_MAX_CHARS)

    # -- placeholders ------------------------------------------------------------------------------
    @classmethod
    def encode(cls, segment: str) -> str:
        return protect_placeholders(segment, '<span translate="no">', "</span>")

    @classmethod
    def decode(cls, text: str) -> str:
        return html.unescape(_SPAN.sub(r"\1", text))

    @classmethod
    def billable_characters(cls, segments: Sequence[str]) -> int:
        return sum(len(cls.encode(s)) if PLACEHOLDER.search(s) else len(s) for s in segments)
