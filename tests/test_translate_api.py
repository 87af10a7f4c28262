"""The google and deepl backends against a local stub of both REST APIs (127.0.0.1 only).

The stub answers like the real services (request and response JSON), enforces their per-request limits,
and can be scripted to answer the next requests with 429 + Retry-After, 5xx, a reply slower than the
client's timeout, or a dropped connection. Backoff sleeps are recorded instead of slept.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from beirx.errors import BeirxError
from beirx.translate.backends import TRANSLATORS
from beirx.translate.backends.base import Translator
from beirx.translate.backends.deepl import DeepLTranslator
from beirx.translate.backends.google import GoogleTranslator
from beirx.translate.backends.http_api import ApiError, RetryPolicy, estimate, pack_requests, parse_retry_after

GOOGLE_KEY = "AIza-TEST-SECRET-0123456789"
DEEPL_KEY = "deepl-secret-4f2a-77:fx"


class StubApi:
    """Both APIs on one port. ``script`` holds actions for the next requests; ``requests`` records them."""

    def __init__(self):
        self.script: deque = deque()
        self.requests: list[dict] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                url = urlsplit(self.path)
                record = {"path": url.path, "query": url.query, "headers": dict(self.headers), "raw": raw,
                          "body": json.loads(raw)}
                stub.requests.append(record)
                action = stub.script.popleft() if stub.script else ("ok",)
                if action[0] == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if action[0] == "sleep":  # answer after the client gave up: the write may hit a closed socket
                    time.sleep(action[1])
                    try:
                        return self._answer(record)
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True
                        return
                if action[0] == "status":
                    _, code, headers, payload = action
                    return self._send(code, payload, headers)
                return self._answer(record)

            def _answer(self, record):
                body = record["body"]
                if record["path"] == "/language/translate/v2":
                    if len(body["q"]) > 128 or sum(len(q) for q in body["q"]) > 30_000:
                        return self._send(400, {"error": {"code": 400, "message": "Too many text segments"}})
                    html = body["format"] == "html"
                    rows = [{"translatedText": _fake(q, body["target"], html)} for q in body["q"]]
                    return self._send(200, {"data": {"translations": rows}})
                if record["path"].startswith("/v3/") and record["path"].endswith(":translateText"):
                    html = body["mimeType"] == "text/html"
                    rows = [{"translatedText": _fake(q, body["targetLanguageCode"], html)} for q in body["contents"]]
                    return self._send(200, {"translations": rows})
                if record["path"] == "/v2/translate":
                    if len(body["text"]) > 50 or len(record["raw"]) > 128 * 1024:
                        return self._send(413, {"message": "Request Entity Too Large"})
                    rows = [{"detected_source_language": "EN", "text": _fake(t, body["target_lang"], False)}
                            for t in body["text"]]
                    return self._send(200, {"translations": rows})
                return self._send(404, {"message": "not found"})

            def _send(self, code, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _fake(text: str, target: str, html: bool) -> str:
    """The stub's "translation": target code prefix; in HTML mode apostrophes come back as entities, as
    Google returns them."""
    out = f"{target}|{text}"
    return out.replace("'", "&#39;") if html else out


@pytest.fixture
def api():
    with StubApi() as stub:
        yield stub


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", GOOGLE_KEY)
    monkeypatch.setenv("DEEPL_AUTH_KEY", DEEPL_KEY)
    for name in ("GOOGLE_TRANSLATE_API_KEY", "GOOGLE_ACCESS_TOKEN", "DEEPL_API_KEY", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)


def _policy(attempts=4):
    sleeps: list[float] = []
    return RetryPolicy(attempts=attempts, base_delay=1.0, max_delay=8.0, sleep=sleeps.append, rng=random.Random(0)), sleeps


def _google(stub, attempts=4, **options):
    policy, sleeps = _policy(attempts)
    return GoogleTranslator("en", "pl", base_url=stub.url, retry_policy=policy, **options), sleeps


def _deepl(stub, attempts=4, **options):
    policy, sleeps = _policy(attempts)
    return DeepLTranslator("en", "pl", base_url=stub.url, retry_policy=policy, **options), sleeps


def test_registry_names_both_backends():
    assert TRANSLATORS.get("google") is GoogleTranslator
    assert TRANSLATORS.get("deepl") is DeepLTranslator


def test_google_translates_in_order_and_sends_the_key_only_in_the_header(api, keys):
    tr, _ = _google(api)
    segments = [f"sentence number {i}." for i in range(300)]
    assert tr.translate_batch(segments) == [f"pl|{s}" for s in segments]
    assert [len(r["body"]["q"]) for r in api.requests] == [128, 128, 44]
    first = api.requests[0]
    assert first["headers"]["X-goog-api-key"] == GOOGLE_KEY
    assert first["body"] == {"q": segments[:128], "source": "en", "target": "pl", "format": "text"}
    for req in api.requests:
        assert GOOGLE_KEY not in req["path"] + req["query"]
        assert GOOGLE_KEY.encode() not in req["raw"]


def test_google_packs_requests_within_the_character_budget(api, keys):
    tr, _ = _google(api)  # default budget: 5,000 code points per request (Google's recommendation)
    segments = [f"{i:04d}" + "x" * 1196 for i in range(12)]  # 1,200 characters each
    assert tr.translate_batch(segments) == [f"pl|{s}" for s in segments]
    sizes = [sum(len(q) for q in r["body"]["q"]) for r in api.requests]
    assert [len(r["body"]["q"]) for r in api.requests] == [4, 4, 4]
    assert max(sizes) <= 5_000
    long_one = "y" * 12_000  # over the budget but under the 30k hard limit: sent alone
    assert tr.translate_batch(["a b", long_one, "c d"]) == ["pl|a b", f"pl|{long_one}", "pl|c d"]
    assert [len(r["body"]["q"]) for r in api.requests[3:]] == [1, 1, 1]
    with pytest.raises(ApiError, match="segment 0 is 30001 units long"):
        tr.translate_batch(["z" * 30_001])


def test_google_protects_placeholders_with_notranslate_spans(api, keys):
    tr, _ = _google(api)
    assert GoogleTranslator.keeps_placeholders
    out = tr.translate_batch(["See ⟦0⟧ & <b>'this'</b> ⟦1⟧.", "plain"])
    assert out == ["pl|See ⟦0⟧ & <b>'this'</b> ⟦1⟧.", "pl|plain"]
    body = api.requests[0]["body"]
    assert body["format"] == "html"
    assert body["q"][0] == ('See <span translate="no">⟦0⟧</span> &amp; &lt;b&gt;\'this\'&lt;/b&gt; '
                            '<span translate="no">⟦1⟧</span>.')


def test_google_v3_uses_a_bearer_token_and_the_project_path(api, keys, monkeypatch):
    monkeypatch.setenv("GOOGLE_ACCESS_TOKEN", "ya29.token-secret")
    tr, _ = _google(api, api="v3", project="my-proj", model="nmt")
    assert tr.translate_batch(["one", "two ⟦0⟧"]) == ["pl|one", "pl|two ⟦0⟧"]
    req = api.requests[0]
    assert req["path"] == "/v3/projects/my-proj/locations/global:translateText"
    assert req["headers"]["Authorization"] == "Bearer ya29.token-secret"
    assert "X-goog-api-key" not in req["headers"]
    assert req["body"]["model"] == "projects/my-proj/locations/global/models/general/nmt"
    assert req["body"]["mimeType"] == "text/html"
    with pytest.raises(BeirxError, match="needs a project"):
        GoogleTranslator("en", "pl", api="v3")


def test_retry_after_is_honoured_then_the_request_succeeds(api, keys):
    tr, sleeps = _google(api)
    api.script.extend([("status", 429, {"Retry-After": "3"}, {"error": {"code": 429, "message": "slow down"}}),
                       ("status", 500, {}, {"error": {"code": 500, "message": "backend error"}})])
    assert tr.translate_batch(["a", "b"]) == ["pl|a", "pl|b"]
    assert len(api.requests) == 3
    assert sleeps[0] == 3.0  # the server's Retry-After, exactly
    assert 1.0 <= sleeps[1] <= 2.0  # second retry: d = 2 s, wait in [d/2, d]


def test_timeouts_and_dropped_connections_are_retried(api, keys, caplog):
    tr, sleeps = _deepl(api, timeout=0.3)
    api.script.extend([("sleep", 1.0), ("drop",)])
    assert tr.translate_batch(["hello", "world"]) == ["PL|hello", "PL|world"]
    assert len(api.requests) == 3 and len(sleeps) == 2
    assert "ReadTimeout" in caplog.text and "ConnectionError" in caplog.text
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0  # exponential, jittered


def test_google_per_minute_rate_limit_403_is_retried(api, keys):
    tr, sleeps = _google(api)
    rate = {"error": {"code": 403, "message": "User Rate Limit Exceeded",
                      "errors": [{"reason": "userRateLimitExceeded"}]}}
    api.script.append(("status", 403, {}, rate))
    assert tr.translate_batch(["x"]) == ["pl|x"]
    assert len(sleeps) == 1


def test_persistent_failure_raises_a_clear_error_after_all_attempts(api, keys):
    tr, sleeps = _google(api, attempts=3)
    api.script.extend([("status", 503, {}, {"error": {"code": 503, "message": "unavailable"}})] * 3)
    with pytest.raises(ApiError) as err:
        tr.translate_batch(["a"])
    message = str(err.value)
    assert "failed after 3 attempts" in message and "HTTP 503 (unavailable)" in message and "rerun" in message
    assert len(api.requests) == 3 and len(sleeps) == 2


@pytest.mark.parametrize("status, expected", [(403, "key was refused"), (456, "quota is used up"),
                                              (400, "not transient")])
def test_permanent_deepl_errors_are_not_retried(api, keys, status, expected):
    tr, sleeps = _deepl(api)
    api.script.append(("status", status, {}, {"message": "nope"}))
    with pytest.raises(ApiError, match=expected):
        tr.translate_batch(["a"])
    assert len(api.requests) == 1 and sleeps == []


def test_the_key_never_appears_in_describe_errors_or_logs(api, keys, caplog):
    caplog.set_level(logging.DEBUG)
    google, _ = _google(api, attempts=2)
    deepl, _ = _deepl(api, attempts=2)
    # A server that echoes the key back in its error message.
    api.script.extend([("status", 500, {}, {"error": {"message": f"bad key {GOOGLE_KEY}"}}),
                       ("status", 400, {}, {"error": {"message": f"bad key {GOOGLE_KEY}"}}),
                       ("status", 500, {}, {"message": f"bad key {DEEPL_KEY}"}), ("drop",)])
    with pytest.raises(ApiError) as g_err:
        google.translate_batch(["a"])
    with pytest.raises(ApiError) as d_err:
        deepl.translate_batch(["a"])
    assert "bad key ***" in str(g_err.value)
    assert deepl.translate_batch(["ok"]) == ["PL|ok"]
    everything = " ".join([json.dumps(google.describe()), json.dumps(deepl.describe()), str(g_err.value),
                           str(d_err.value), caplog.text, repr(google.__dict__.get("options"))])
    assert "HTTP 500 (bad key ***)" in caplog.text  # the retry was logged, redacted
    assert GOOGLE_KEY not in everything and DEEPL_KEY not in everything
    assert api.requests[-1]["headers"]["Authorization"] == f"DeepL-Auth-Key {DEEPL_KEY}"


def test_missing_key_names_the_variable_and_sends_nothing(api, monkeypatch):
    for name in ("GOOGLE_API_KEY", "GOOGLE_TRANSLATE_API_KEY", "GOOGLE_ACCESS_TOKEN", "DEEPL_AUTH_KEY", "DEEPL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    tr, _ = _deepl(api)
    assert tr.describe()["target_lang"] == "PL"  # describing (for --dry-run) needs no key
    with pytest.raises(ApiError, match="DEEPL_AUTH_KEY or DEEPL_API_KEY"):
        tr.translate_batch(["a"])
    assert api.requests == []


def test_deepl_batches_by_count_and_body_bytes(api, keys):
    tr, _ = _deepl(api)
    short = [f"text {i}" for i in range(120)]
    assert tr.translate_batch(short) == [f"PL|{s}" for s in short]
    assert [len(r["body"]["text"]) for r in api.requests] == [50, 50, 20]
    api.requests.clear()
    heavy = [f"{i:02d}" + "ż" * 6000 for i in range(30)]  # ~12 KB of UTF-8 each: the byte limit binds first
    assert tr.translate_batch(heavy) == [f"PL|{s}" for s in heavy]
    assert all(len(r["raw"]) <= 128 * 1024 for r in api.requests)
    assert [len(r["body"]["text"]) for r in api.requests] == [10, 10, 10]
    assert api.requests[0]["body"]["source_lang"] == "EN" and api.requests[0]["body"]["target_lang"] == "PL"


def test_deepl_protects_placeholders_with_ignored_xml_tags(api, keys):
    tr, _ = _deepl(api, formality="prefer_more")
    assert tr.translate_batch(["Call ⟦0⟧ <now> & later"]) == ["PL|Call ⟦0⟧ <now> & later"]
    body = api.requests[0]["body"]
    assert body["text"] == ["Call <x>⟦0⟧</x> &lt;now&gt; &amp; later"]
    assert body["tag_handling"] == "xml" and body["ignore_tags"] == ["x"] and body["formality"] == "prefer_more"


def test_deepl_picks_the_free_endpoint_for_free_keys_and_regional_targets(keys, monkeypatch):
    assert DeepLTranslator("en", "pl")._api_root() == "https://api-free.deepl.com"
    monkeypatch.setenv("DEEPL_AUTH_KEY", "pro-key")
    assert DeepLTranslator("en", "pl")._api_root() == "https://api.deepl.com"
    assert DeepLTranslator("pl", "en").describe()["target_lang"] == "EN-US"
    assert DeepLTranslator("en", "pt_BR").describe()["target_lang"] == "PT-BR"


def test_cost_estimates_use_the_list_prices():
    assert estimate(GoogleTranslator, 2_500_000)["estimated_cost_usd"] == 50.0
    assert DeepLTranslator.estimate_cost(1_000_000)["estimated_cost_usd"] == 25.0
    assert GoogleTranslator.cost_per_million_chars == 20.0 and DeepLTranslator.cost_per_million_chars == 25.0

    class Local(Translator):  # a local backend: no per-character price
        name = "local"

    assert estimate(Local, 10**6)["estimated_cost_usd"] is None
    # Google bills markup too: a placeholder segment costs its HTML form.
    assert GoogleTranslator.billable_characters(["abc", "x ⟦0⟧"]) == 3 + len('x <span translate="no">⟦0⟧</span>')
    assert DeepLTranslator.billable_characters(["abc", "x ⟦0⟧"]) == 3 + 5


def test_pack_requests_and_retry_after_parsing():
    assert pack_requests(["aa", "bb", "cc", "dd"], max_items=3, budget=5, cost=len) == [(0, 2), (2, 4)]
    assert pack_requests([], 3, 5, len) == []
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
