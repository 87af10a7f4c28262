"""One place that strips credentials from URLs before they reach a label, file name, result, manifest or log.

API keys (``Bearer`` tokens, and the values :func:`remember_secret` was given) become ``***`` too.
``http://user:secret@host:9200/x`` becomes ``http://user:***@host:9200/x``; a URL with a user but no
password (``https://token@host``) becomes ``https://***@host``, because a lone user field is often a token.
:func:`redact_text` applies the same rule to every URL inside free text (exception messages, log lines).
:class:`RedactingFilter` runs it over every log record the CLI emits.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

# scheme://userinfo@ — userinfo is everything up to the last '@' before the host (no '/', whitespace).
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@'\"]+)@")


def _mask(userinfo: str) -> str:
    user, sep, _ = userinfo.partition(":")
    return f"{user}:***" if sep else "***"


def redact_url(url: str) -> str:
    """``url`` with any password (or lone user token) replaced by ``***``; other URLs unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if "@" not in parts.netloc:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    return urlunsplit((parts.scheme, f"{_mask(userinfo)}@{host}", parts.path, parts.query, parts.fragment))


_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\",;]+")
_SECRETS: set[str] = set()


def remember_secret(value: str) -> None:
    """Redact ``value`` (an API key read from the environment) wherever it appears from now on: a server
    may echo it in a header or an error message that a library logs."""
    if value and len(value) > 3:
        _SECRETS.add(value)


def redact_text(text: str) -> str:
    """``text`` with the credentials of every ``scheme://user:pass@`` URL in it, every ``Bearer`` token and
    every remembered secret replaced by ``***``."""
    text = _BEARER.sub(lambda m: m[1] + "***", _USERINFO.sub(lambda m: f"{m['scheme']}{_mask(m['userinfo'])}@",
                                                              str(text)))
    for secret in _SECRETS:
        text = text.replace(secret, "***")
    return text


class RedactingFilter(logging.Filter):
    """Redacts URLs in the formatted message (and its arguments) of every record, including tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return True
