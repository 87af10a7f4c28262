"""Resumable, verified file downloads (HTTP(S) via requests, or ``file://`` for local mirrors).

Bytes stream into ``<dest>.part``. After an interruption the next attempt (a retry here, or a later
run) asks for the rest with an HTTP ``Range`` header; a server that ignores it (200 instead of 206) or
answers with a different range makes the download restart from byte 0 rather than corrupt the file.
When the body is complete its MD5/SHA-256 are checked; on a mismatch the part file is deleted and a
:class:`BeirxError` says so. Only a verified file is renamed to ``dest``, so an existing ``dest`` is
always complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import requests

from beirx import __version__
from beirx.errors import BeirxError
from beirx.network import reason, unreachable
from beirx.progress import progress as progress_bar
from beirx.redact import redact_url
from beirx.retry import Retrying, RetryPolicy, Transient, transient_status

log = logging.getLogger(__name__)

CHUNK = 1 << 16


OFFLINE_HINT = ("If you are offline: pass a local BEIR folder with --dataset DIR, set $BEIRX_BEIR_URL to a "
                "mirror (a file:// folder works), or use hf:/path/to/local/copy.")


class _Interrupted(Exception):
    """A transfer that stopped early and may be resumed (``wait``: the server's Retry-After, if it sent one)."""

    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait


def _classify(outcome) -> Transient | None:
    """An interrupted transfer is transient (the next attempt resumes it); anything else is final."""
    return Transient(str(outcome), "interrupted", outcome.wait) if isinstance(outcome, _Interrupted) else None


def file_digests(path: Path) -> dict[str, str]:
    """``{"md5": hex, "sha256": hex}`` of a file, in one pass."""
    md5, sha256 = hashlib.md5(), hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            md5.update(block)
            sha256.update(block)
    return {"md5": md5.hexdigest(), "sha256": sha256.hexdigest()}


@contextlib.contextmanager
def file_lock(path: Path):
    """Hold an exclusive advisory lock on ``path`` while the block runs.

    Several beirx processes sharing one cache (parallel evaluation jobs) then download and extract each
    archive once instead of writing the same ``.part`` file together. Without ``fcntl`` (Windows) this
    is a no-op and the checksum check still catches a mixed-up file.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another beirx process that holds %s", path)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def download_file(url: str, dest: Path | str, *, md5: str | None = None, sha256: str | None = None,
                  retry: RetryPolicy | None = None, timeout: float = 60.0,
                  progress: bool | None = None) -> Path:
    """Download ``url`` to ``dest`` (resuming ``dest.part``), verify the checksums given, return ``dest``.

    Connection errors, early closes and 408/429/5xx answers are retried through beirx's one retry decision
    (:class:`beirx.retry.Retrying`) with ``retry`` (5 attempts in all by default, jittered exponential backoff
    from 2 s, the server's ``Retry-After``/``retry-after-ms`` when it sends one); each retry resumes where the
    last one stopped.
    """
    retry = retry or RetryPolicy(attempts=5, base_delay=2.0)
    dest = Path(dest)
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    show = sys.stderr.isatty() if progress is None else progress
    if urlparse(url).scheme == "file":
        _copy_local(url, part)
    else:
        def kept() -> int:
            return part.stat().st_size if part.exists() else 0

        def retried(attempt: int, transient: Transient, delay: float) -> None:
            log.warning("download of %s interrupted (%s); attempt %d/%d in %.1f s, resuming at byte %d",
                        redact_url(url), transient.reason, attempt + 1, retry.attempts, delay, kept())

        def exhausted(transient: Transient, attempts: int) -> BeirxError:
            return BeirxError(f"download of {redact_url(url)} failed after {attempts} attempts ({transient.reason}); "
                              f"{kept():,} bytes are kept in {part} and the next run resumes from there")

        Retrying(retry, retried=retried, exhausted=exhausted).call(lambda _: _fetch(url, part, timeout, show),
                                                                   _classify)
    _verify(part, url, md5, sha256)
    os.replace(part, dest)
    log.info("downloaded %s -> %s", url, dest)
    return dest


def _fetch(url: str, part: Path, timeout: float, show: bool) -> None:
    """One attempt: request the missing bytes and append them to ``part``."""
    offset = part.stat().st_size if part.exists() else 0
    # identity encoding: byte ranges must count the file's bytes, not a compressed stream's
    headers = {"User-Agent": f"beirx/{__version__}", "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        with requests.get(url, headers=headers, stream=True, timeout=timeout) as resp:
            mode = _write_mode(resp, url, part, offset)
            if mode is None:
                return
            if mode == "wb":
                offset = 0
            length = resp.headers.get("Content-Length")
            total = offset + int(length) if length and length.isdigit() else None
            with open(part, mode) as fh, progress_bar(total=total, initial=offset, unit="B", desc=part.name[:-5],
                                                      enabled=show, unit_scale=True, unit_divisor=1024) as bar:
                for chunk in resp.iter_content(chunk_size=CHUNK):
                    fh.write(chunk)
                    bar.update(len(chunk))
    except requests.ConnectionError as exc:
        if offset == 0 and unreachable(exc):  # no retry can help: fail now, with what to do instead
            raise BeirxError(f"cannot reach {redact_url(url)} ({reason(exc)}). {OFFLINE_HINT}") from None
        raise _Interrupted(f"{type(exc).__name__}: {exc}") from exc
    except (requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
        raise _Interrupted(f"{type(exc).__name__}: {exc}") from exc
    except requests.RequestException as exc:
        raise BeirxError(f"cannot download {redact_url(url)}: {exc}") from exc
    size = part.stat().st_size
    if total is not None and size != total:
        if size > total:
            part.unlink()
        raise _Interrupted(f"got {size:,} of {total:,} bytes")


def _write_mode(resp: requests.Response, url: str, part: Path, offset: int) -> str | None:
    """How to open ``part`` for this response: ``"ab"`` (resume), ``"wb"`` (restart), ``None`` (complete)."""
    status = resp.status_code
    if status == 416 and offset:
        total = _range_total(resp.headers.get("Content-Range", ""))
        if total == offset:
            return None  # the part file already holds the whole file
        part.unlink()
        raise _Interrupted(f"server refused to resume at byte {offset:,}; restarting")
    transient = transient_status(status, resp.headers, f"HTTP {status} {resp.reason}")
    if transient is not None:
        raise _Interrupted(transient.reason, transient.wait)
    if status >= 400:
        raise BeirxError(f"cannot download {redact_url(url)}: HTTP {status} {resp.reason}")
    if status == 206:
        start = _range_start(resp.headers.get("Content-Range", ""))
        if start == offset:
            return "ab"
        part.unlink(missing_ok=True)
        raise _Interrupted(f"server sent bytes from {start} instead of {offset}; restarting")
    if offset:
        log.info("%s ignored the Range request; downloading again from the start", urlparse(url).netloc)
    return "wb"


def _range_start(content_range: str) -> int | None:
    """Start byte of ``bytes START-END/TOTAL``."""
    try:
        return int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


def _range_total(content_range: str) -> int | None:
    """TOTAL of ``bytes */TOTAL`` or ``bytes START-END/TOTAL``."""
    try:
        return int(content_range.rsplit("/", 1)[1])
    except (IndexError, ValueError):
        return None


def _copy_local(url: str, part: Path) -> None:
    parsed = urlparse(url)
    source = Path(url2pathname(unquote(parsed.path)))
    if not source.is_file():
        raise BeirxError(f"cannot download {url}: {source} not found")
    shutil.copyfile(source, part)


def _verify(part: Path, url: str, md5: str | None, sha256: str | None) -> None:
    """Check the finished part file against the expected digests; delete it on a mismatch."""
    if not md5 and not sha256:
        log.warning("no checksum is known for %s; the download is not verified", url)
        return
    got = file_digests(part)
    for algo, expected in (("md5", md5), ("sha256", sha256)):
        if expected and got[algo] != expected.lower():
            part.unlink()
            raise BeirxError(f"checksum mismatch for {url}: expected {algo} {expected}, got {got[algo]}. The "
                             f"download was deleted; rerun to fetch it again, or set $BEIRX_BEIR_URL to another "
                             f"mirror if this one serves a different file")
