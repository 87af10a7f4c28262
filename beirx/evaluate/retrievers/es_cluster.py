"""A connection to an Elasticsearch or OpenSearch cluster and the few REST calls the BM25 backend makes.

Why an adapter: the official ``elasticsearch`` client (9.x) refuses servers that are not Elasticsearch
(it checks the ``X-Elastic-Product`` header) and sends ``compatible-with=9`` media types, which
Elasticsearch 8 rejects. So :func:`connect` first asks ``GET /`` with plain JSON through the client's
transport, then:

- Elasticsearch that accepts the client's requests: the official client;
- Elasticsearch older than the client (an 8.x server rejects the 9.x client's ``compatible-with=9``):
  a clear error asking for the matching client (``pip install 'elasticsearch>=8,<9'``), which beirx
  supports unchanged;
- OpenSearch: the optional ``opensearch-py`` client, whose calls take the same ``index=``/``body=``
  arguments; only point-in-time calls differ.

Credentials come from the environment, never from the command line (so they stay out of shell history
and results files): ``BEIRX_ES_API_KEY`` (Elasticsearch API key, the encoded form) or
``BEIRX_ES_USER`` + ``BEIRX_ES_PASSWORD`` (basic auth).
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from beirx.errors import BeirxError, require
from beirx.network import reason
from beirx.redact import redact_url

log = logging.getLogger(__name__)

ENV_API_KEY = "BEIRX_ES_API_KEY"
ENV_USER = "BEIRX_ES_USER"
ENV_PASSWORD = "BEIRX_ES_PASSWORD"


class ServerError(BeirxError):
    """The cluster answered a request with an error (``status`` is the HTTP status, ``reason`` its text)."""

    def __init__(self, action: str, status: Any, reason: str):
        self.status, self.reason = status, reason
        super().__init__(f"Elasticsearch {action} failed (HTTP {status}): {reason}")


def error_reason(body: Any) -> str:
    """The error type and reasons from an Elasticsearch/OpenSearch error body, outermost first."""
    if not isinstance(body, dict):
        return str(body)
    error = body.get("error", body)
    if not isinstance(error, dict):
        return str(error)
    parts: list[str] = []
    for item in [error, *error.get("root_cause", [])]:
        while isinstance(item, dict):
            text = f"{item.get('type', 'error')}: {item.get('reason', '')}".strip()
            if text not in parts:
                parts.append(text)
            item = item.get("caused_by")
    return "; ".join(parts)


def auth_headers() -> dict[str, str]:
    """``Authorization`` from BEIRX_ES_API_KEY, or BEIRX_ES_USER/BEIRX_ES_PASSWORD (API key wins)."""
    api_key = os.environ.get(ENV_API_KEY, "").strip()
    user, password = os.environ.get(ENV_USER, ""), os.environ.get(ENV_PASSWORD, "")
    if api_key:
        return {"authorization": f"ApiKey {api_key}"}
    if user or password:
        if not (user and password):
            raise BeirxError(f"set both {ENV_USER} and {ENV_PASSWORD} for basic authentication (only one is set)")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return {"authorization": f"Basic {token}"}
    return {}


@dataclass
class ServerInfo:
    distribution: str  # "elasticsearch" or "opensearch"
    version: str
    lucene_version: str

    @property
    def major(self) -> int:
        try:
            return int(self.version.split(".")[0])
        except ValueError:
            return 0


class Cluster:
    """The calls the BM25 backend needs, for an elasticsearch-py or opensearch-py ``client``."""

    def __init__(self, client, helpers, api_error, info: ServerInfo, client_version: str, url: str):
        self.client, self._helpers, self._api_error = client, helpers, api_error
        self.info, self.client_version, self.url = info, client_version, redact_url(url)

    @property
    def is_opensearch(self) -> bool:
        return self.info.distribution == "opensearch"

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "distribution": self.info.distribution, "version": self.info.version,
                "lucene_version": self.info.lucene_version, "client": self.client_version}

    def _call(self, action: str, fn, **kwargs):
        try:
            return fn(**kwargs)
        except self._api_error as exc:
            status = getattr(getattr(exc, "meta", None), "status", None) or getattr(exc, "status_code", None)
            body = getattr(exc, "body", None) or getattr(exc, "info", None)
            if not isinstance(status, int):  # network failure after the client's own retries
                raise BeirxError(f"Elasticsearch {action} failed: cannot reach {self.url} ({reason(exc)})") from exc
            raise ServerError(action, status, error_reason(body) if body else str(exc)) from exc

    # -- indices -------------------------------------------------------------------------------
    def plugins(self) -> set[str] | None:
        """Installed plugin names on any node, or None when the user may not list them."""
        try:
            rows = self._call("listing plugins", self.client.cat.plugins, format="json")
        except ServerError as exc:
            if exc.status in (401, 403):
                return None
            raise
        return {row.get("component", "") for row in rows}

    def exists(self, index: str) -> bool:
        return bool(self._call("index check", self.client.indices.exists, index=index))

    def create(self, index: str, body: dict[str, Any]) -> None:
        self._call(f"creating index {index}", self.client.indices.create, index=index, body=body)

    def delete(self, index: str) -> None:
        self._call(f"deleting index {index}", self.client.indices.delete, index=index)

    def meta(self, index: str) -> dict[str, Any]:
        """The ``_meta.beirx`` object of the index mapping ({} when absent)."""
        mappings = self._call(f"reading mapping of {index}", self.client.indices.get_mapping, index=index)
        mapping = next(iter(dict(mappings).values()), {}).get("mappings", {})
        return mapping.get("_meta", {}).get("beirx", {})

    def put_meta(self, index: str, meta: dict[str, Any]) -> None:
        self._call(f"updating mapping of {index}", self.client.indices.put_mapping, index=index,
                   body={"_meta": {"beirx": meta}})

    def settings(self, index: str) -> dict[str, Any]:
        answer = self._call(f"reading settings of {index}", self.client.indices.get_settings, index=index)
        return next(iter(dict(answer).values()), {}).get("settings", {}).get("index", {})

    def put_settings(self, index: str, settings: dict[str, Any]) -> None:
        self._call(f"updating settings of {index}", self.client.indices.put_settings, index=index,
                   body={"index": settings})

    def refresh(self, index: str) -> None:
        self._call(f"refreshing {index}", self.client.indices.refresh, index=index)

    def count(self, index: str) -> int:
        return int(self._call(f"counting {index}", self.client.count, index=index)["count"])

    def bulk(self, actions: Iterable[dict[str, Any]], *, chunk_size: int, max_retries: int,
             initial_backoff: float) -> Iterator[tuple[bool, dict[str, Any]]]:
        """``helpers.streaming_bulk``: reads ``actions`` lazily (back-pressure), retries 429s with backoff."""
        try:
            yield from self._helpers.streaming_bulk(self.client, actions, chunk_size=chunk_size,
                                                    max_chunk_bytes=50 * 1024 * 1024, max_retries=max_retries,
                                                    initial_backoff=initial_backoff, max_backoff=120,
                                                    raise_on_error=True)
        except self._helpers.BulkIndexError as exc:
            first = exc.errors[0] if exc.errors else {}
            item = next(iter(first.values()), {}) if isinstance(first, dict) else {}
            raise BeirxError(f"Elasticsearch rejected {len(exc.errors)} document(s), e.g. {item.get('_id')!r}: "
                             f"{error_reason(item.get('error', item))}") from exc
        except self._api_error as exc:
            raise BeirxError(f"Elasticsearch bulk indexing failed: {exc}") from exc

    # -- search --------------------------------------------------------------------------------
    def msearch(self, searches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(self._call("multi-search", self.client.msearch, body=searches)["responses"])

    def search(self, body: dict[str, Any], **params) -> dict[str, Any]:
        return dict(self._call("search", self.client.search, body=body, **params))

    def open_pit(self, index: str, keep_alive: str) -> str:
        """A point-in-time id; ServerError when the cluster has no point-in-time API."""
        if self.is_opensearch:  # OpenSearch >= 2.4
            answer = self._call("opening a point in time", self.client.create_pit, index=index, keep_alive=keep_alive)
            pit_id = answer.get("pit_id")
        else:
            answer = self._call("opening a point in time", self.client.open_point_in_time, index=index,
                                keep_alive=keep_alive)
            pit_id = answer.get("id")
        if not pit_id:
            raise ServerError("opening a point in time", 501, f"the answer has no point-in-time id: {dict(answer)}")
        return pit_id

    def close_pit(self, pit_id: str) -> None:
        if self.is_opensearch:
            self._call("closing a point in time", self.client.delete_pit, body={"pit_id": [pit_id]})
        else:
            self._call("closing a point in time", self.client.close_point_in_time, body={"id": pit_id})


def _probe(url: str, headers: dict[str, str], tls: dict[str, Any], timeout: float) -> ServerInfo:
    """``GET /`` with plain JSON through the client's transport (no compatibility header, no product check)."""
    from elastic_transport import NodeConfig, Transport, TransportError

    transport = Transport([NodeConfig(**_node_config(url, tls))])
    try:
        meta, body = transport.perform_request("GET", "/", headers={"accept": "application/json", **headers},
                                               request_timeout=timeout)
    except TransportError as exc:
        hint = " (TLS: pass --es-ca-certs CA.pem, or --no-es-verify for a test cluster)" if "ssl" in str(exc).lower() \
            or "certificate" in str(exc).lower() else ""
        cause = reason(exc)
        raise BeirxError(f"cannot reach Elasticsearch at {redact_url(url)} "
                         f"({exc if cause == 'connection failed' else cause}){hint}; start it, or fix --es-url") from exc
    finally:
        transport.close()
    if meta.status in (401, 403):
        raise BeirxError(f"Elasticsearch at {redact_url(url)} refused the credentials (HTTP {meta.status}): set "
                         f"{ENV_API_KEY}, or {ENV_USER} and {ENV_PASSWORD}, to an account that may read and "
                         "create indices")
    if not 200 <= meta.status < 300 or not isinstance(body, dict) or "version" not in body:
        raise BeirxError(f"{redact_url(url)} does not answer like Elasticsearch or OpenSearch "
                         f"(HTTP {meta.status}: {error_reason(body)[:200]})")
    version = body["version"]
    return ServerInfo(distribution=version.get("distribution", "elasticsearch"), version=str(version.get("number", "")),
                      lucene_version=str(version.get("lucene_version", "")))


