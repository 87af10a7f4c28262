"""The YAML front matter of a README.md: the metadata block a Hub dataset card starts with.

Reading a downloaded dataset (:mod:`beirx.data.hub_source`: its ``configs`` name the data files) and
publishing one (:mod:`beirx.publish`: an export records its checksum there) both read it, so the reader lives
in ``data/``, the earlier stage, and publishing imports it from here.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger(__name__)


def read_front_matter(readme: Path) -> dict[str, Any]:
    """The YAML metadata of a README.md, or ``{}`` when it has none or it does not parse."""
    if not readme.is_file():
        return {}
    text = readme.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        return {}
    try:
        data = yaml.safe_load(text[3:end])
    except yaml.YAMLError as exc:
        log.warning("%s: YAML metadata does not parse (%s); ignoring it", readme, exc)
        return {}
    return data if isinstance(data, dict) else {}


def with_front_matter(metadata: dict[str, Any], body: str) -> str:
    """``---`` YAML ``---`` then the body: the README.md layout the Hub and ``datasets`` read."""
    header = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{header}---\n\n{body.lstrip()}"


def card_languages(meta: dict[str, Any]) -> list[str]:
    """The ``language:`` entries of a card's metadata (a string or a list), as strings."""
    langs = meta.get("language")
    return [str(langs)] if isinstance(langs, str) else [str(x) for x in langs] if isinstance(langs, list) else []
