"""DeepL API (``POST /v2/translate``) as a translation backend.

Credential: environment variable ``DEEPL_AUTH_KEY`` (or ``DEEPL_API_KEY``), sent only in the
``Authorization: DeepL-Auth-Key …`` header. Keys of the free plan end in ``:fx`` and go to
``api-free.deepl.com``; others to ``api.deepl.com`` (override with option ``base_url``).

Limits (https://developers.deepl.com/docs/resources/usage-limits and "Translating large volumes",
read 2026-11): at most 50 texts per request and a request body of at most 128 KiB. Requests are packed
on the exact size of the UTF-8 JSON body we send.

Placeholders: requests that contain one are sent with ``tag_handling=xml`` and ``ignore_tags=["x"]``,
the text XML-escaped and each token wrapped as ``<x>⟦0⟧</x>``; DeepL copies ignored tags' content
verbatim and does not bill markup. The tags and entities are removed from the answer.

Languages: ``src``/``tgt`` are ISO 639-1 codes; DeepL wants upper case and a regional variant for some
targets, so ``en`` → ``EN-US`` and ``pt`` → ``PT-PT`` unless a variant is given (``pt-BR``, ``en_GB``).

Price (https://support.deepl.com/hc/en-us/articles/360020685720 and https://www.deepl.com/pro-api,
read 2026-11): DeepL API Pro bills usage at USD 25 per million characters (EUR 20, i.e. EUR 0.00002 per
character) plus a monthly base fee, which the estimate leaves out; the Free plan has 500,000
characters a month.
"""

from __future__ import annotations

import html
import re
from typing import Any, ClassVar

from beirx.translate.backends.base import setting
from beirx.translate.backends.http_api import (
    ApiError,
    HttpApiTranslator,
    json_body,
    pack_requests,
    protect_placeholders,
)

_TAG = re.compile(r"</?x>")
_DEFAULT_VARIANT = {"EN": "EN-US", "PT": "PT-PT"}


def deepl_lang(code: str, target: bool) -> str:
    """``pl`` → ``PL``; ``pt_br`` → ``PT-BR``; targets without a variant get DeepL's required one."""
    code = code.replace("_", "-").upper()
    if not target:
        return code.split("-")[0]
    return _DEFAULT_VARIANT.get(code, code)


class DeepLTranslator(HttpApiTranslator):
    """Options: ``formality`` (``more``/``less``/``prefer_more``/``prefer_less``), ``model_type``, plus the
    common ones of :class:`HttpApiTranslator`."""

    name = "deepl"
    api_name = "DeepL API"
    key_envs: ClassVar[tuple[str, ...]] = ("DEEPL_AUTH_KEY", "DEEPL_API_KEY")
    default_base_url = "https://api.deepl.com"
    free_base_url = "https://api-free.deepl.com"
    max_batch_size = 50
    keeps_placeholders = True
    cost_per_million_chars = 25.0
    price_source = ("https://www.deepl.com/pro-api and support.deepl.com article 360020685720 "
                    "(API Pro usage, USD 25 / EUR 20 per 1M characters, base fee excluded; read 2026-11)")

    MAX_TEXTS = 50
    MAX_BODY_BYTES = 128 * 1024

    OPTIONS = (*HttpApiTranslator.OPTIONS, setting("formality", help="DeepL's formality (more, less ...)"),
               setting("model_type", help="DeepL's model_type (default: --model)"))

    def __init__(self, src: str, tgt: str, model: str | None = None, *, formality: str | None = None,
                 model_type: str | None = None, **options: Any):
        super().__init__(src, tgt, model, **options)
        self.formality = formality
        self.model_type = model_type or model

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "src": self.src, "tgt": self.tgt, "target_lang": deepl_lang(self.tgt, True),
                "model_type": self.model_type, "formality": self.formality}

    def _api_root(self) -> str:
        if self.base_url:
            return self.base_url
        return self.free_base_url if self._credential().endswith(":fx") else self.default_base_url

    # -- wire format -------------------------------------------------------------------------------
    def _body(self, texts: list[str], markup: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"text": texts, "source_lang": deepl_lang(self.src, False),
                                "target_lang": deepl_lang(self.tgt, True)}
        if markup:
            body.update(tag_handling="xml", ignore_tags=["x"])
        if self.formality:
            body["formality"] = self.formality
        if self.model_type:
            body["model_type"] = self.model_type
        return body

    def _request(self, texts: list[str], markup: bool) -> tuple[str, dict[str, str], bytes]:
        headers = {"Authorization": f"DeepL-Auth-Key {self._credential()}",
                   "Content-Type": "application/json; charset=utf-8"}
        return f"{self._api_root()}/v2/translate", headers, json_body(self._body(texts, markup))

    def _parse(self, payload: Any) -> list[str]:
        try:
            return [row["text"] for row in payload["translations"]]
        except (KeyError, TypeError) as exc:
            raise ApiError(f"{self.api_name}: unexpected response shape (missing {exc})") from None

    def _permanent_error(self, status: int, payload: Any) -> str | None:
        if status in (401, 403):
            return f"the key was refused; check {' / '.join(self._env_names)} (free-plan keys end in ':fx')"
        if status == 456:
            return "the account's character quota is used up; upgrade the plan or wait for the next period"
        if status == 413:
            return "the request was too large"
        return "the request was rejected; this is not transient, so it was not retried"

    def _pack(self, encoded: list[str]) -> list[tuple[int, int]]:
        # Exact body size: the fixed part with an empty list, plus each text's JSON and a comma.
        overhead = len(json_body(self._body([], markup=True)))
        return pack_requests(encoded, self.MAX_TEXTS, self.MAX_BODY_BYTES - overhead,
                             lambda t: len(json_body(t)) + 1)

    # -- placeholders ------------------------------------------------------------------------------
    @classmethod
    def encode(cls, segment: str) -> str:
        return protect_placeholders(segment, '<x>', "</x>")

    @classmethod
    def decode(cls, text: str) -> str:
        return html.unescape(_TAG.sub("", text))
