"""BM25 conventions: which fields are scored, how field scores combine, which lengths, k1 and b.

Published BM25 baselines differ in these choices, not in the formula (docs/bm25.md has the SciFact figure of
each). A named preset sets them all to one toolkit's values:

- ``elasticsearch`` (beirx's default): k1 1.2, b 0.75, title and text as separate fields combined like
  ``multi_match`` ``best_fields`` with ``tie_breaker`` 0.5 -- the query of BEIR (Thakur et al. 2021) and
  BEIR-PL (Wojtasik et al. 2024), run on Elasticsearch;
- ``pyserini-flat``: k1 0.9, b 0.4 (Anserini's defaults), title + " " + text in one field -- Pyserini's
  BEIR "flat" regression (SciFact nDCG@10 0.6789, R@100 0.9253);
- ``pyserini-multifield``: k1 0.9, b 0.4, title and text as separate fields, their scores summed (Anserini's
  ``-fields contents=1.0 title=1.0``, a SHOULD clause per field) -- Pyserini's BEIR "multifield" regression
  (SciFact 0.6647 / 0.9076).

All three are Lucene-based, so they score with Lucene's one-byte length norms (:mod:`length_norms`).
Explicit values override the preset's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beirx.argtypes import non_negative_float, option, unit_float
from beirx.errors import BeirxError
from beirx.evaluate.retrievers.length_norms import LENGTH_NORMS
from beirx.options import Option

FIELD_MODES = ("flat", "multifield")
COMBINES = ("best_fields", "sum")
PRESETS: dict[str, dict[str, Any]] = {
    "elasticsearch": {"k1": 1.2, "b": 0.75, "fields": "multifield", "combine": "best_fields", "tie_breaker": 0.5},
    "pyserini-flat": {"k1": 0.9, "b": 0.4, "fields": "flat"},
    "pyserini-multifield": {"k1": 0.9, "b": 0.4, "fields": "multifield", "combine": "sum"},
}
DEFAULTS: dict[str, Any] = {**PRESETS["elasticsearch"], "length_norm": "lucene"}
OPTIONS: tuple[Option, ...] = (
    Option("preset", choices=tuple(PRESETS), flag="--bm25-preset",
           help="set k1, b, fields and the field combination as one toolkit does (docs/bm25.md): elasticsearch (the "
                "default values: BEIR's, BEIR-PL's), pyserini-flat (SciFact nDCG@10 0.6789), pyserini-multifield "
                "(0.6647); flags given as well override it"),
    Option("k1", non_negative_float, help=f"BM25 k1 (default {DEFAULTS['k1']})"),
    Option("b", unit_float, help=f"BM25 b (default {DEFAULTS['b']})"),
    Option("fields", choices=FIELD_MODES, help="flat: title + text in one field; multifield: title and text scored "
                                               f"as separate fields (default {DEFAULTS['fields']})"),
    Option("combine", choices=COMBINES, flag="--multifield-combine",
           help="how multifield combines the field scores: best_fields (Elasticsearch multi_match: the best field + "
                "tie-breaker x the others; BEIR, BEIR-PL) or sum (Anserini/Pyserini multifield) "
                f"(default {DEFAULTS['combine']})"),
    Option("tie_breaker", unit_float, help=f"best_fields tie-breaker (default {DEFAULTS['tie_breaker']}, BEIR's)"),
    Option("length_norm", choices=LENGTH_NORMS,
           help="lucene: document lengths as Lucene's one-byte norms, as Lucene, Elasticsearch, OpenSearch, Anserini "
                "and Pyserini score (default); exact: true lengths, as bm25s and rank_bm25 score (and beirx did "
                "before this option)"),
)
"""The BM25 conventions as options, declared once: their flags (default None, so a preset can fill what is not
given), a system's spelling and :func:`bm25_settings` read them."""
TYPES: dict[str, Any] = {option.name: option.choices or option.type for option in OPTIONS if option.name != "preset"}
"""Each setting's type or choices (from :data:`OPTIONS`)."""


def bm25_settings(preset: str | None = None, **given: Any) -> dict[str, Any]:
    """k1, b, fields, combine, tie_breaker and length_norm: beirx's defaults, overridden by ``preset``'s,
    overridden by the ``given`` values that are not None. A tie-breaker given for a sum is an error."""
    if preset is not None and preset not in PRESETS:
        raise BeirxError(f"unknown BM25 preset {preset!r}; choose one of: {', '.join(PRESETS)}")
    unknown = set(given) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"unknown BM25 settings: {', '.join(sorted(unknown))}")
    explicit = {k: v for k, v in given.items() if v is not None}
    settings = {**DEFAULTS, **PRESETS.get(preset or "elasticsearch", {}), **explicit}
    for key, kind in TYPES.items():
        if isinstance(kind, tuple):
            if settings[key] not in kind:
                raise BeirxError(f"BM25 {key} must be one of {', '.join(kind)}, got {settings[key]!r}")
        else:
            settings[key] = option("BM25", key, settings[key], kind)
    if settings["combine"] == "sum" and "tie_breaker" in explicit:
        raise BeirxError("a tie-breaker applies to --multifield-combine best_fields only, not to sum")
    return settings


def settings_given(given: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`bm25_settings` of the options given as flags (by name; those not given take the preset's or the
    defaults)."""
    return bm25_settings(given.get("preset"), **{key: given.get(key) for key in DEFAULTS})
