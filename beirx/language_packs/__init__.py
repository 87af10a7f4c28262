"""Language packs: per-language analysis (Lucene-compatible) and Elasticsearch settings.

``get_pack(code)`` accepts ISO 639-1 (``pl``), ISO 639-3 (``pol``), MTEB (``pol-Latn``), NLLB
(``pol_Latn``) or locale (``pl-PL``) codes; a language without a declared pack gets a generic one
(Lucene StandardTokenizer + lowercase, no stop words, no stemming), logged once per code.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from importlib import resources

from .pack import LanguagePack
from .packs import PACKS

__all__ = ["LanguagePack", "get_pack", "list_packs"]

log = logging.getLogger(__name__)
_DECLARED = {pack.code: pack for pack in PACKS}


@lru_cache(maxsize=1)
def _languages() -> dict[str, tuple[str, str, str, str]]:
    """ISO 639-1 -> (iso639_3, script, name, nllb) from languages.tsv."""
    table = {}
    text = resources.files(__package__).joinpath("languages.tsv").read_text("utf-8")
    for line in text.splitlines()[1:]:
        if line and not line.startswith("#") and not line.startswith("iso639_1\t"):
            iso1, iso3, script, name, nllb = line.split("\t")
            table[iso1] = (iso3, script, name, nllb)
    return table


def list_packs() -> list[LanguagePack]:
    """Every declared language pack (not the generic fallbacks)."""
    return list(PACKS)


@lru_cache(maxsize=None)
def get_pack(code: str) -> LanguagePack:
    """The pack for a language code; unknown languages get a generic pack (logged once)."""
    raw = code.strip()
    parts = raw.replace("_", "-").split("-")
    lang = parts[0].lower()
    script = parts[1].title() if len(parts) > 1 and len(parts[1]) == 4 and parts[1].isalpha() else None
    languages = _languages()
    if len(lang) == 3:
        lang = next((iso1 for iso1, row in languages.items() if row[0] == lang), lang)
    pack = _DECLARED.get(lang)
    if pack is not None and (script is None or script == pack.script):
        return pack
    iso3, default_script, name, nllb = languages.get(lang, (None, "", lang, ""))
    if iso3 is None and len(lang) == 3 and lang.isalpha():
        iso3 = lang
    script = script or default_script or None
    nllb_code = (nllb or None) if script == default_script else None
    pack = LanguagePack(code=lang, name=name, iso3=iso3, script=script, nllb=nllb_code,
                        notes="generic fallback: StandardTokenizer + lowercase, no stop words, no stemming")
    log.warning("no language pack for %r: using the generic pack (%s)", raw, pack.notes)
    return pack
