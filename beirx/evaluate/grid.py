"""Experiment grids from a config file: systems x datasets x languages in one ``beirx eval --config``.

A config (TOML, or YAML with the same keys) looks like::

    output = "results/grid"          # optional; --output overrides
    split = "test"                   # optional; default: each dataset's test split from the catalogue
    top_k = 1000                     # optional
    languages = ["en", "pl", "pl:en"]   # "Q:C" = queries in Q against the corpus and qrels in C

    [[datasets]]
    name = "scifact"                 # catalogue name, or a folder
    # label = "scifact"              # optional: the name in results (default: catalogue or folder name)
    paths = { pl = "/data/scifact-pl" }   # optional: folders for some languages
    # languages = [...]              # optional: overrides the top-level list for this dataset

    [[systems]]
    name = "bm25"
    retriever = "bm25"               # other keys are the retriever's parameters (k1, b, fields ...)

    [[systems]]
    name = "e5"
    retriever = "dense"
    model = "intfloat/multilingual-e5-small"

    [[systems]]
    name = "hybrid"
    fusion = "rrf"                   # or arithmetic/geometric/harmonic/linear (+ normalization, weights)
    inputs = ["bm25", "e5"]

    [[systems]]
    name = "e5>ce"
    reranker = "cross-encoder"       # other keys are the reranker's parameters (model ...)
    first_stage = "e5"
    depth = 100

    [[systems]]
    name = "external"
    run_file = "runs/splade.trec"    # a TREC run used as a system (e.g. as a first stage)

``datasets`` may also be a list of plain names. Systems refer to each other by name, so a first stage is
computed once per dataset and language and shared by every fusion and reranker built on it; indexes,
embeddings, first-stage runs and reranked runs are also cached on disk, so rerunning a grid (or growing
it) recomputes only what is new. Every dataset and language is resolved before anything runs, so a
missing translation fails in seconds rather than after hours of encoding.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.atomic import atomic_writer, write_json
from beirx.errors import BeirxError, DataError
from beirx.evaluate.experiment import (FusionSpec, Outcome, RerankSpec, RunFileSpec, Stages, System, SystemSpec,
                                       run_experiment)

log = logging.getLogger(__name__)

_TOP_KEYS = {"output", "split", "top_k", "languages", "datasets", "systems", "ignore_identical_ids"}
_FUSION_KEYS = {"name", "fusion", "inputs", "normalization", "weights", "rrf_k"}
_RERANK_KEYS = {"name", "reranker", "first_stage", "depth"}


@dataclass(frozen=True)
class LanguagePair:
    query: str
    corpus: str

    @property
    def label(self) -> str:
        return self.corpus if self.query == self.corpus else f"{self.query}>{self.corpus}"


@dataclass
class DatasetEntry:
    spec: str
    name: str | None = None
    paths: dict[str, str] = field(default_factory=dict)
    languages: list[LanguagePair] = field(default_factory=list)


@dataclass
class Grid:
    path: Path
    datasets: list[DatasetEntry]
    systems: dict[str, System]
    output: Path | None = None
    split: str | None = None
    top_k: int = 1000
    ignore_identical_ids: bool | None = None


@dataclass
class Row:
    dataset: str
    languages: str
    split: str
    system: str
    metrics: dict[str, float]
    results_path: Path


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise DataError(path, "config file not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".toml":
            try:
                import tomllib
            except ImportError:  # Python 3.10
                import tomli as tomllib
            data = tomllib.loads(text)
        elif path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            raise DataError(path, "config must be .toml, .yaml or .yml")
    except DataError:
        raise
    except Exception as exc:  # tomllib.TOMLDecodeError, yaml.YAMLError: both say where
        raise DataError(path, f"cannot parse config: {exc}") from exc
    if not isinstance(data, dict):
        raise DataError(path, "config must be a table/mapping at the top level")
    return data


def _pair(path: Path, value: Any) -> LanguagePair:
    if isinstance(value, dict) and set(value) == {"query", "corpus"}:
        return LanguagePair(str(value["query"]), str(value["corpus"]))
    if isinstance(value, str) and value.strip():
        query, _, corpus = value.strip().partition(":")
        return LanguagePair(query, corpus or query)
    raise DataError(path, f"a language must be 'xx', 'query:corpus' or {{query, corpus}}, got {value!r}")


def _dataset(path: Path, value: Any, languages: list[LanguagePair]) -> DatasetEntry:
    if isinstance(value, str):
        return DatasetEntry(spec=value, languages=languages)
    if not isinstance(value, dict) or "name" not in value:
        raise DataError(path, f"each dataset needs a 'name' (catalogue name or folder), got {value!r}")
    unknown = set(value) - {"name", "paths", "languages", "label"}
    if unknown:
        raise DataError(path, f"dataset {value['name']!r}: unknown keys {sorted(unknown)}")
    own = [_pair(path, v) for v in value["languages"]] if "languages" in value else languages
    return DatasetEntry(spec=str(value["name"]), name=value.get("label"),
                        paths={str(k): str(v) for k, v in (value.get("paths") or {}).items()}, languages=own)


def _systems(path: Path, entries: Any) -> dict[str, System]:
    if not isinstance(entries, list) or not entries:
        raise DataError(path, "'systems' must be a non-empty list of tables")
    raw: dict[str, dict] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("name"):
            raise DataError(path, f"every system needs a 'name', got {entry!r}")
        if entry["name"] in raw:
            raise DataError(path, f"two systems are named {entry['name']!r}")
        kinds = [k for k in ("retriever", "fusion", "reranker", "run_file") if k in entry]
        if len(kinds) != 1:
            raise DataError(path, f"system {entry['name']!r} needs exactly one of retriever, fusion, reranker, "
                                  f"run_file (got {kinds or 'none'})")
        raw[entry["name"]] = entry
    built: dict[str, System] = {}

    def build(name: str, chain: tuple[str, ...]) -> System:
        if name in built:
            return built[name]
        if name not in raw:
            raise DataError(path, f"system {chain[-1]!r} refers to {name!r}, which is not defined")
        if name in chain:
            raise DataError(path, f"systems refer to each other in a cycle: {' -> '.join(chain + (name,))}")
        entry = dict(raw[name])
        chain = chain + (name,)
        if "retriever" in entry:
            retriever = entry.pop("retriever")
            entry.pop("name")
            system: System = SystemSpec(retriever, entry, name=name)
        elif "run_file" in entry:
            extra = set(entry) - {"name", "run_file"}
            if extra:
                raise DataError(path, f"system {name!r}: unknown keys {sorted(extra)}")
            run_file = Path(entry["run_file"])
            system = RunFileSpec(run_file if run_file.is_absolute() else path.parent / run_file, name=name)
        elif "fusion" in entry:
            extra = set(entry) - _FUSION_KEYS
            if extra:
                raise DataError(path, f"system {name!r}: unknown keys {sorted(extra)} for a fusion")
            inputs = entry.get("inputs")
            if not isinstance(inputs, list) or len(inputs) < 2:
                raise DataError(path, f"fusion {name!r} needs 'inputs': a list of at least two system names")
            try:
                system = FusionSpec([build(str(i), chain) for i in inputs], entry["fusion"],
                                    entry.get("normalization", "min_max"), entry.get("weights"),
                                    int(entry.get("rrf_k", 60)), name=name)
            except BeirxError as exc:
                if isinstance(exc, DataError):
                    raise
                raise DataError(path, f"system {name!r}: {exc}") from exc
        else:
            first = entry.get("first_stage")
            if not first:
                raise DataError(path, f"reranker system {name!r} needs 'first_stage' (a system name)")
            params = {k: v for k, v in entry.items() if k not in _RERANK_KEYS}
            system = RerankSpec(build(str(first), chain), entry["reranker"], params,
                                int(entry.get("depth", 100)), name=name)
        built[name] = system
        return system

    return {name: build(name, ()) for name in raw}


def load_config(path: Path | str) -> Grid:
    """Parse and check a grid config; every error names the file."""
    path = Path(path)
    data = _read(path)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise DataError(path, f"unknown top-level keys {sorted(unknown)}; expected some of {sorted(_TOP_KEYS)}")
    languages = [_pair(path, v) for v in data.get("languages", ["en"])]
    datasets = data.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        raise DataError(path, "'datasets' must be a non-empty list")
    output = data.get("output")
    if output is not None:
        output = Path(output) if Path(output).is_absolute() else path.parent / output
    return Grid(path=path, datasets=[_dataset(path, d, languages) for d in datasets],
                systems=_systems(path, data.get("systems")), output=output, split=data.get("split"),
                top_k=int(data.get("top_k", 1000)), ignore_identical_ids=data.get("ignore_identical_ids"))


def resolve(entry: DatasetEntry, lang: str):
    """The ``lang`` version of a grid dataset: its folder from ``paths`` if given, else resolved by name."""
    from beirx.data.dataset import BeirDataset
    from beirx.data.resolve import resolve_dataset

    spec = entry.paths.get(lang)
    if spec is None and lang != "en" and Path(entry.spec).expanduser().is_dir():
        raise BeirxError(f"dataset {entry.spec} is a folder: give the {lang!r} version's folder in "
                         f"paths = {{ {lang} = \"...\" }}")
    dataset = resolve_dataset(spec or entry.spec, lang=lang)
    name = entry.name or (dataset.name if spec is None else Path(entry.spec).name)
    return BeirDataset(dataset.root, name=name, lang=lang, source=dataset.source)


def run_grid(grid: Grid, output_dir: Path, show_progress: bool = True, use_cache: bool = True) -> list[Row]:
    """Run every system on every dataset and language pair; write per-system files and a summary."""
    from beirx.data.catalogue import ignore_identical_ids_for, test_split_for
    from beirx.language_packs import get_pack

    plan = []
    for entry in grid.datasets:
        for pair in entry.languages:
            corpus = resolve(entry, pair.corpus)
            queries = resolve(entry, pair.query) if pair.query != pair.corpus else None
            plan.append((corpus, queries, pair))
    rows: list[Row] = []
    for corpus, queries, pair in plan:
        split = grid.split or test_split_for(corpus.name)
        ignore = grid.ignore_identical_ids
        if ignore is None:
            ignore = ignore_identical_ids_for(corpus.name)
        pack = get_pack(pair.corpus)
        stages = Stages(corpus, pack, split, grid.top_k, ignore, show_progress, use_cache, query_dataset=queries)
        for name, system in grid.systems.items():
            log.info("%s [%s/%s] %s", corpus.name, pair.label, split, name)
            outcome: Outcome = run_experiment(corpus, pack, split, system, output_dir, top_k=grid.top_k,
                                              ignore_identical_ids=ignore, show_progress=show_progress,
                                              use_cache=use_cache, query_dataset=queries, stages=stages)
            rows.append(Row(corpus.name, pair.label, split, name, outcome.results["metrics"], outcome.results_path))
    write_summary(rows, output_dir)
    return rows


def write_summary(rows: list[Row], output_dir: Path) -> None:
    """``summary.tsv`` (one line per dataset, languages and system) and ``summary.json`` in ``output_dir``."""
    metrics = sorted({m for r in rows for m in r.metrics})
    with atomic_writer(Path(output_dir) / "summary.tsv") as fh:
        fh.write("\t".join(["dataset", "languages", "split", "system", *metrics, "results"]) + "\n")
        for r in rows:
            values = [f"{r.metrics.get(m, float('nan')):.6f}" for m in metrics]
            fh.write("\t".join([r.dataset, r.languages, r.split, r.system, *values, r.results_path.name]) + "\n")
    write_json(Path(output_dir) / "summary.json",
               [{"dataset": r.dataset, "languages": r.languages, "split": r.split, "system": r.system,
                 "metrics": r.metrics, "results": r.results_path.name} for r in rows])


def main_table(rows: list[Row]) -> list[tuple[str, dict[str, float]]]:
    """Rows for :func:`beirx.cli.eval.format_table`."""
    return [(f"{r.dataset} [{r.languages}/{r.split}] {r.system}", r.metrics) for r in rows]
