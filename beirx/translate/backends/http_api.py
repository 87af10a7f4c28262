"""Shared machinery for the cloud translation backends (``google``, ``deepl``): packing segments into
requests within each API's limits, retrying transient failures, keeping the key secret, estimating cost.

Why it is shaped like this:

* **Packing.** The pipeline hands over up to ``max_batch_size`` segments; each API also caps a request's
  size (Google: 128 segments, ~30k code points; DeepL: 50 texts, 128 KiB body). :func:`pack_requests`
  cuts a batch into consecutive runs that respect both, so order is preserved by construction.
* **Retries.** 429, 5xx, timeouts and dropped connections are transient on these services; they are
  retried through beirx's one retry decision (:class:`beirx.retry.Retrying`; this module only classifies an
  answer) with :class:`beirx.retry.RetryPolicy` (exponential backoff with jitter, the server's
  ``Retry-After``/``retry-after-ms`` honoured), whose ``sleep`` and ``rng`` are injectable so tests run in
  milliseconds.
* **Failing cleanly.** When retries are exhausted, or the error is permanent (bad key, quota used up,
  bad request), :class:`ApiError` (a ``BeirxError``) stops the run. The pipeline commits every finished
  batch to its translation memory first, so nothing already paid for is lost and a rerun resumes.
* **Secrets.** The key is read from an environment variable at the first request (so ``--dry-run`` and
  ``describe()`` never need it), travels only in a request header, and is scrubbed from every message we
  raise or log. ``describe()`` never contains it.
* **Placeholders.** The pipeline replaces spans that must survive verbatim (URLs, numbers) with tokens
  such as ``⟦0⟧``. Both APIs can be told not to translate marked-up spans; each backend wraps the tokens in
  its API's "do not translate" markup (see :meth:`HttpApiTranslator.encode`) only in requests that contain
  a placeholder, and removes the markup from the answer.
"""

from __future__ import annotations

import html
import json
import logging
import os
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from beirx.argtypes import non_negative_float, option, positive_float, positive_int
from beirx.errors import BeirxError
from beirx.retry import RETRY_STATUSES, RetryPolicy, Retrying, Transient, transient_status
from beirx.retry import parse_retry_after  # noqa: F401 (re-exported)
from beirx.translate.backends.base import Translator, setting
from beirx.translate.planning.placeholders import PLACEHOLDER

log = logging.getLogger(__name__)

#: The pipeline's placeholder tokens for spans that must be kept verbatim.

class ApiError(BeirxError):
    """A cloud API request failed for good; the message says what to do (the key is never in it)."""


def pack_requests(items: Sequence[str], max_items: int, budget: int, cost: Callable[[str], int],
                  hard_limit: int | None = None) -> list[tuple[int, int]]:
    """Cut ``items`` into consecutive ``(start, end)`` runs of at most ``max_items`` whose summed
    ``cost`` stays within ``budget``. An item costlier than ``budget`` travels alone if it fits
    ``hard_limit`` (default: ``budget``); otherwise no request could carry it and we raise.
    """
    hard_limit = budget if hard_limit is None else hard_limit
    runs: list[tuple[int, int]] = []
    start, used = 0, 0
    for i, item in enumerate(items):
        c = cost(item)
        if c > hard_limit:
            raise ApiError(f"segment {i} is {c} units long, over the API's per-request limit of {hard_limit}; "
                           "segment the text into shorter pieces (sentences) before sending it")
        if i > start and (i - start >= max_items or used + c > budget):
            runs.append((start, i))
            start, used = i, 0
        used += c
    if start < len(items):
        runs.append((start, len(items)))
    return runs


