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
    pool = ["bm25:fields=flat", "dense:intfloat/multilingual-e5-small"]   # optional: this is the default
    depth = 100                       # optional: default 100 (shrinks to fit max_docs)
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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.checksums import cache_key
from beirx.subsets.recipe import DEPTH, MAX_DOCS
from beirx.errors import DataError

QUALITY_STEPS = ("validate", "report")
_KEYS = {"name", "description", "reference", "contacts", "output", "languages", "source_language", "datasets",
         "subset", "translate", "quality", "publish", "mteb"}
_SECTIONS = {
    "subset": {"queries", "pool", "depth", "max_docs", "seed", "stratify", "check", "tau_threshold"},
    "translate": {"translator", "model", "options", "batch_size", "memory", "cost", "fields", "max_cost"},
    "quality": {"steps", "encoder", "max_items"},
    "publish": {"repo", "private"},
    "mteb": {"evaluate", "batch_size"},
}


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
    source_language: str = "en"
    description: str | None = None
    reference: str | None = None
    contacts: list[str] | None = None
    subset: dict[str, Any] | None = None
    translate: dict[str, Any] = field(default_factory=dict)
    quality: dict[str, Any] = field(default_factory=dict)
    publish: dict[str, Any] = field(default_factory=dict)
    mteb: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self, section: str, *inputs: Any) -> str:
        """What a step depends on: its section of the file and its inputs (checksums)."""
        return cache_key(section, getattr(self, section), *inputs)

    @property
    def quality_steps(self) -> list[str]:
        """The quality steps: as listed, else validate (and report when an encoder is named)."""
        default = list(QUALITY_STEPS) if self.quality.get("encoder") else ["validate"]
        return list(self.quality.get("steps", default))


def _check(path: Path, ok: bool, message: str) -> None:
    if not ok:
        raise DataError(path, message)


def _strings(path: Path, value: Any, key: str) -> list[str]:
    _check(path, isinstance(value, list) and all(isinstance(v, str) and v for v in value),
           f"'{key}' must be a list of strings, got {value!r}")
    return list(value)


def _int(path: Path, table: dict, key: str, default: Any, minimum: int) -> Any:
    value = table.get(key, default)
    _check(path, value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= minimum),
           f"'{key}' must be an integer >= {minimum}, got {value!r}")
    return value


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
    for section, keys in _SECTIONS.items():
        table = data.get(section, {})
        _check(path, isinstance(table, dict), f"[{section}] must be a table")
        extra = set(table) - keys
        _check(path, not extra, f"[{section}]: unknown keys {sorted(extra)}; expected some of {sorted(keys)}")
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
    subset = data.get("subset")
    if subset is not None:
        _int(path, subset, "queries", None, 1)
        _int(path, subset, "depth", DEPTH, 0)
        _int(path, subset, "max_docs", MAX_DOCS, 1)
        _int(path, subset, "seed", 0, -2 ** 63)
        for key in ("pool", "check"):
            if key in subset:
                _strings(path, subset[key], f"subset.{key}")
    translate = data.get("translate", {})
    _check(path, isinstance(translate.get("translator"), str), "[translate] needs 'translator' (e.g. apertium)")
    _check(path, isinstance(translate.get("options", {}), dict), "[translate] 'options' must be a table")
    _int(path, translate, "batch_size", None, 1)
    quality = data.get("quality", {})
    steps = _strings(path, quality["steps"], "quality.steps") if quality.get("steps") else []
    _check(path, set(steps) <= set(QUALITY_STEPS), f"[quality] steps must be among {', '.join(QUALITY_STEPS)}")
    _check(path, "report" not in steps or isinstance(quality.get("encoder"), str),
           "[quality] the 'report' step needs 'encoder' (a multilingual sentence-transformers model)")
    mteb = data.get("mteb", {})
    if "evaluate" in mteb:
        _strings(path, mteb["evaluate"], "mteb.evaluate")
    output = Path(data.get("output") or path.stem)
    return Suite(path=path.resolve(), name=data["name"].strip(), output=(path.parent / output).resolve(),
                 languages=languages, datasets=parsed, source_language=source, description=data.get("description"),
                 reference=data.get("reference"),
                 contacts=_strings(path, data["contacts"], "contacts") if "contacts" in data else None,
                 subset=subset, translate=translate, quality=quality, publish=data.get("publish", {}), mteb=mteb)
