"""A local server that speaks the Elasticsearch 8 REST API, for tests and benchmarks/es_parity.py.

noida-db (PyPI) ships one binary that serves Elasticsearch's REST API (bulk, msearch, point in time,
search_after, custom analyzers, BM25 similarity settings) on 127.0.0.1. It implements Lucene's BM25
including the one-byte document-length norms, but keeps the pre-Lucene-8 factor ``(k1 + 1)`` in the
numerator, so every score is Lucene's times ``k1 + 1`` (2.2 by default): same ranking, scaled scores.
It has no analysis-stempel plugin (no Polish server-side analysis).
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from local_processes import free_port, stop


def noida_binary() -> Path | None:
    try:
        from importlib.resources import files

        path = Path(str(files("noida_db").joinpath("noida-db")))
    except ModuleNotFoundError:
        return None
    return path if path.is_file() else None


@contextmanager
def noida_elasticsearch(data_dir: Path, timeout: float = 30.0):
    """Start noida-db's Elasticsearch service on a free 127.0.0.1 port; yields its URL; stops it after."""
    binary = noida_binary()
    if binary is None:
        raise RuntimeError("noida-db is not installed (pip install noida-db)")
    binary.chmod(0o755)
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = open(data_dir / "noida.log", "wb")
    proc = subprocess.Popen([str(binary), "start", "--data-dir", str(data_dir), "--host", "127.0.0.1",
                             "--only", "elasticsearch", "--elasticsearch-port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"noida-db exited with {proc.returncode}: "
                                   f"{(data_dir / 'noida.log').read_text(errors='replace')[-500:]}")
            try:
                with urllib.request.urlopen(url + "/", timeout=2) as resp:
                    if json.load(resp).get("version"):
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"noida-db did not answer on {url} within {timeout:.0f} s") from None
                time.sleep(0.1)
        yield url
    finally:
        stop(proc)
        log.close()
