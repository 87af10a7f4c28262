"""Safe extraction of dataset archives, and the checks that say a cached dataset folder is complete.

Every zip entry is checked before anything is written: absolute paths, ``..`` components and symbolic
links are refused (a "zip slip" could otherwise write anywhere). The archive is extracted into a
temporary folder beside the target, its BEIR layout (corpus, queries, qrels) is verified, a marker
file recording the source is written, and only then is the folder renamed into place. A crash
mid-extraction therefore leaves no folder that could be taken for a complete dataset.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import stat
import sys
import zipfile
import zlib
from pathlib import Path


from beirx import __version__
from beirx.artifacts.base import utc_now
from beirx.atomic import sibling_temp_dir
from beirx.data.beir_io import find_file
from beirx.errors import BeirxError
from beirx.progress import progress as progress_bar

log = logging.getLogger(__name__)

MARKER = ".beirx-complete.json"
_SKIP_TOP = {"__MACOSX"}


def beir_layout_problems(root: Path) -> list[str]:
    """The BEIR files missing from ``root`` (empty when corpus, queries and at least one qrels file exist)."""
    missing = [f"{stem}.jsonl" for stem in ("corpus", "queries") if find_file(root, stem) is None]
    if not any((root / "qrels").glob("*.tsv")):
        missing.append("qrels/<split>.tsv")
    return [_with_link_problem(root, name) for name in missing]


def _with_link_problem(root: Path, name: str) -> str:
    """``name``, plus why when a symbolic link in its way loops or leads nowhere."""
    from beirx.path_problems import link_problem

    problem = link_problem(Path(root) / name.split("<")[0].rstrip("/"))
    return f"{name} ({problem})" if problem else name


def is_complete(folder: Path) -> bool:
    """True if ``folder`` was fully extracted and verified by :func:`safe_extract`."""
    return (folder / MARKER).is_file()


def _member_parts(info: zipfile.ZipInfo, archive: Path) -> tuple[str, ...]:
    """The entry's path components, or BeirxError when the entry could land outside the target."""
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise BeirxError(f"{archive}: refusing to extract entry {info.filename!r}: absolute path")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise BeirxError(f"{archive}: refusing to extract entry {info.filename!r}: '..' leads outside the target")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise BeirxError(f"{archive}: refusing to extract entry {info.filename!r}: symbolic link")
    return parts


def safe_extract(archive: Path | str, target: Path | str, *, subdirs: tuple[str, ...] = (),
                 provenance: dict | None = None, progress: bool | None = None) -> Path:
    """Extract a BEIR archive to ``target`` (which must not exist yet) and return ``target``.

    A single top-level folder in the archive (BEIR's ``scifact/...``) becomes ``target``. ``subdirs``
    names folders that must each hold a BEIR dataset (CQADupStack's 12 subsets); otherwise ``target``
    itself must. ``provenance`` (URL, checksums) is written to the marker file.
    """
    archive, target = Path(archive), Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BeirxError(f"{archive}: not a readable zip archive ({exc})") from exc
    tmp = sibling_temp_dir(target, suffix=".extract")
    try:
        with zf:
            members = [(info, _member_parts(info, archive)) for info in zf.infolist()]
            members = [(info, parts) for info, parts in members if parts and parts[0] not in _SKIP_TOP]
            show = sys.stderr.isatty() if progress is None else progress
            with progress_bar(total=sum(i.file_size for i, _ in members), unit="B", desc=f"extract {archive.name}",
                              enabled=show, unit_scale=True, unit_divisor=1024) as bar:
                for info, parts in members:
                    dest = tmp.joinpath(*parts)
                    try:
                        if info.is_dir():
                            dest.mkdir(parents=True, exist_ok=True)
                            continue
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        with zf.open(info) as src, open(dest, "wb") as out:
                            shutil.copyfileobj(src, out, 1 << 20)
                    except (FileExistsError, NotADirectoryError, IsADirectoryError) as exc:
                        raise BeirxError(f"{archive}: entry {info.filename!r} clashes with another entry (a file and "
                                         f"a folder of the same name: {exc.strerror}); the archive is malformed") \
                            from exc
                    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                        raise BeirxError(f"{archive}: entry {info.filename!r} is damaged ({exc}); download the "
                                         "archive again") from exc
                    bar.update(info.file_size)
        root = _content_root(tmp)
        _check_layout(root, subdirs, archive)
        marker = {"archive": archive.name, **(provenance or {}), "files": sum(1 for _ in root.rglob("*")),
                  "extracted_at": utc_now(), "beirx": __version__}
        (root / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        try:
            os.rename(root, target)
        except OSError:
            if not is_complete(target):
                raise BeirxError(f"cannot move the extracted dataset to {target}: the folder exists and is not a "
                                 f"complete download; delete it and retry") from None
            log.info("%s was completed by another process meanwhile", target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _content_root(tmp: Path) -> Path:
    """The extracted folder holding the data: the archive's single top folder, else ``tmp`` itself."""
    top = [p for p in tmp.iterdir() if p.name not in _SKIP_TOP]
    if len(top) == 1 and top[0].is_dir() and beir_layout_problems(tmp):
        return top[0]
    return tmp


def _check_layout(root: Path, subdirs: tuple[str, ...], archive: Path) -> None:
    folders = [root / sub for sub in subdirs] or [root]
    problems = [f"{(f.relative_to(root).as_posix() + '/') if f != root else ''}{m}"
                for f in folders for m in beir_layout_problems(f)]
    if problems:
        raise BeirxError(f"{archive}: not a BEIR dataset archive, missing {', '.join(problems)}")
