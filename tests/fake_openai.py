"""A fake OpenAI-compatible server for tests and benchmarks: 127.0.0.1, real HTTP, the real ``openai`` client.

It answers ``POST /v1/chat/completions`` and ``POST /v1/completions`` like vLLM or llama.cpp would, by
*translating* the source text it finds in the prompt (deterministically: real Apertium, or a word map), and
lists its model at ``GET /v1/models``. The OpenAI Batch API is there too (``POST /v1/files``, ``POST
/v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``), finishing a batch after a few polls;
``server.batch_faults`` makes its endpoints answer chosen statuses first (``{"upload": [429, 503]}``) and
``server.batch_requests`` counts their requests.

Faults are injected on chosen requests (``server.faults``: a function of the :class:`Call` returning a
:data:`FAULTS` name or None): HTTP 429 with ``Retry-After``/``retry-after-ms``, HTTP 500, a hang past the
client's timeout, HTTP 400 (context too long; only when named), ``finish_reason: "length"``, a leaked
preamble, an English echo, an answer instead of a translation, an empty string, a refusal, a dropped number.
Helpers build the usual plans: :func:`on_calls`
(by request number), :func:`on_source` (by source text, per attempt) and :func:`fault_mix` (a seeded
fraction of requests, decided by source text and attempt, so the plan does not depend on arrival order).

Other engineers' tests (an LLM judge, a listwise reranker) pass ``responder``: a function of the
:class:`Call` returning the text to answer (or ``(text, finish_reason)``), instead of a translation; and
``next_tokens`` (a function of the :class:`Call` returning ``{token: logprob}``) to answer ``logprobs`` /
``top_logprobs`` (the pointwise reranker's label probabilities).

Usage::

    with FakeOpenAI(translate=apertium("en", "es"), latency=0.05) as server:
        client = openai.OpenAI(base_url=server.url, api_key="x")
        server.faults = on_calls({1: "429", 3: "preamble"})
        ...
        server.calls   # every chat/completions request received: Call(n, kind, source, attempt, fault, body)

As a process (benchmarks, manual runs): ``python tests/fake_openai.py --port 8000 --translator wordmap
--latency 0.05 [--fault-rate 0.05 --seed 0]``; it prints its base URL and serves until killed.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import hashlib
import json
import math
import re
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FAULTS = ("429", "500", "hang", "length", "preamble", "echo", "answer", "empty", "refusal", "drop_number")
#: Injected only when asked for by name: a request the server refuses (its context is too long).
REFUSED = "400"
TRANSPORT_FAULTS = ("429", "500", "hang")
#: Faults injected only when named: the connection dropped mid-answer, a body dripping a byte a second.
BROKEN = ("drop", "drip")
#: 200 answers that are not an OpenAI completion (a server that is something else, or broken), only when named.
MALFORMED = ("not_json", "content_number", "content_list", "message_string", "choices_dict", "body_array")

PREAMBLE = "Sure! Here is the translation:\n\n"
REFUSAL = "I'm sorry, but I can't help with that request."
ANSWER = ("Sí. Los estudios lo confirman en la mayoría de los casos, porque los mecanismos descritos en la literatura "
          "explican este efecto de forma consistente y repetida en poblaciones muy diferentes.")

_TAGGED = re.compile(r"<text>\n?(.*?)\n?</text>", re.DOTALL)
_LABELLED = re.compile(r"(?s).*\n[^\n:]{1,40}: (.*?)\n[^\n:]{1,40}:\s*$")
_PLACEHOLDER = re.compile(r"⟦\d+⟧")
_DIGITS = re.compile(r"\d+")


@dataclass
class Call:
    """One chat/completions request as the server saw it."""

    n: int  # 1-based order of arrival
    kind: str  # "chat" or "completions"
    source: str  # the text found in the prompt (see extract_source)
    attempt: int  # 1 + how many earlier calls carried the same source
    body: dict[str, Any]
    headers: dict[str, str]
    fault: str | None = None
    started: float = 0.0  # time.monotonic() when the request arrived
    ended: float | None = None  # when the server stopped working on it (answered, or saw the client leave)


def extract_source(kind: str, body: dict[str, Any]) -> str:
    """The text to translate: inside the last ``<text>...</text>``, else (a few-shot completion) the last
    ``Label: text`` line before a final ``Label:``; else the last user message or the whole prompt."""
    prompt = body.get("prompt", "") if kind == "completions" else next(
        (m.get("content", "") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    if isinstance(prompt, list):
        prompt = prompt[0] if prompt else ""
    tagged = _TAGGED.findall(prompt)
    if tagged:
        return tagged[-1]
    labelled = _LABELLED.match(prompt)
    return labelled.group(1) if labelled else prompt


# -- translators ---------------------------------------------------------------------------------------------
WORDS_ES = {
    "the": "el", "a": "un", "cats": "los gatos", "cat": "el gato", "dogs": "los perros", "dog": "el perro",
    "are": "son", "is": "es", "small": "pequeños", "animals": "animales", "hunt": "cazan", "mice": "ratones",
    "and": "y", "good": "buenos", "loyal": "leales", "companions": "compañeros", "whales": "las ballenas",
    "largest": "más grandes", "in": "en", "ocean": "océano", "birds": "los pájaros", "can": "pueden",
    "fly": "volar", "sing": "cantar", "which": "qué", "at": "por", "night": "la noche", "them": "los",
    "of": "de", "with": "con", "patients": "pacientes", "study": "estudio", "reduce": "reducen",
    "vaccines": "las vacunas", "disease": "enfermedad", "severe": "grave", "risk": "riesgo", "children": "niños",
    "does": "acaso", "do": "acaso", "what": "qué", "how": "cómo", "many": "muchos", "years": "años",
    "were": "fueron", "treated": "tratados", "for": "durante", "days": "días", "blood": "sangre",
    "pressure": "presión", "lowers": "reduce", "exercise": "el ejercicio", "regular": "regular",
    "domestic": "domésticos", "rodents": "roedores", "them.": "los.", "mg": "mg", "to": "a", "this": "este",
}


def word_map(words: dict[str, str] | None = None) -> Callable[[str], str]:
    """A deterministic 'translation' word by word (punctuation, numbers and placeholders kept; unknown words
    copied): cheap, for benchmarks and tests whose text the map covers."""
    table = words or WORDS_ES
    token = re.compile(r"⟦\d+⟧|\w+|[^\w\s]+|\s+")

    def translate(text: str) -> str:
        out = []
        for piece in token.findall(text):
            low = piece.lower()
            out.append(table.get(low, piece) if piece[:1].isalpha() else piece)
        result = "".join(out)
        return result[:1].upper() + result[1:] if text[:1].isupper() else result

    return translate


class apertium:  # noqa: N801 - used like a function: apertium("en", "es")(text)
    """Real rule-based MT through beirx's Apertium backend, memoised by text, line by line (as an LLM keeps a
    unit's lines; Apertium alone would run them together).

    Each text is translated in one ``apertium`` process (~0.2 s CPU), so the answer is a pure function of
    the text. :meth:`warm` translates many texts in one process beforehand (tests whose server must answer
    at once). ``batch_window`` (seconds) instead collects the lines that arrive within it and translates them
    in one process: far cheaper for a whole dataset, but Apertium's tagger then lets neighbours change ~2%
    of sentences, so answers depend on arrival order.
    """

    def __init__(self, src: str = "en", tgt: str = "es", batch_window: float | None = None):
        from beirx.translate.backends.apertium import ApertiumTranslator

        self.translator = ApertiumTranslator(src, tgt)
        self.cache: dict[str, str] = {}
        self.lock = threading.Lock()
        self.batcher = _MicroBatcher(self.translator.translate_batch, batch_window, self.cache) \
            if batch_window is not None else None

    def __call__(self, text: str) -> str:
        if self.batcher is not None:
            return "\n".join(self.batcher.translate(line) for line in text.split("\n"))
        with self.lock:
            if text in self.cache:
                return self.cache[text]
        translation = self._lines([text])[0]
        with self.lock:
            return self.cache.setdefault(text, translation)

    def warm(self, texts: list[str]) -> None:
        """Translate ``texts`` now, in one process, and remember the answers."""
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            translations = self._lines(todo)
            with self.lock:
                for text, translation in zip(todo, translations):
                    self.cache.setdefault(text, translation)

    def _lines(self, texts: list[str]) -> list[str]:
        lines = [line for text in texts for line in text.split("\n") if line.strip()]
        out = iter(self.translator.translate_batch(lines) if lines else [])
        return ["\n".join(next(out) if line.strip() else line for line in text.split("\n")) for text in texts]


class _MicroBatcher:
    """Collects texts for ``window`` seconds and translates them in one call of ``translate_batch``."""

    def __init__(self, translate_batch: Callable[[list[str]], list[str]], window: float, cache: dict[str, str]):
        self.translate_batch, self.window, self.cache = translate_batch, window, cache
        self.pending: dict[str, threading.Event] = {}
        self.lock = threading.Lock()
        self.wakeup = threading.Event()
        threading.Thread(target=self._run, daemon=True, name="fake-openai-batcher").start()

    def translate(self, text: str) -> str:
        with self.lock:
            if text in self.cache:
                return self.cache[text]
            done = self.pending.setdefault(text, threading.Event())
            self.wakeup.set()
        done.wait()
        return self.cache[text]

    def _run(self) -> None:
        while True:
            self.wakeup.wait()
            time.sleep(self.window)
            with self.lock:
                batch = dict(self.pending)
                self.pending.clear()
                self.wakeup.clear()
            texts = list(batch)
            for start in range(0, len(texts), 64):
                chunk = texts[start:start + 64]
                for text, out in zip(chunk, self.translate_batch(chunk)):
                    self.cache[text] = out
                    batch[text].set()


# -- fault plans ------------------------------------------------------------------------------------------------
def on_calls(plan: dict[int, str]) -> Callable[[Call], str | None]:
    """Fault ``plan[n]`` on the n-th request (1-based, order of arrival)."""
    return lambda call: plan.get(call.n)


def on_source(plan: dict[str, list[str | None]]) -> Callable[[Call], str | None]:
    """For a request whose source is a key: the fault of its attempt (``["500", None]``: the first
    attempt fails, the second succeeds); a source containing a key also matches."""
    def pick(call: Call) -> str | None:
        for text, faults in plan.items():
            if text == call.source or text in call.source:
                return faults[call.attempt - 1] if call.attempt <= len(faults) else None
        return None
    return pick


def fault_mix(rate: float, kinds: tuple[str, ...] = FAULTS, seed: int = 0,
              retried_rate: float | None = None) -> Callable[[Call], str | None]:
    """A fault on ``rate`` of first attempts (and ``retried_rate``, default the same, of later ones), its
    kind cycling through ``kinds``, both decided by a hash of (seed, source, attempt)."""
    later = rate if retried_rate is None else retried_rate

    def pick(call: Call) -> str | None:
        digest = hashlib.sha256(f"{seed}\0{call.attempt}\0{call.source}".encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / 2 ** 64
        if draw >= (rate if call.attempt == 1 else later):
            return None
        return kinds[int.from_bytes(digest[8:12], "big") % len(kinds)]
    return pick


def approx_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


# -- the server -------------------------------------------------------------------------------------------------
class _Listener(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # clients at --concurrency 16+ connect at once; the default backlog of 5 resets some

    def handle_error(self, request, client_address):
        """A client that left mid-answer (a timed-out attempt closes its connection) is expected, not an error:
        socketserver would print its traceback to stderr, where the tests look for tracebacks of beirx's own."""
        if isinstance(sys.exc_info()[1], OSError):  # broken pipe, reset, aborted: the socket is gone
            return
        super().handle_error(request, client_address)