def _node_config(url: str, tls: dict[str, Any]) -> dict[str, Any]:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https"):
        raise BeirxError(f"--es-url must start with http:// or https://, got {redact_url(url)!r}")
    config: dict[str, Any] = {"scheme": parts.scheme, "host": parts.hostname or "localhost",
                              "port": parts.port or 9200, "path_prefix": parts.path.rstrip("/")}
    if parts.scheme == "https":
        config.update(tls)
    return config


def connect(url: str, *, ca_certs: str | None = None, verify: bool = True, timeout: float = 120.0) -> Cluster:
    """Connect, find out what the server is, and return a :class:`Cluster` with the right client."""
    es = require("elasticsearch", "es", "the Elasticsearch retriever")
    parts = urlsplit(url if "://" in url else f"http://{url}")
    headers = auth_headers()
    if parts.username:  # credentials written into the URL still work, but never reach logs or results
        token = base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()
        headers.setdefault("authorization", f"Basic {token}")
    tls: dict[str, Any] = {"verify_certs": verify}
    if ca_certs:
        tls["ca_certs"] = str(ca_certs)
    if not verify:
        tls["ssl_show_warn"] = False
    info = _probe(url, headers, tls, timeout)
    if info.distribution == "opensearch":
        return _connect_opensearch(url, headers, tls, timeout, info)
    from elastic_transport import NodeConfig, TransportError
    from elasticsearch import helpers

    client = es.Elasticsearch([NodeConfig(**_node_config(url, tls))], headers=headers, request_timeout=timeout,
                              max_retries=3, retry_on_timeout=True)
    try:
        client.info()
    except es.ApiError as exc:
        reason = error_reason(exc.body) if exc.body else str(exc)
        if "media_type" in reason or "compatible" in reason.lower():
            pin = f"'elasticsearch>={info.major},<{info.major + 1}'" if info.major else "elasticsearch==<server version>"
            raise BeirxError(
                f"{redact_url(url)} runs Elasticsearch {info.version}, which rejects the request format of the "
                f"installed Python client elasticsearch {es.__versionstr__} ({reason}). Install the client that "
                f"matches the server:  pip install {pin}") from exc
        raise BeirxError(f"Elasticsearch at {redact_url(url)} answered GET / with an error: {reason}") from exc
    return Cluster(client, helpers, (es.ApiError, TransportError), info, f"elasticsearch-py {es.__versionstr__}", url)


def _connect_opensearch(url: str, headers: dict[str, str], tls: dict[str, Any], timeout: float,
                        info: ServerInfo) -> Cluster:
    osp = require("opensearchpy", "es", "OpenSearch clusters (the opensearch-py client)")
    from opensearchpy import helpers

    node = _node_config(url, tls)
    options: dict[str, Any] = {"use_ssl": node["scheme"] == "https"}
    if node["scheme"] == "https":
        options.update(verify_certs=tls["verify_certs"], ssl_show_warn=tls.get("ssl_show_warn", True))
        if "ca_certs" in tls:
            options["ca_certs"] = tls["ca_certs"]
    client = osp.OpenSearch(hosts=[{"host": node["host"], "port": node["port"], "url_prefix": node["path_prefix"]}],
                            headers=headers, timeout=timeout, max_retries=3, retry_on_timeout=True, **options)
    return Cluster(client, helpers, osp.TransportError, info, f"opensearch-py {osp.__versionstr__}", url)
