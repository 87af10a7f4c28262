"""Why a path cannot be followed or written: a symbolic link that loops or leads nowhere, a read-only or
unwritable folder. Error messages use it wherever a path is reported missing or unwritable, so the user reads the
cause instead of "not found" or a traceback. A leaf module (standard library only): the error classes use it too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


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
