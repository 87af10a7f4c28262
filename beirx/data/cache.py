"""Where beirx keeps what it downloads and computes: one folder, ``$BEIRX_HOME`` (default ``~/.cache/beirx``).

Layout::

    downloads/              archives and their ``.part`` files while downloading
    datasets/<name>/        source datasets (datasets/scifact, datasets/cqadupstack/android)
    datasets/<name>-<lang>/ translated versions (datasets/scifact-pl, datasets/cqadupstack/android-pl)
    indexes/  embeddings/  runs/
    translation_memory/  generated_queries/   SQLite caches of translate and generate-queries
    hub/                    Hub datasets converted to BEIR layout (hub/<org>/<name>/<revision>), exports

Everything here can be rebuilt, so deleting the folder (or one dataset in it) is always safe.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from beirx.errors import BeirxError

HOME_ENV = "BEIRX_HOME"
KINDS = ("downloads", "datasets", "indexes", "embeddings", "runs", "translation_memory", "generated_queries", "ct2",
         "hub", "onnx", "judgements")

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LANG = re.compile(r"^[A-Za-z]{2,3}(?:_[A-Za-z0-9]{2,8})?$")  # pl, de, pt_BR, zh_Hant


def beirx_home() -> Path:
    """``$BEIRX_HOME``, or ``~/.cache/beirx`` when it is unset or empty."""
    value = os.environ.get(HOME_ENV, "").strip()
    return Path(value).expanduser() if value else Path.home() / ".cache" / "beirx"


def cache_dir(kind: str) -> Path:
    """``$BEIRX_HOME/<kind>``, created if missing; ``kind`` is one of :data:`KINDS`."""
    if kind not in KINDS:
        raise BeirxError(f"unknown cache folder {kind!r}; choose one of: {', '.join(KINDS)}")
    path = beirx_home() / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_name(name: str) -> str:
    """A dataset name safe to use as a relative path (``scifact``, ``cqadupstack/android``), or BeirxError."""
    parts = name.split("/")
    if not name or not all(_SEGMENT.match(p) and p not in {".", ".."} for p in parts):
        raise BeirxError(f"invalid dataset name {name!r}: use letters, digits, '.', '_', '-' and '/' between parts")
    return name


def check_lang(lang: str) -> str:
    if not _LANG.match(lang):
        raise BeirxError(f"invalid language code {lang!r}: expected an ISO 639 code such as 'pl' or 'pt_BR'")
    return lang


def dataset_dir(name: str, lang: str | None = None) -> Path:
    """The cache folder of dataset ``name`` (source when ``lang`` is None or ``en``, else ``<name>-<lang>``).

    Not created here: the folder appears only once its content is complete.
    """
    check_name(name)
    if lang and lang != "en":
        name = f"{name}-{check_lang(lang)}"
    return beirx_home() / "datasets" / name


def translated_dirs(name: str) -> dict[str, Path]:
    """Cached translated versions of ``name``: ``{lang: folder}`` for each ``datasets/<name>-<lang>`` folder."""
    base = dataset_dir(name)
    if not base.parent.is_dir():
        return {}
    found = {}
    for path in sorted(base.parent.glob(f"{base.name}-*")):
        lang = path.name[len(base.name) + 1:]
        if path.is_dir() and _LANG.match(lang):
            found[lang] = path
    return found
