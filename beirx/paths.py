"""User-supplied names that become paths: checked as single safe segments, and the final path confined.

A split, task name, model revision or repository name ends up inside a file name under ``--output`` or
``$BEIRX_HOME``; ``../`` or an absolute path in it must not write elsewhere. :func:`check_segment`
rejects anything but a plain name, and :func:`confined` checks the joined path (symlinks resolved)
stays inside its root — both, because a name can be fine alone and still escape through a symlink.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from beirx.errors import BeirxError

_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+=@-]{0,199}$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def check_segment(value: str, what: str) -> str:
    """``value`` when it is a plain file-name part (letters, digits, ``._+=@-``; no ``/``, ``..`` or spaces)."""
    if not isinstance(value, str) or not _SEGMENT.match(value) or ".." in value:
        raise BeirxError(f"invalid {what} {value!r}: use letters, digits and . _ + = @ - (no '/', '..' or spaces)")
    return value


def check_repo_id(value: str, what: str = "--repo") -> str:
    """A Hub repository id ``ORG/NAME`` (Hugging Face's rules: letters, digits, ``._-``; no ``..``)."""
    if not _REPO.match(value or "") or ".." in value:
        raise BeirxError(f"invalid {what} {value!r}: expected ORG/NAME with letters, digits and . _ -")
    return value


def confined(root: Path | str, *parts: str | Path) -> Path:
    """``root/parts...``, after checking that it resolves (symlinks followed) to a path inside ``root``."""
    root = Path(root)
    path = root.joinpath(*parts)
    base = root.expanduser().resolve()
    if not path.expanduser().resolve().is_relative_to(base):
        raise BeirxError(f"{path} would be outside {root}; use a plain name")
    return path


_MAX_TAG = 150


def safe_tag(text: str) -> str:
    """A file-name-safe tag (system tags in result file names); over-long tags keep a readable head and a
    hash of the whole."""
    tag = re.sub(r"[^A-Za-z0-9._=-]+", "_", text)
    if len(tag) > _MAX_TAG:
        tag = f"{tag[:_MAX_TAG - 13]}-{hashlib.sha256(tag.encode()).hexdigest()[:12]}"
    return tag
