"""Python literals for generated source files (MTEB task and benchmark files): user text enters only as a literal
that reads back as itself, so no value can end a string and inject code."""

from __future__ import annotations

import ast
import json
from typing import Any

from beirx.errors import BeirxError


def literal(value: Any) -> str:
    """A Python literal for ``value``: strings only through ``repr``, so no user text can end a literal."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, str):
        return string_literal(value)
    if isinstance(value, (bool, int, float, type(None))):
        return repr(value)
    raise BeirxError(f"cannot write {type(value).__name__} into a task file")  # pragma: no cover


def string_literal(text: str) -> str:
    """A double-quoted literal (mteb's style) when it reads back as ``text``, else ``repr``; never raw user text."""
    quoted = json.dumps(text, ensure_ascii=False)
    try:
        if quoted.isprintable() and ast.literal_eval(quoted) == text:
            quoted.encode("utf-8")
            return quoted
    except (SyntaxError, ValueError, UnicodeEncodeError):
        pass
    return repr(text)


def citation_literal(text: str) -> str:
    """The citation as mteb writes it (a raw triple-quoted string) when that reads back identically, else repr."""
    raw = f'r"""{text}"""'
    try:
        if '"""' not in text and not text.endswith("\\") and ast.literal_eval(raw) == text:
            return raw
    except (SyntaxError, ValueError):
        pass
    return repr(text)