class HttpApiTranslator(Translator):
    """A :class:`Translator` over a paid REST API. Subclasses define the wire format; this class owns
    credentials, request packing, retries and cost estimation.

    Options common to every API backend (``--translator-option key=value``): ``base_url`` (proxy or test
    server), ``timeout`` (seconds per request), ``key_env`` (another environment variable holding the key),
    ``retries`` (attempts per request) and ``backoff`` (base delay in seconds).
    """

    #: Human-readable service name used in messages.
    api_name: ClassVar[str]
    #: Environment variables searched, in order, for the credential.
    key_envs: ClassVar[tuple[str, ...]]
    default_base_url: ClassVar[str]

    OPTIONS = (setting("base_url", help="the API's address (default: the provider's)"),
               setting("timeout", positive_float, 60.0, help="seconds per request"),
               setting("key_env", help="environment variable holding the key"),
               setting("retries", positive_int, help="attempts per request"),
               setting("backoff", non_negative_float, help="seconds before the first retry, doubled each time"))

    def __init__(self, src: str, tgt: str, model: str | None = None, *, base_url: str | None = None,
                 timeout: float = 60.0, key_env: str | None = None, retries: int | None = None,
                 backoff: float | None = None, retry_policy: RetryPolicy | None = None, **options: Any):
        super().__init__(src, tgt, model, **options)
        self.base_url = base_url.rstrip("/") if base_url else None
        self.timeout = option(self.name, "timeout", timeout, positive_float)
        self.key_env = key_env
        self.retry = retry_policy or RetryPolicy()
        if retries is not None:
            self.retry.attempts = option(self.name, "retries", retries, positive_int)
        if backoff is not None:
            self.retry.base_delay = option(self.name, "backoff", backoff, non_negative_float)
        self._session = None  # a requests.Session, created at the first request
        self._key: str | None = None
        self._key_source: str | None = None  # the environment variable the key came from

    # -- credentials -----------------------------------------------------------------------------
    @property
    def _env_names(self) -> tuple[str, ...]:
        return (self.key_env,) if self.key_env else self.key_envs

    def _credential(self) -> str:
        """The key, read once from the environment (never from a file, argument or manifest)."""
        if self._key is None:
            for name in self._env_names:
                value = os.environ.get(name, "").strip()
                if value:
                    self._key, self._key_source = value, name
                    break
            else:
                raise ApiError(f"{self.api_name}: no credential found; set the environment variable "
                               f"{' or '.join(self._env_names)}")
        return self._key

    def check_ready(self) -> None:
        """The credential must be in the environment before a real run starts."""
        self._credential()

    def _api_root(self) -> str:
        """The base URL requests go to: the ``base_url`` option, else the service's own."""
        return self.base_url or self.default_base_url

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    # -- the wire format (per API) ----------------------------------------------------------------
    @abstractmethod
    def _request(self, texts: list[str], markup: bool) -> tuple[str, dict[str, str], bytes]:
        """``(url, headers, body)`` for one request translating ``texts`` (already encoded)."""

    @abstractmethod
    def _parse(self, payload: Any) -> list[str]:
        """The translations, in request order, from a successful response's JSON."""

    @abstractmethod
    def _permanent_error(self, status: int, payload: Any) -> str | None:
        """For a non-2xx answer: a message when retrying cannot help, or None to retry."""

    @abstractmethod
    def _pack(self, encoded: list[str]) -> list[tuple[int, int]]:
        """Cut encoded segments into requests that respect the API's limits."""

    @classmethod
    @abstractmethod
    def encode(cls, segment: str) -> str:
        """The segment as sent in a markup request: text escaped, placeholders in do-not-translate tags."""

    @classmethod
    @abstractmethod
    def decode(cls, text: str) -> str:
        """Undo :meth:`encode` on a translation."""

    # -- translation ----------------------------------------------------------------------------
    def translate_batch(self, segments: list[str]) -> list[str]:
        markup = any(PLACEHOLDER.search(s) for s in segments)
        encoded = [self.encode(s) for s in segments] if markup else list(segments)
        out: list[str] = []
        for start, end in self._pack(encoded):
            translated = self._send(encoded[start:end], markup)
            if len(translated) != end - start:
                raise ApiError(f"{self.api_name}: sent {end - start} texts but got {len(translated)} translations back")
            out.extend([self.decode(t) for t in translated] if markup else translated)
        return out

    def _http(self):
        if self._session is None:
            import requests

            self._session = requests.Session()
        return self._session

    def _send(self, texts: list[str], markup: bool) -> list[str]:
        """POST one request through the one retry decision (:class:`beirx.retry.Retrying`, per :attr:`retry`);
        raise :class:`ApiError` when done."""
        self._credential()
        url, headers, body = self._request(texts, markup)

        def post(_attempt: int):
            resp = self._http().post(url, data=body, headers=headers, timeout=self.timeout)
            try:
                return resp, resp.json()
            except ValueError:
                return resp, None

        retrying = Retrying(self.retry, retried=self._retried, exhausted=self._exhausted)
        return self._parse(retrying.call(post, self._classify)[1])

    def _classify(self, outcome: Any) -> Transient | None:
        """What an attempt got: a 2xx with JSON is final; timeouts, dropped connections, a 2xx that is not JSON
        and statuses the service does not call permanent (:meth:`_permanent_error`) are transient."""
        import requests

        if isinstance(outcome, (requests.Timeout, requests.ConnectionError, requests.exceptions.ChunkedEncodingError)):
            return Transient(f"{type(outcome).__name__}: {self._redact(str(outcome))}", "connection")
        if isinstance(outcome, BaseException):
            return None
        resp, payload = outcome
        if 200 <= resp.status_code < 300:
            return None if payload is not None else Transient(f"HTTP {resp.status_code} with a body that is not JSON")
        detail = self._redact(_error_detail(payload, resp.text))
        last = f"HTTP {resp.status_code}" + (f" ({detail})" if detail else "")
        permanent = None if resp.status_code in RETRY_STATUSES else self._permanent_error(resp.status_code, payload)
        if permanent:
            raise ApiError(f"{self.api_name}: {last}: {permanent}")
        return transient_status(resp.status_code, resp.headers, last, retry=True)

    def _retried(self, attempt: int, transient: Transient, wait: float) -> None:
        log.warning("%s: %s; retry %d/%d in %.1f s", self.api_name, transient.reason, attempt,
                    self.retry.attempts - 1, wait)

    def _exhausted(self, transient: Transient, attempts: int) -> ApiError:
        return ApiError(f"{self.api_name}: request failed after {attempts} attempts (last: {transient.reason}). "
                        "Batches finished before this one are kept; rerun the same command to resume.")

    # -- cost --------------------------------------------------------------------------------------
    @classmethod
    def estimate_cost(cls, characters: int) -> dict[str, Any]:
        return estimate(cls, characters)


