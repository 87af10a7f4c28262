"""Hardening battery, class 13: offline Hub calls and other libraries' log noise.

Every Hugging Face Hub call, whatever exception family the installed huggingface_hub raises (httpx2 today,
requests before, urllib3, the standard library's sockets, its own offline errors), ends in one message saying
what to pass instead, the offline hint, and exit code 2. The default quality encoder's failure offline is one
line naming ``--quality-encoder``/``--encoder``. Libraries' warnings and tracebacks (the Elasticsearch
transport's retries) stay out of a normal run's output; ``-v`` shows them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest

from beirx.cli import main
from beirx.network import HUB_OFFLINE_HINT, is_network_error, reason
from conftest import REPO, write_beir
from hardening_helpers import CORPUS, QRELS, QUERIES, closed_port
from extras import needs

hub = needs("huggingface_hub", "hub")


@pytest.fixture
def ds(tmp_path):
    return write_beir(tmp_path / "tiny", CORPUS, QUERIES, QRELS)


def _httpx2(cls_name: str, message: str):
    httpx2 = needs("httpx2", "hub")
    return getattr(httpx2, cls_name)(message)


def _wrapped_local_entry():
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        try:
            raise _httpx2("ConnectError", "[Errno -2] Name or service not known")
        except Exception as inner:
            raise LocalEntryNotFoundError("An error happened while trying to locate the files on the Hub") from inner
    except LocalEntryNotFoundError as exc:
        return exc


def _requests_error():
    import requests
    import urllib3

    cause = urllib3.exceptions.NameResolutionError("huggingface.co", None, socket.gaierror(-2, "Name or service not known"))
    return requests.ConnectionError(urllib3.exceptions.MaxRetryError(None, "/api", cause))


FAMILIES = {
    "httpx2 ConnectError": (lambda: _httpx2("ConnectError", "[Errno -2] Name or service not known"), "name not resolved"),
    "httpx2 ConnectTimeout": (lambda: _httpx2("ConnectTimeout", "timed out"), "timed out"),
    "requests/urllib3": (_requests_error, "name not resolved"),
    "socket.gaierror": (lambda: socket.gaierror(-2, "Name or service not known"), "name not resolved"),
    "ConnectionRefusedError": (lambda: ConnectionRefusedError(111, "Connection refused"), "connection refused"),
    "OfflineModeIsEnabled": (lambda: hub.errors.OfflineModeIsEnabled("offline mode is enabled"),
                             "offline mode: HF_HUB_OFFLINE=1"),
    "LocalEntryNotFoundError around httpx2": (_wrapped_local_entry, "name not resolved"),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_exception_family_of_a_hub_call_ends_in_the_offline_hint(ds, tmp_path, monkeypatch, capsys, family):
    needs("mteb", "mteb")  # through beirx mteb task
    make, why = FAMILIES[family]

    def dataset_info(self, repo_id, **kw):
        raise make()

    assert is_network_error(make()) and reason(make()) == why
    monkeypatch.setattr(hub.HfApi, "dataset_info", dataset_info)
    code = main(["mteb", "task", str(ds), "--repo", "org/name", "--export-dir", str(tmp_path / "x"),
                 "--output", str(tmp_path / "task.py")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert (f"error: cannot look up the revision of org/name: it is not in the local Hugging Face cache and the Hub "
            f"cannot be reached ({why}); pass --revision SHA") in err
    assert (HUB_OFFLINE_HINT in err) == ("HF_HUB_OFFLINE" not in why) and not (tmp_path / "task.py").exists()


def test_the_installed_hub_client_offline_for_real(ds, tmp_path, monkeypatch, capsys):
    needs("mteb", "mteb")  # through beirx mteb task
    """No mock: huggingface_hub's own client against a closed port raises whatever it raises today."""
    monkeypatch.setattr(hub.constants, "HF_HUB_OFFLINE", False)
    code = main(["mteb", "task", str(ds), "--repo", "org/name", "--endpoint", f"http://127.0.0.1:{closed_port()}",
                 "--export-dir", str(tmp_path / "x"), "--output", str(tmp_path / "task.py")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "(connection refused); pass --revision SHA" in err, err


def test_an_unwrapped_network_error_still_gets_the_hint(ds, tmp_path, monkeypatch, capsys):
    """The error boundary recognises a network failure of any library, even from a call beirx did not wrap."""
    import beirx.data.resolve

    def unreachable(*a, **kw):
        raise _httpx2("ConnectError", "[Errno 111] Connection refused")

    monkeypatch.setattr(beirx.data.resolve, "resolve_dataset", unreachable)
    assert main(["eval", "--dataset", str(ds), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "network error (connection refused" in err and "--dataset DIR" in err


def test_a_hub_model_offline_names_what_to_pass(ds, tmp_path, capsys):
    assert main(["eval", "--dataset", str(ds), "--retriever", "dense", "--model", "org/not-cached",
                 "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "cannot get model 'org/not-cached': it is not in the local Hugging Face cache and the Hub cannot be " \
           "reached (offline mode: HF_HUB_OFFLINE=1); pass a local model folder instead." in err


@pytest.mark.skipif(shutil.which("apertium") is None, reason="the apertium engine is not installed")
def test_default_quality_encoder_offline_is_one_line(ds, tmp_path, capsys, caplog):
    needs("sentence_transformers", "neural")  # the quality encoder's loader
    out = tmp_path / "es"
    assert main(["translate", "--dataset", str(ds), "--lang", "es", "--translator", "apertium",
                 "--output", str(out)]) == 0  # the translation is kept
    lines = [r.getMessage() for r in caplog.records if "quality report not written" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "sentence-transformers/LaBSE" in lines[0] and "pass --quality-encoder DIR" in lines[0] and \
        "--no-quality" in lines[0] and f"beirx quality {out}" in lines[0]
    assert main(["quality", str(out), "--lang", "es"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["beirx quality: error: the encoder sentence-transformers/LaBSE is not in the local Hugging Face "
                   "cache and the Hub cannot be reached (offline mode: HF_HUB_OFFLINE=1); pass --encoder DIR (a "
                   "local multilingual sentence-transformers folder)"]


# -- other libraries' log noise: a real process, its real stderr ------------------------------------------------
@pytest.mark.parametrize("verbose", [False, True])
def test_unreachable_server_is_one_beirx_line_unless_verbose(ds, tmp_path, verbose):
    needs("elasticsearch", "es")
    argv = [sys.executable, "-m", "beirx", *(["-v"] if verbose else []), "eval", "--dataset", str(ds),
            "--retriever", "elasticsearch", "--es-url", f"http://127.0.0.1:{closed_port()}", "--output",
            str(tmp_path / "o")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2
    noise = [line for line in done.stderr.splitlines() if "elastic_transport" in line or "Traceback" in line]
    assert done.stderr.count("beirx eval: error: cannot reach Elasticsearch") == 1
    assert "(connection refused); start it, or fix --es-url" in done.stderr
    if verbose:
        assert noise and "Traceback" in done.stderr  # the details, on request
    else:
        assert noise == [] and len(done.stderr.strip().splitlines()) <= 2, done.stderr
