"""A suite file: datasets x languages, the subset recipe, the translator, the quality steps, publishing.

TOML (paths are relative to the file)::

    name = "SciFact-ES-subset"        # the benchmark's name
    description = "..."               # optional: the benchmark's description (default: generated)
    reference = "https://..."         # optional
    contacts = ["github-handle"]      # optional
    output = "suite"                  # optional: default a folder named after the file, beside it
    languages = ["es", "ca"]          # target languages
    source_language = "en"            # optional (default en)

    [[datasets]]
    name = "scifact"                  # catalogue name, BEIR folder or hf:ORG/NAME
    # languages = ["es"]              # optional: this dataset's own targets
    # split = "test"                  # optional: default the catalogue's test split

    [subset]                          # optional: without it the full datasets are translated
    queries = 300                     # optional: default every judged query, up to 1,000
    pool = ["bm25:fields=flat"]       # optional: a pool of hard negatives (default none: a uniform random sample)
    depth = 100                       # optional: the pool's depth, default 100 (shrinks to fit max_docs)
    max_docs = 1500                   # optional: default 1,500 (beirx.subsets.recipe)
    seed = 0
    stratify = false
    check = ["bm25:fields=flat", "bm25"]   # optional: the ranking check's systems (tau, rho, resolution)
    tau_threshold = 0.9

    [translate]
    translator = "apertium"           # a beirx translator (beirx translate --translator)
    model = "..."                     # optional
    options = { }                     # optional: the backend's options (--translator-option)
    batch_size = 64                   # optional
    memory = "memory.sqlite"          # optional (relative to output); default beirx's shared memory
    cost = true                       # optional: record the subset's share of the full dataset's characters
    max_cost = 50.0                   # paid backends (google, deepl): the most to spend per translation, USD

    [quality]
    steps = ["validate", "report"]    # validate: IDs and qrels identical to the source; report: beirx quality
    encoder = "sentence-transformers/LaBSE"
    max_items = 300                   # optional

    [publish]
    repo = "my-org/{dataset}-{lang}"  # optional: push each translation to the Hub ({dataset}, {lang} filled in)
    private = false

    [mteb]
    evaluate = ["intfloat/multilingual-e5-small"]   # optional: models for the benchmark's results table
    batch_size = 32

Every value is checked when the file is read; errors name the file and the key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.argtypes import non_negative_float, non_negative_int, positive_int, seed, unit_float
from beirx.checksums import cache_key
from beirx.errors import BeirxError, DataError
from beirx.options import Option, read_options
from beirx.subsets.recipe import DEPTH, MAX_DOCS, POOL, THRESHOLD
from beirx.translate.planning.dataset_plan import FIELDS

QUALITY_STEPS = ("validate", "report")
_KEYS = {"name", "description", "reference", "contacts", "output", "languages", "source_language", "datasets",
         "subset", "translate", "quality", "publish", "mteb"}


# -- the sections: their keys and defaults, here only ---------------------------------------------------------
@dataclass(frozen=True)
class SubsetSection:
    """``[subset]``: the recipe of :func:`beirx.subsets.cut.make_subset` (and the ranking check's systems)."""

    queries: int | None = None
    pool: list[str] = field(default_factory=lambda: list(POOL))
    depth: int = DEPTH
    max_docs: int = MAX_DOCS
    seed: int = 0
    stratify: bool = False
    check: list[str] | None = None
    tau_threshold: float = THRESHOLD


@dataclass(frozen=True)
class TranslateSection:
    """``[translate]``: the backend and what a paid run may spend."""

    translator: str
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None
    memory: str | None = None
    cost: bool = False
    fields: list[str] = field(default_factory=lambda: list(FIELDS))
    max_cost: float | None = None


@dataclass(frozen=True)
class QualitySection:
    """``[quality]``: which checks run, and the report's encoder."""

    steps: list[str] | None = None
    encoder: str | None = None
    max_items: int | None = None


@dataclass(frozen=True)
class PublishSection:
    repo: str | None = None
    private: bool = False


@dataclass(frozen=True)
class MtebSection:
    evaluate: list[str] = field(default_factory=list)
    batch_size: int = 32


_SECTIONS = {"subset": SubsetSection, "translate": TranslateSection, "quality": QualitySection,
             "publish": PublishSection, "mteb": MtebSection}


@dataclass
class SuiteDataset:
    spec: str
    """Catalogue name, folder (made absolute) or hf:ORG/NAME."""
    languages: list[str]
    split: str | None = None


@dataclass
class Suite:
    path: Path
    name: str
    output: Path
    languages: list[str]
    datasets: list[SuiteDataset]
    translate: TranslateSection
    source_language: str = "en"
    description: str | None = None
    reference: str | None = None
    contacts: list[str] | None = None
    subset: SubsetSection | None = None
    quality: QualitySection = field(default_factory=QualitySection)
    publish: PublishSection = field(default_factory=PublishSection)
    mteb: MtebSection = field(default_factory=MtebSection)
    tables: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """Each section as the file wrote it (None: no ``[subset]``): what the step fingerprints are made of, so a
    default filled in here never makes a finished step look changed."""

    def fingerprint(self, section: str, *inputs: Any) -> str:
        """What a step depends on: its section of the file and its inputs (checksums)."""
        return cache_key(section, self.tables.get(section, None if section == "subset" else {}), *inputs)

    @property
    def quality_steps(self) -> list[str]:
        """The quality steps: as listed, else validate (and report when an encoder is named)."""
        if self.quality.steps is not None:
            return list(self.quality.steps)
        return list(QUALITY_STEPS) if self.quality.encoder else ["validate"]


def _check(path: Path, ok: bool, message: str) -> None:
    if not ok:
        raise DataError(path, message)


def _strings(path: Path, value: Any, key: str) -> list[str]:
    _check(path, isinstance(value, list) and all(isinstance(v, str) and v for v in value),
           f"'{key}' must be a list of strings, got {value!r}")
    return list(value)


# each section's numbers as options, read as the flags of the same name read them (their value types)
_NUMBERS = {"subset": (Option("queries", positive_int), Option("depth", non_negative_int),
                       Option("max_docs", positive_int), Option("seed", seed), Option("tau_threshold", unit_float)),
            "translate": (Option("batch_size", positive_int), Option("max_cost", non_negative_float)),
            "quality": (Option("max_items", positive_int),), "mteb": (Option("batch_size", positive_int),)}


def _numbers(path: Path, section: str, table: dict) -> None:
    try:
        read_options(_NUMBERS.get(section, ()), table, f"[{section}] ", unknown="keep")
    except BeirxError as exc:
        raise DataError(path, str(exc)) from None


def _systems(path: Path, specs: list[str], parse) -> None:
    """Systems spelled in ``[subset]``, checked as ``beirx subset`` checks them (a bad parameter is named now)."""
    try:
        parse(specs)
    except BeirxError as exc:
        raise DataError(path, f"[subset] {exc}") from None


def _sections(path: Path, data: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """Each section's table as the file wrote it (``subset``: None when there is none), keys and values checked;
    what a key left out means is its section's default."""
    tables: dict[str, dict[str, Any] | None] = {}
    for section, kind in _SECTIONS.items():
        table = data.get(section, {})
        _check(path, isinstance(table, dict), f"[{section}] must be a table")
        keys = {f.name for f in dataclasses.fields(kind)}
        extra = set(table) - keys
        _check(path, not extra, f"[{section}]: unknown keys {sorted(extra)}; expected some of {sorted(keys)}")
        tables[section] = data.get(section, None if section == "subset" else {})
    for section, table in tables.items():
        _numbers(path, section, table or {})
    subset = tables["subset"]
    if subset is not None:
        from beirx.subsets.system_args import parse_pool, parse_systems

        for key, parse in (("pool", parse_pool), ("check", parse_systems)):
            if key in subset:
                _systems(path, _strings(path, subset[key], f"subset.{key}"), parse)
    translate = tables["translate"]
    _check(path, isinstance(translate.get("translator"), str), "[translate] needs 'translator' (e.g. apertium)")
    _check(path, isinstance(translate.get("options", {}), dict), "[translate] 'options' must be a table")
    quality = tables["quality"]
    steps = _strings(path, quality["steps"], "quality.steps") if quality.get("steps") else []
    _check(path, set(steps) <= set(QUALITY_STEPS), f"[quality] steps must be among {', '.join(QUALITY_STEPS)}")
    _check(path, "report" not in steps or isinstance(quality.get("encoder"), str),
           "[quality] the 'report' step needs 'encoder' (a multilingual sentence-transformers model)")
    if "evaluate" in tables["mteb"]:
        _strings(path, tables["mteb"]["evaluate"], "mteb.evaluate")
    return tables


def _dataset_spec(path: Path, spec: str) -> str:
    """A relative folder is taken relative to the suite file; names and hf: ids stay as they are."""
    if spec.startswith("hf:"):
        return spec
    candidate = (path.parent / spec).expanduser()
    return str(candidate.resolve()) if candidate.is_dir() else spec


def load_suite(path: Path | str) -> Suite:
    """Read and check a suite file."""
    from beirx.evaluate.plan import read_config

    path = Path(path)
    data = read_config(path)
    unknown = set(data) - _KEYS
    _check(path, not unknown, f"unknown keys {sorted(unknown)}; expected some of {sorted(_KEYS)}")
    tables = _sections(path, data)
    _check(path, isinstance(data.get("name"), str) and data["name"].strip(), "'name' (the benchmark's name) is required")
    languages = _strings(path, data.get("languages"), "languages")
    source = str(data.get("source_language", "en"))
    _check(path, source not in languages, f"'languages' contains the source language {source!r}")
    datasets = data.get("datasets")
    _check(path, isinstance(datasets, list) and datasets, "'datasets' must be a non-empty list")
    parsed = []
    for entry in datasets:
        entry = {"name": entry} if isinstance(entry, str) else entry
        _check(path, isinstance(entry, dict) and isinstance(entry.get("name"), str),
               f"each dataset needs a 'name', got {entry!r}")
        extra = set(entry) - {"name", "languages", "split"}
        _check(path, not extra, f"dataset {entry['name']!r}: unknown keys {sorted(extra)}")
        own = _strings(path, entry["languages"], "languages") if "languages" in entry else languages
        parsed.append(SuiteDataset(_dataset_spec(path, entry["name"]), own, entry.get("split")))
    specs = [d.spec for d in parsed]
    _check(path, len(set(specs)) == len(specs), "a dataset is listed twice")
    output = Path(data.get("output") or path.stem)
    return Suite(path=path.resolve(), name=data["name"].strip(), output=(path.parent / output).resolve(),
                 languages=languages, datasets=parsed, source_language=source, description=data.get("description"),
                 reference=data.get("reference"),
                 contacts=_strings(path, data["contacts"], "contacts") if "contacts" in data else None,
                 tables=tables, **{section: None if table is None else _SECTIONS[section](**table)
                                   for section, table in tables.items()})
