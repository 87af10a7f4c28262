"""The OpenAI Batch API (files + batches): half-price, asynchronous, completed within 24 hours.

A batch is a JSONL file of requests, each ``{"custom_id", "method": "POST", "url", "body"}``
(:meth:`~beirx.models.llm.calls.Request.body`), uploaded with purpose ``batch``; the batch is polled until
``completed`` (or ``failed``/``expired``/``cancelled``) and its output (and error) files hold one line per
request: ``{"custom_id", "response": {"status_code", "body"}, "error"}``. These calls run on the client's
loop and connection pool, retried as the live requests are (429 and 5xx answers, timeouts and dropped
connections, waiting what ``Retry-After`` says: :meth:`~beirx.models.llm.client.LLMClient.retrying`); the caller
keeps the ids so a killed run finds its batch again.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from typing import Any

from beirx.errors import require
from beirx.models.llm.calls import PATHS, BadAnswer, Reply, Request
from beirx.models.llm.client import LLMClient, LLMError, LLMRequestError, TransportError

DONE = ("completed", "failed", "expired", "cancelled")


class BatchAPI:
    def __init__(self, client: LLMClient):
        self.client = client

    def jsonl(self, requests: Iterable[tuple[str, Request]]) -> bytes:
        """The batch input file for ``(custom_id, request)`` pairs."""
        model = self.client.endpoint.model
        return "".join(json.dumps({"custom_id": cid, "method": "POST", "url": PATHS[r.kind], "body": r.body(model)},
                                  ensure_ascii=False) + "\n" for cid, r in requests).encode("utf-8")

    def upload(self, data: bytes, name: str = "beirx-batch.jsonl") -> str:
        return self._run(lambda o: o.files.create(file=(name, io.BytesIO(data)), purpose="batch")).id

    def create(self, file_id: str, kind: str) -> str:
        return self._run(lambda o: o.batches.create(input_file_id=file_id, endpoint=PATHS[kind],
                                                    completion_window="24h")).id

    def retrieve(self, batch_id: str) -> dict[str, Any]:
        return self._run(lambda o: o.batches.retrieve(batch_id)).model_dump()

    def results(self, batch: dict[str, Any], kind: str) -> dict[str, Reply | LLMError]:
        """``{custom_id: Reply}`` of a finished batch; a failed request's error instead: an
        :class:`LLMRequestError` when the server refused it (4xx), a :class:`TransportError` when it got no
        answer (5xx, 429, a malformed line), which the caller leaves to a later batch."""
        out: dict[str, Reply | LLMError] = {}
        for key in ("output_file_id", "error_file_id"):
            if not batch.get(key):
                continue
            content = self._run(lambda o, f=batch[key]: o.files.content(f))
            for line in content.content.decode("utf-8").splitlines():
                if not line.strip():
                    continue
                row = json.loads(line)
                response = row.get("response") or {}
                if response.get("status_code") == 200:
                    try:
                        out[row["custom_id"]] = Reply.from_body(kind, response.get("body") or {})
                    except BadAnswer as exc:
                        out[row["custom_id"]] = TransportError(f"malformed answer: {exc}")
                        continue
                    self.client.meter.settle(0.0, out[row["custom_id"]].usage)
                else:
                    error = row.get("error") or (response.get("body") or {}).get("error") or {}
                    status = response.get("status_code")
                    message = f"HTTP {status}: {error.get('message', error) if isinstance(error, dict) else error}"
                    out[row["custom_id"]] = LLMRequestError(message, status) \
                        if isinstance(status, int) and 400 <= status < 500 and status not in (408, 429) \
                        else TransportError(message)
        return out

    def _run(self, call):
        """``call(openai.AsyncOpenAI)``'s result, with the live path's retries (:meth:`LLMClient.retrying`)."""
        require("openai", "llm", "the OpenAI Batch API")
        openai_client = self.client.openai_client()
        return self.client.schedule(self.client.retrying(lambda attempt: call(openai_client), self._refused)).result()

    def _refused(self, exc, last: str) -> LLMRequestError:
        """A status that is not worth retrying (a 404 from a server without the Batch API, a 400 ...)."""
        where = self.client.where()
        if exc.status_code in (404, 405, 501):
            return LLMRequestError(f"{where} has no Batch API (HTTP {exc.status_code} from {exc.request.url.path}): "
                                   "run without --batch", exc.status_code)
        return LLMRequestError(f"{where}: Batch API request failed with {last}", exc.status_code)
