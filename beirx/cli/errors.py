"""The CLI's one error boundary: expected failures become one paragraph and exit code 2.

Expected failures are what bad input, a damaged file, a full disk or a missing network produce
(``OSError``, decoding, gzip/zlib, JSON, SQLite, too deeply nested data, bad option values). Each is
described with the file (and line) it concerns and what to do; ``-v`` adds the traceback. Anything else
is a bug and keeps its traceback. Every message passes through :func:`beirx.redact.redact_text`.
"""

from __future__ import annotations

import json
import sqlite3
import zlib

from beirx.errors import BeirxError, DataError
from beirx.redact import redact_text



def expected_errors() -> tuple[type[BaseException], ...]:
    """Exception types the CLI reports without a traceback."""
    types: list[type[BaseException]] = [BeirxError, OSError, UnicodeError, EOFError, zlib.error, ValueError,
                                        RecursionError, sqlite3.Error]
    try:
        import requests

        types.append(requests.RequestException)
    except ImportError:  # pragma: no cover
        pass
    return tuple(types)


def _where(exc: BaseException) -> str:
    path = getattr(exc, "filename", None)
    return f"{path}: " if path else ""


def describe(exc: BaseException) -> str:
    """A one-paragraph message for an expected failure: what happened, where, what to do."""
    if isinstance(exc, DataError):
        text = str(exc)
    elif isinstance(exc, BeirxError):
        text = str(exc)
    elif isinstance(exc, UnicodeDecodeError):
        text = (f"a file is not valid UTF-8 ({exc.reason} at byte {exc.start}); BEIR files must be UTF-8: "
                "re-encode it (e.g. iconv -t UTF-8)")
    elif isinstance(exc, json.JSONDecodeError):
        text = f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; fix or delete the file"
    elif isinstance(exc, (EOFError, zlib.error)) or type(exc).__name__ == "BadGzipFile":
        text = (f"{_where(exc)}compressed data is truncated or not gzip ({exc or type(exc).__name__}); "
                "download or write the file again")
    elif isinstance(exc, RecursionError):
        text = "the input is nested too deeply to read (a hostile or broken JSON file?); fix the file"
    elif isinstance(exc, sqlite3.Error):
        text = (f"database error ({exc}); the cache file may be damaged: delete it (it is rebuilt) or free disk "
                "space")
    elif _is_network(exc):
        from beirx.data.download import OFFLINE_HINT

        text = f"network error ({exc}). {OFFLINE_HINT}"
    elif isinstance(exc, OSError):
        what = exc.strerror or str(exc)
        text = f"{_where(exc)}{what}" + ("" if exc.filename else f" ({exc})") + \
            "; check the path, its permissions and free disk space"
    else:
        text = f"{exc}; check the option values and input files"
    return redact_text(text)


def _is_network(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("requests", "urllib3", "urllib.error", "socket", "http.client")) or \
        type(exc).__name__ in {"ConnectionError", "gaierror", "timeout", "URLError", "RemoteDisconnected"}