@dataclass
class FakeOpenAI:
    """See the module docstring. ``url`` is the base URL (``http://127.0.0.1:PORT/v1``) once started."""

    translate: Callable[[str], str] = field(default_factory=word_map)
    latency: float = 0.0
    faults: Callable[[Call], str | None] | None = None
    responder: Callable[[Call], str | tuple[str, str]] | None = None
    # {token: logprob} of the first answer token, sent (best first, ``top_logprobs`` of them) when a request asks
    # for ``logprobs``; the answer is then the best token. None: ``"logprobs": null``, as a server without them
    next_tokens: Callable[[Call], dict[str, float]] | None = None
    model: str = "fake-llm"
    port: int = 0
    hang_seconds: float = 5.0
    stream_delay: float = 0.0  # seconds between the chunks of a streamed answer
    retry_after_ms: int = 20
    batch_polls: int = 2  # GET /v1/batches/{id} answers "in_progress" this many times, then "completed"
    require_key: str | None = None  # when set, requests must carry "Authorization: Bearer <key>"
    down: bool = False  # drop every connection (a crashed server; stop() also sets it)
    batch_api: bool = True  # False: /v1/files and /v1/batches answer 404 (a server without the Batch API)
    batch_outcome: str = "completed"  # or "failed", "expired", "cancelled" (then without an output file)
    # statuses the Batch API answers, in order, before answering for real: by endpoint ("upload" POST /v1/files,
    # "create" POST /v1/batches, "poll" GET /v1/batches/{id}, "content" GET /v1/files/{id}/content); a 429 says
    # Retry-After (and retry-after-ms) as the live path's does
    batch_faults: dict[str, list[int]] = field(default_factory=dict)
    batch_requests: Counter[str] = field(default_factory=Counter)  # requests by endpoint, faulty ones included
    echo_key: bool = False  # answer with a header echoing the request's Authorization (as some proxies do)
    calls: list[Call] = field(default_factory=list)
    seen_headers: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self):
        self._lock = threading.Lock()
        self._attempts: Counter[str] = Counter()
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, dict[str, Any]] = {}
        self._server: ThreadingHTTPServer | None = None
        self.in_flight = 0
        self.max_in_flight = 0

    # lifecycle
    def start(self) -> FakeOpenAI:
        self.down = False
        self._server = _Listener(("127.0.0.1", self.port), _handler(self))
        threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-openai").start()
        return self

    def stop(self) -> None:
        self.down = True  # kept-alive connections outlive the listening socket: they are dropped too
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def fault_counts(self) -> dict[str, int]:
        return dict(Counter(c.fault for c in self.calls if c.fault))

    # one chat/completions request -> (status, headers, payload) or None for a hang
    def answer(self, kind: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict, dict]:
        source = extract_source(kind, body)
        with self._lock:
            self._attempts[source] += 1
            call = Call(len(self.calls) + 1, kind, source, self._attempts[source], body, headers,
                        started=time.monotonic())
            self.calls.append(call)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            call.fault = self.faults(call) if self.faults else None
            if self.latency:
                time.sleep(self.latency)
            if call.fault == "429":
                return 429, {"Retry-After": "1", "retry-after-ms": str(self.retry_after_ms)}, _error(
                    "Rate limit reached, retry later", "rate_limit_exceeded")
            if call.fault == "400":
                return 400, {}, _error("This model's maximum context length is 4096 tokens", "context_length_exceeded")
            if call.fault == "500":
                return 500, {}, _error("The server had an error while processing your request", "server_error")
            if call.fault == "hang" and not body.get("stream"):
                time.sleep(self.hang_seconds)
            if call.fault in MALFORMED:
                return 200, {}, _malformed(call.fault)
            text, finish = self._text(call)
            completion = self._completion(kind, body, text, finish)
            if body.get("logprobs") and self.next_tokens is not None:
                self._add_logprobs(kind, completion, self.next_tokens(call), body)
            return 200, {}, completion
        finally:
            with self._lock:
                self.in_flight -= 1

    def _text(self, call: Call) -> tuple[str, str]:
        if self.responder is not None:
            out = self.responder(call)
            return out if isinstance(out, tuple) else (out, "stop")
        translation = self.translate(call.source)
        fault = call.fault
        if fault == "length":
            words = translation.split(" ")
            return " ".join(words[: max(1, len(words) // 2)]), "length"
        if fault == "preamble":
            return PREAMBLE + translation, "stop"
        if fault == "echo":
            return call.source, "stop"
        if fault == "answer":
            return ANSWER, "stop"
        if fault == "empty":
            return "", "stop"
        if fault == "refusal":
            return REFUSAL, "stop"
        if fault == "drop_number":
            dropped = _PLACEHOLDER.sub("", translation, count=1) if _PLACEHOLDER.search(translation) \
                else _DIGITS.sub("", translation, count=1)
            return dropped, "stop"
        return translation, "stop"

    def _completion(self, kind: str, body: dict[str, Any], text: str, finish: str) -> dict[str, Any]:
        prompt = body.get("prompt", "") if kind == "completions" else "\n".join(
            m.get("content", "") for m in body.get("messages", []))
        usage = {"prompt_tokens": approx_tokens(str(prompt)), "completion_tokens": approx_tokens(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        common = {"id": f"cmpl-{len(self.calls)}", "created": int(time.time()), "model": body.get("model", self.model),
                  "usage": usage}
        if kind == "completions":  # base models continue after "Label:" with a space
            return {**common, "object": "text_completion",
                    "choices": [{"index": 0, "text": " " + text if text else "", "finish_reason": finish,
                                 "logprobs": None}]}
        return {**common, "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                             "logprobs": None}]}

    @staticmethod
    def _add_logprobs(kind: str, completion: dict[str, Any], tokens: dict[str, float], body: dict[str, Any]) -> None:
        """The first token's alternatives in OpenAI's shape (chat: ``logprobs.content``; completions: the
        ``top_logprobs`` list of dicts), the best one as the one-token answer."""
        ranked = sorted(tokens.items(), key=lambda item: -item[1])
        top = ranked[:int(body.get("top_logprobs") or 0) if kind == "chat" else int(body["logprobs"])]
        choice = completion["choices"][0]
        if kind == "chat":
            choice["message"]["content"] = ranked[0][0]
            choice["logprobs"] = {"content": [{"token": ranked[0][0], "logprob": ranked[0][1], "bytes": None,
                                               "top_logprobs": [{"token": t, "logprob": p, "bytes": None}
                                                                for t, p in top]}], "refusal": None}
        else:
            choice["text"] = ranked[0][0]
            choice["logprobs"] = {"tokens": [ranked[0][0]], "token_logprobs": [ranked[0][1]],
                                  "top_logprobs": [dict(top)], "text_offset": [0]}

    # the Batch API
    def batch_fault(self, endpoint: str) -> int | None:
        """Count a request to ``endpoint`` and return the status to answer it with instead, if one is due."""
        with self._lock:
            self.batch_requests[endpoint] += 1
            due = self.batch_faults.get(endpoint)
            return due.pop(0) if due else None

    def upload(self, raw: bytes, content_type: str) -> dict[str, Any]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
        fields = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
        data = fields["file"].get_payload(decode=True)
        with self._lock:
            file_id = f"file-{len(self._files) + 1}"
            self._files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": fields["file"].get_filename() or "input.jsonl", "purpose": "batch", "status": "processed"}

    def create_batch(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body.get("input_file_id") not in self._files:
            return 404, _error(f"No such File object: {body.get('input_file_id')}", "not_found")
        with self._lock:
            batch_id = f"batch_{len(self._batches) + 1}"
            self._batches[batch_id] = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                                       "input_file_id": body["input_file_id"], "completion_window": "24h",
                                       "status": "validating", "created_at": int(time.time()), "polls": 0}
        return 200, self._public(self._batches[batch_id])

    def poll_batch(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        batch = self._batches.get(batch_id)
        if batch is None:
            return 404, _error(f"No such Batch: {batch_id}", "not_found")
        with self._lock:
            batch["polls"] += 1
            due = batch["status"] == "in_progress" and batch["polls"] > self.batch_polls
            if batch["status"] == "validating":
                batch["status"] = "in_progress"
        if due and self.batch_outcome != "completed":
            with self._lock:
                batch.update(status=self.batch_outcome, errors={"data": [{"message": f"batch {self.batch_outcome}"}]})
        elif due:
            self._run_batch(batch)
        return 200, self._public(batch)

    def _run_batch(self, batch: dict[str, Any]) -> None:
        kind = "chat" if batch["endpoint"].endswith("chat/completions") else "completions"
        out, errors = [], []
        lines = [json.loads(line) for line in self._files[batch["input_file_id"]].decode().splitlines() if line]
        for line in lines:
            status, _, payload = self.answer(kind, line["body"], {})
            row = {"id": f"batch_req_{len(out) + len(errors)}", "custom_id": line["custom_id"],
                   "response": {"status_code": status, "request_id": "req", "body": payload}, "error": None}
            (out if status == 200 else errors).append(row)
        with self._lock:
            for name, rows in (("output_file_id", out), ("error_file_id", errors)):
                if rows:
                    file_id = f"file-{len(self._files) + 1}"
                    self._files[file_id] = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
                    batch[name] = file_id
            batch.update(status="completed", completed_at=int(time.time()),
                         request_counts={"total": len(lines), "completed": len(out), "failed": len(errors)})

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if k != "polls"}


def _malformed(fault: str) -> Any:
    """The body of a 200 answer that is not a completion."""
    if fault == "not_json":
        return b"<html><body>502 Bad Gateway</body></html>"
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hola"}}
    if fault == "content_number":
        choice["message"]["content"] = 42
    elif fault == "content_list":
        choice["message"]["content"] = ["Hola"]
    elif fault == "message_string":
        choice["message"] = "Hola"
    elif fault == "body_array":
        return [choice]
    return {"id": "x", "object": "chat.completion", "choices": {"0": choice} if fault == "choices_dict" else [choice]}


def stream_chunks(kind: str, payload: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A completion as the chunks of a streamed answer: one per word (as a server sends one per token), the
    finish reason on the last, the usage in a final chunk of its own when asked for (``stream_options``)."""
    choice = payload["choices"][0]
    text = choice["message"]["content"] if kind == "chat" else choice["text"]
    words = re.findall(r"\S*\s*", text)[:-1] or [""]
    chunks = []
    for i, word in enumerate(words):
        last = i == len(words) - 1
        delta = {"delta": {"content": word}} if kind == "chat" else {"text": word}
        chunks.append({"id": payload["id"], "object": "chat.completion.chunk" if kind == "chat" else "text_completion",
                       "choices": [{"index": 0, **delta, "finish_reason": choice["finish_reason"] if last else None,
                                    "logprobs": choice.get("logprobs") if i == 0 else None}]})
    if include_usage:
        chunks.append({"id": payload["id"], "choices": [], "usage": payload["usage"]})
    return chunks


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "param": None, "code": code}}


def _handler(server: FakeOpenAI):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None, raw: bytes | None = None):
            data = raw if raw is not None else json.dumps(payload, ensure_ascii=False).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if raw is None else "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                for key, value in {**self._echo(), **(headers or {})}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a hang past its timeout)
                self.close_connection = True

        def _batch_fault(self, endpoint: str) -> bool:
            """Answer with the fault due at this Batch API ``endpoint``, if any (True when one was sent)."""
            status = server.batch_fault(endpoint)
            if status is None:
                return False
            headers = {"Retry-After": "1", "retry-after-ms": str(server.retry_after_ms)} if status == 429 else {}
            self._send(status, _error(f"injected HTTP {status}", "rate_limit_exceeded" if status == 429 else
                                      "server_error"), headers)
            return True

        def _echo(self) -> dict[str, str]:
            return {"X-Echo-Authorization": self.headers.get("Authorization", "")} if server.echo_key else {}

        def _authorised(self) -> bool:
            headers = {k.lower(): v for k, v in self.headers.items()}
            with server._lock:
                server.seen_headers.append(headers)
            if server.require_key and headers.get("authorization") != f"Bearer {server.require_key}":
                self._send(401, _error("Incorrect API key provided", "invalid_api_key"))
                return False
            return True

        def do_GET(self):
            if not self._authorised():
                return
            path = self.path.split("?")[0]
            if path == "/v1/models":
                return self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model",
                                                                    "owned_by": "fake"}]})
            match = re.fullmatch(r"/v1/batches/([\w-]+)", path)
            if match:
                return self._batch_fault("poll") or self._send(*server.poll_batch(match.group(1)))
            match = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
            if match and match.group(1) in server._files:
                return self._batch_fault("content") or self._send(200, None, raw=server._files[match.group(1)])
            self._send(404, _error(f"unknown path {path}", "not_found"))

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if server.down:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if not self._authorised():
                return
            path = self.path.split("?")[0]
            if not server.batch_api and path in ("/v1/files", "/v1/batches"):
                return self._send(404, {"detail": "Not Found"})
            if path == "/v1/files":
                return self._batch_fault("upload") or self._send(200, server.upload(raw, self.headers.get("Content-Type",
                                                                                                        "")))
            body = json.loads(raw or b"{}")
            if path == "/v1/batches":
                return self._batch_fault("create") or self._send(*server.create_batch(body))
            kind = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}.get(path)
            if kind is None:
                return self._send(404, _error(f"unknown path {path}", "not_found"))
            if not body.get("model"):
                return self._send(400, _error("you must provide a model parameter", "invalid_request_error"))
            status, headers, payload = server.answer(kind, body, dict(self.headers))
            call = server.calls[-1]
            try:
                if call.fault in BROKEN:
                    return self._broken(call.fault, payload)
                if status == 200 and body.get("stream") and call.fault not in MALFORMED:
                    return self._stream(call, kind, payload, bool((body.get("stream_options") or {}).get(
                        "include_usage")))
                self._send(status, payload, headers, raw=payload if isinstance(payload, bytes) else None)
            finally:
                call.ended = time.monotonic()

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _stream(self, call: Call, kind: str, payload: dict[str, Any], include_usage: bool) -> None:
            """Server-sent events, chunked: a hang pings (``: ping``, as llama.cpp's server does) until the
            client leaves or ``hang_seconds`` pass; then a chunk per word every ``stream_delay`` seconds."""
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                for key, value in self._echo().items():
                    self.send_header(key, value)
                self.end_headers()
                if call.fault == "hang":
                    until = time.monotonic() + server.hang_seconds
                    while time.monotonic() < until:
                        self._chunk(b": ping\n\n")
                        time.sleep(0.05)
                for chunk in stream_chunks(kind, payload, include_usage):
                    self._chunk(b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n")
                    if server.stream_delay:
                        time.sleep(server.stream_delay)
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")
            except (BrokenPipeError, ConnectionResetError):  # the client left: stop generating, as llama.cpp does
                self.close_connection = True

        def _broken(self, fault: str, payload: dict[str, Any]) -> None:
            """``drop``: half of the answer, then the connection is closed; ``drip``: a byte a second."""
            data = json.dumps(payload).encode()
            self.close_connection = True
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if fault == "drop":
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(1.0)
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--translator", choices=("wordmap", "apertium"), default="wordmap")
    parser.add_argument("--apertium-batch-window", type=float, default=None,
                        help="seconds to collect texts into one Apertium call (faster, order-dependent)")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--drop-after", type=int, metavar="N", help="cut every answer after the first N (a server "
                        "that drops connections mid-answer)")
    parser.add_argument("--hang-seconds", type=float, default=5.0)
    parser.add_argument("--model", default="fake-llm")
    parser.add_argument("--stats", type=Path, help="write the fault counts here (JSON) every second")
    parser.add_argument("--warm", type=Path, action="append", default=[],
                        help="a queries.jsonl whose texts Apertium translates before serving (answers at once)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    translate = apertium(batch_window=args.apertium_batch_window) if args.translator == "apertium" else word_map()
    for path in args.warm:
        translate.warm([json.loads(line)["text"] for line in path.open(encoding="utf-8")])
    faults = fault_mix(args.fault_rate, tuple(args.faults.split(",")), args.seed) if args.fault_rate else None
    if args.drop_after is not None:
        faults = lambda call: "drop" if call.n > args.drop_after else None  # noqa: E731
    server = FakeOpenAI(translate=translate, latency=args.latency, faults=faults, model=args.model, port=args.port,
                        hang_seconds=args.hang_seconds).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(1)
            if args.stats:
                args.stats.write_text(json.dumps({"requests": len(server.calls), "faults": server.fault_counts(),
                                                  "max_in_flight": server.max_in_flight}))
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
