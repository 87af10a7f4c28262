"""User-supplied names that become paths: checked as single safe segments, and the final path confined.

A split, task name, model revision or repository name ends up inside a file name under ``--output`` or
``$BEIRX_HOME``; ``../`` or an absolute path in it must not write elsewhere. :func:`check_segment`
rejects anything but a plain name, and :func:`confined` checks the joined path (symlinks resolved)
stays inside its root — both, because a name can be fine alone and still escape through a symlink.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
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


def link_problem(path: Path | str) -> str | None:
    """Why ``path`` cannot be followed because of a symbolic link, or None.

    Walks the path one component at a time (``lstat``, which never follows the last link) and reports the
    first link whose chain does not end in an existing file or folder: a loop (``a -> b -> a``, or a link to
    itself) or a chain that ends nowhere. Used wherever a path is reported as missing or unreadable, so the
    user reads "is a symbolic link that loops back to itself" instead of "not found" or a traceback.
    """
    path = Path(os.path.expanduser(str(path)))
    current = Path(path.anchor)
    for part in path.parts[1 if path.anchor else 0:]:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return None  # plainly missing (or unreadable): nothing about links to say
        if not stat.S_ISLNK(mode):
            continue
        try:
            os.stat(current)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return f"{current} is a symbolic link that loops back to itself"
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return f"{current} is a symbolic link to {os.path.realpath(current)}, which does not exist"
            return None
    return None


def write_problem(path: Path | str) -> str | None:
    """Why nothing can be written at ``path`` (to fail before hours of work, not after), or None.

    A symbolic link that loops or leads nowhere, or a nearest existing folder on a read-only file system or
    without write permission (``os.access``, which also answers for root on a read-only mount).
    """
    link = link_problem(path)
    if link:
        return link
    folder = Path(os.path.abspath(os.path.expanduser(str(path))))
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or os.access(folder, os.W_OK):
        return None
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:  # pragma: no cover
        read_only = False
    return f"{folder} is on a read-only file system" if read_only else f"{folder} is not writable (permission denied)"
