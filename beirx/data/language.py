"""Which language a dataset is in, and where that knowledge came from.

A folder written by ``beirx translate`` states its language in ``translation.json`` (``target.lang``).
Evaluating it with another language's analyzer gives silently wrong numbers (English stemming of Polish
text), so the dataset's own statement wins when ``--lang`` is absent, and a contradicting ``--lang`` is
used as asked but warned about loudly. The source ("given", "translation.json", "dataset card", "default")
goes into the results, so a reader can tell a chosen language from an assumed one.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from beirx.errors import DataError

log = logging.getLogger(__name__)

MANIFEST = "translation.json"
DEFAULT = "en"


def stated_language(folder: Path | str) -> str | None:
    """The language ``folder/translation.json`` states (``target.lang``), or None without a manifest."""
    path = Path(folder).expanduser() / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError, OSError) as exc:
        raise DataError(path, f"cannot read the translation manifest ({exc}); fix or delete it") from exc
    lang = (manifest.get("target") or {}).get("lang") if isinstance(manifest, dict) else None
    if lang is not None and not isinstance(lang, str):
        raise DataError(path, f"'target.lang' must be a language code, got {lang!r}")
    return lang or None


def card_language(folder: Path | str) -> str | None:
    """The single ``language:`` of a dataset card (``README.md`` YAML front matter), e.g. a local Hub copy."""
    path = Path(folder).expanduser() / "README.md"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    import yaml

    try:
        meta = yaml.safe_load(text.split("---", 2)[1]) or {}
    except (yaml.YAMLError, IndexError, RecursionError):
        return None
    langs = meta.get("language") if isinstance(meta, dict) else None
    langs = [langs] if isinstance(langs, str) else list(langs or []) if isinstance(langs, list) else []
    return str(langs[0]).lower() if len(langs) == 1 and len(str(langs[0])) == 2 else None


def dataset_language(dataset: str | None, flag: str | None) -> tuple[str, str]:
    """``(language, source)`` for ``--dataset``/``--lang``.

    source is "given" (``--lang``, as the plan calls a language the user chose), "translation.json",
    "dataset card" (the README.md of a local folder, of ``hf:/local/copy`` or of the Hub dataset ``hf:ORG/NAME``,
    downloaded to read it when ``--lang`` is not given) or "default".
    """
    folder = dataset[3:] if dataset and dataset.startswith("hf:") else dataset
    stated, where = None, None
    if folder and Path(folder).expanduser().is_dir():
        stated, where = stated_language(folder), MANIFEST
        if stated is None:
            stated, where = card_language(folder), "dataset card"
    elif dataset and dataset.startswith("hf:") and not flag:
        from beirx.data.hub_source import card_folder

        stated, where = card_language(card_folder(dataset[3:])), "dataset card"
    if flag:
        if stated and stated != flag:
            log.warning("!!! --lang %s contradicts the %s of %s, which says the dataset is in %r: evaluating with "
                        "the %s analyzer as asked, but the numbers are likely wrong; drop --lang to use %r",
                        flag, where, folder, stated, flag, stated)
        return flag, "given"
    if stated:
        log.info("language %s from the %s of %s", stated, where, folder)
        return stated, where
    return DEFAULT, "default"
