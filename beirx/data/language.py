"""Which language a dataset is in, and where that knowledge came from.

A folder written by ``beirx translate`` states its language in ``translation.json`` (``target.lang``), one
written by ``beirx subset`` in ``subset.json`` (``language``).
Evaluating it with another language's analyzer gives silently wrong numbers (English stemming of Polish
text), so the dataset's own statement wins when ``--lang`` is absent, and a contradicting ``--lang`` is
used as asked but warned about loudly. The source ("given", "translation.json", "dataset card", "default")
goes into the results, so a reader can tell a chosen language from an assumed one.
"""

from __future__ import annotations

import logging
from pathlib import Path

from beirx.artifacts.manifest import FILENAME as MANIFEST
from beirx.artifacts.manifest import TranslationManifest
from beirx.artifacts.subset import FILENAME as SUBSET
from beirx.artifacts.subset import SubsetManifest
from beirx.data.front_matter import card_languages, read_front_matter

log = logging.getLogger(__name__)

DEFAULT = "en"


def _stated(folder: Path) -> tuple[str | None, str]:
    """``(language, file that states it)`` from ``translation.json``, else ``subset.json``."""
    manifest = TranslationManifest.find(folder)
    if manifest:
        return manifest.target_language, MANIFEST
    subset = SubsetManifest.find(folder)
    return (subset.language if subset else None), SUBSET


def card_language(folder: Path | str) -> str | None:
    """The single ``language:`` of a dataset card (``README.md`` YAML front matter), e.g. a local Hub copy."""
    langs = card_languages(read_front_matter(Path(folder).expanduser() / "README.md"))
    return langs[0].lower() if len(langs) == 1 and len(langs[0]) == 2 else None


def dataset_language(dataset: str | None, flag: str | None) -> tuple[str, str]:
    """``(language, source)`` for ``--dataset``/``--lang``.

    source is "given" (``--lang``, as the plan calls a language the user chose), "translation.json",
    "subset.json" (a beirx subset states its source's language), "dataset card" (the README.md of a local
    folder, of ``hf:/local/copy`` or of the Hub dataset ``hf:ORG/NAME``, downloaded to read it when ``--lang``
    is not given) or "default".
    """
    folder = dataset[3:] if dataset and dataset.startswith("hf:") else dataset
    stated, where = None, None
    if folder and Path(folder).expanduser().is_dir():
        stated, where = _stated(Path(folder).expanduser())
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