def _error_detail(payload: Any, text: str) -> str:
    """The service's own error message, short: Google ``{"error": {"message"}}``, DeepL ``{"message"}``."""
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        if payload.get("message"):
            return str(payload["message"])[:300]
    return (text or "").strip()[:200]


def estimate(translator_cls: type[Translator], characters: int) -> dict[str, Any]:
    """What translating ``characters`` billed characters with ``translator_cls`` would cost.

    Local backends (no ``cost_per_million_chars``) cost nothing per character; the figure for API
    backends is list price only: free tiers, volume discounts, taxes and DeepL's monthly base fee are
    not included.
    """
    price = translator_cls.cost_per_million_chars
    return {
        "translator": translator_cls.name,
        "characters": int(characters),
        "usd_per_million_chars": price,
        "estimated_cost_usd": None if price is None else round(characters / 1_000_000 * price, 2),
        "price_source": translator_cls.price_source,
    }


def protect_placeholders(segment: str, open_tag: str, close_tag: str) -> str:
    """``segment`` as markup: text HTML/XML-escaped, each placeholder wrapped in ``open_tag``/``close_tag``."""
    parts, pos = [], 0
    for m in PLACEHOLDER.finditer(segment):
        parts += [html.escape(segment[pos:m.start()], quote=False), open_tag, m.group(0), close_tag]
        pos = m.end()
    parts.append(html.escape(segment[pos:], quote=False))
    return "".join(parts)


def json_body(obj: Any) -> bytes:
    """Compact UTF-8 JSON exactly as sent, so request sizes can be computed before sending."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
