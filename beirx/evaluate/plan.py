"""One experiment plan: systems x datasets x language pairs, from ``beirx eval`` flags or from a grid file.

Both front doors build the same :class:`Plan`, and :func:`beirx.evaluate.runner.run_plan` runs it, so the
same experiment gives the same results documents whichever way it was described, and every default lives in
:mod:`beirx.evaluate.defaults`. Retrievers and rerankers declare their options once (``OPTIONS`` on their
classes: the flags are generated from them, a grid file is read by them), so adding a backend is one module
plus one registry line. The flags reach this module as plain values (:func:`plan_from_flags`), never argparse's
namespace.

A grid file (TOML, or YAML with the same keys)::

    output = "results/grid"          # optional; --output overrides
    split = "test"                   # optional; default: each dataset's test split from the catalogue
    top_k = 1000                     # optional
    languages = ["en", "pl", "pl2en"]   # "pl2en" = Polish queries against the English corpus and qrels

    [[datasets]]
    name = "scifact"                 # catalogue name, or a folder (the folder is the "en" version)
    # label = "scifact"              # optional: the name in results (default: catalogue or folder name)
    paths = { pl = "/data/scifact-pl" }   # optional: folders for some languages
    # languages = [...]              # optional: overrides the top-level list for this dataset

    [[systems]]
    name = "bm25"
    retriever = "bm25"               # other keys are the retriever's parameters (k1, b, fields, preset ...)

    [[systems]]
    name = "hybrid"
    fusion = "rrf"                   # or arithmetic/geometric/harmonic/linear (+ normalization, weights, rrf_k)
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
computed once per dataset and language pair and shared by every fusion and reranker built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.argtypes import OptionValueError, positive_int, unit_weight
from beirx.data.language_pair import LanguagePair
from beirx.errors import BeirxError, DataError
from beirx.evaluate import defaults, fusion
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, System, SystemSpec
from beirx.options import by_name
from beirx.path_problems import link_problem

_TOP_KEYS = {"output", "split", "top_k", "languages", "datasets", "systems", "ignore_identical_ids"}
_FUSION_KEYS = {"name", "fusion", "inputs", "normalization", "weights", "rrf_k"}
_RERANK_KEYS = {"name", "reranker", "first_stage", "depth", "interpolation"}
GRID_DICT = "<grid dict>"
"""What errors name when :func:`plan_from_config` is given a dict instead of a file."""


@dataclass
class DatasetTarget:
    """A dataset to evaluate in some language pairs.

    ``spec`` is a catalogue name, a folder or ``hf:ORG/NAME``; ``paths`` gives folders for some languages;
    a folder ``spec`` is the ``base_lang`` version; ``label`` names the dataset in results.
    """

    spec: str
    pairs: list[LanguagePair]
    paths: dict[str, str] = field(default_factory=dict)
    label: str | None = None
    base_lang: str = "en"
    lang_source: str = "default"
    """Where the corpus language came from, recorded in results: ``given`` (``--lang`` or a grid file's
    ``languages``), ``default`` (English, nothing said) or what the dataset states (``translation.json``)."""


@dataclass
class Plan:
    datasets: list[DatasetTarget]
    systems: dict[str, System]
    """Every system to evaluate, by a unique name, first stages before what is built on them."""
    output: Path | None = None
    split: str | None = None
    top_k: int = defaults.TOP_K
    ignore_identical_ids: bool | None = None
    source: str = "flags"
    """``flags`` or the grid file's path (for messages)."""
    summary: bool = False
    """Write ``summary.tsv``/``summary.json`` beside the per-system files (grids do)."""


# -- grid files -----------------------------------------------------------------------------------------------

def read_config(path: Path) -> dict[str, Any]:
    """A TOML or YAML file as a dict; errors (missing, unparsable, not a table) name the file."""
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
        try:
            return LanguagePair.parse(value)
        except BeirxError as exc:
            raise DataError(path, str(exc)) from None
    raise DataError(path, f"a language must be 'xx', 'QUERY2CORPUS' (e.g. pl2en) or {{query, corpus}}, got {value!r}")


def _stated(spec: str, pairs: list[LanguagePair], source: str) -> tuple[list[LanguagePair], str, str]:
    """``(pairs, base language, source)``: with no languages in the grid, what the dataset states
    (translation.json, dataset card) instead of English."""
    if source != "default":
        return pairs, "en", source
    from beirx.data.language import dataset_language

    lang, stated = dataset_language(spec, None)
    return ([LanguagePair.of(lang, None)], lang, stated) if stated != "default" else (pairs, "en", source)


def _dataset(path: Path, value: Any, pairs: list[LanguagePair], source: str) -> DatasetTarget:
    if isinstance(value, str):
        pairs, base, source = _stated(value, pairs, source)
        return DatasetTarget(spec=value, pairs=pairs, base_lang=base, lang_source=source)
    if not isinstance(value, dict) or "name" not in value:
        raise DataError(path, f"each dataset needs a 'name' (catalogue name or folder), got {value!r}")
    unknown = set(value) - {"name", "paths", "languages", "label"}
    if unknown:
        raise DataError(path, f"dataset {value['name']!r}: unknown keys {sorted(unknown)}")
    own = [_pair(path, v) for v in value["languages"]] if "languages" in value else pairs
    source = "given" if "languages" in value else source
    own, base, source = _stated(str(value["name"]), own, source)
    return DatasetTarget(spec=str(value["name"]), pairs=own, label=value.get("label"), lang_source=source,
                         base_lang=base, paths={str(k): str(v) for k, v in (value.get("paths") or {}).items()})


def _grid_systems(path: Path, entries: Any) -> dict[str, System]:
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
        try:
            system = _grid_system(path, name, entry, lambda ref: build(str(ref), chain))
        except BeirxError as exc:
            if isinstance(exc, DataError):
                raise
            raise DataError(path, f"system {name!r}: {exc}") from exc
        built[name] = system
        return system

    return {name: build(name, ()) for name in raw}


def _grid_system(path: Path, name: str, entry: dict, ref) -> System:
    """One ``[[systems]]`` entry; every parameter is checked as its flag checks it
    (:func:`beirx.evaluate.params.checked_params`)."""
    from beirx.argtypes import read_option
    from beirx.evaluate.params import checked_params
    from beirx.evaluate.rerankers import RERANKERS
    from beirx.evaluate.retrievers import RETRIEVERS

    if "retriever" in entry:
        retriever = entry.pop("retriever")
        entry.pop("name")
        if "interpolation" in entry:
            raise DataError(path, f"system {name!r}: 'interpolation' is a reranker's weight (in a system with "
                                  f"'reranker'), not a parameter of the retriever {retriever!r}")
        return SystemSpec(retriever, checked_params(RETRIEVERS.get(retriever), entry), name=name)
    if "run_file" in entry:
        extra = set(entry) - {"name", "run_file"}
        if extra:
            raise DataError(path, f"system {name!r}: unknown keys {sorted(extra)}")
        run_file = Path(entry["run_file"])
        return RunFileSpec(run_file if run_file.is_absolute() else path.parent / run_file, name=name)
    if "fusion" in entry:
        extra = set(entry) - _FUSION_KEYS
        if extra:
            raise DataError(path, f"system {name!r}: unknown keys {sorted(extra)} for a fusion")
        inputs = entry.get("inputs")
        if not isinstance(inputs, list) or len(inputs) < 2:
            raise DataError(path, f"fusion {name!r} needs 'inputs': a list of at least two system names")
        weights = entry.get("weights")
        if weights is not None and not isinstance(weights, list):
            raise DataError(path, f"fusion {name!r}: 'weights' must be a list of numbers, one per input")
        return FusionSpec([ref(i) for i in inputs], entry["fusion"], entry.get("normalization", defaults.NORMALIZATION),
                          weights, by_name(fusion.OPTIONS)["rrf_k"].read(entry.get("rrf_k", defaults.RRF_K)), name=name)
    first = entry.get("first_stage")
    if not first:
        raise DataError(path, f"reranker system {name!r} needs 'first_stage' (a system name)")
    first_stage = ref(first)
    interpolation = entry.get("interpolation")
    if interpolation is not None:  # read as --rerank-interpolation reads it (YAML's true is no weight)
        try:
            interpolation = unit_weight(str(interpolation))
        except OptionValueError:
            raise DataError(path, f"reranker system {name!r}: 'interpolation' is the reranker's weight, a number in "
                                  f"(0, 1], got {interpolation!r}") from None
    params = checked_params(RERANKERS.get(entry["reranker"]), {k: v for k, v in entry.items() if k not in _RERANK_KEYS})
    depth = read_option("depth", entry.get("depth", defaults.RERANK_DEPTH), positive_int)
    return RerankSpec(first_stage, entry["reranker"], params, depth, name=name, interpolation=interpolation)


def plan_from_config(path: Path | str | Mapping[str, Any]) -> Plan:
    """Parse and check a grid file; every error names the file.

    ``path`` may also be the grid itself, a dict with the file's keys (from Python or a notebook: the same
    plan without writing a file); errors then name ``<grid dict>`` and relative paths are relative to the
    working directory.
    """
    if isinstance(path, Mapping):
        data, path = dict(path), Path(GRID_DICT)
    else:
        path = Path(path)
        data = read_config(path)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise DataError(path, f"unknown top-level keys {sorted(unknown)}; expected some of {sorted(_TOP_KEYS)}")
    pairs = [_pair(path, v) for v in data.get("languages", ["en"])]
    datasets = data.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        raise DataError(path, "'datasets' must be a non-empty list")
    output = data.get("output")
    if output is not None:
        output = Path(output) if Path(output).is_absolute() else path.parent / output
    source = "given" if "languages" in data else "default"
    try:
        top_k = positive_int(str(data.get("top_k", defaults.TOP_K)))
    except OptionValueError as exc:
        raise DataError(path, f"option top_k: {exc}") from None
    return Plan(datasets=[_dataset(path, d, pairs, source) for d in datasets], systems=_grid_systems(path, data.get("systems")),
                output=output, split=data.get("split"), top_k=top_k,
                ignore_identical_ids=data.get("ignore_identical_ids"), source=str(path), summary=True)


def systems_from_config(path: Path | str) -> dict[str, System]:
    """Only the ``[[systems]]`` of a grid file (other keys are ignored), e.g. the systems a subset's ranking
    check compares; errors name the file."""
    path = Path(path)
    return _grid_systems(path, read_config(path).get("systems"))


# -- command-line flags ---------------------------------------------------------------------------------------

def _weights(text: str | None) -> list[float] | None:
    if not text:
        return None
    try:
        return [float(w) for w in text.split(",")]
    except ValueError:
        raise BeirxError(f"--weights must be comma-separated numbers, e.g. 0.3,0.7; got {text!r}") from None


def _first_stage_file(value: str | None, system_names: set[str]) -> Path | None:
    """``--first-stage`` as a run file, None when it names a system; a missing file or a folder is an error
    (never silently replaced by BM25)."""
    if not value or value in system_names:
        return None
    path = Path(value).expanduser()
    if path.is_file():
        return path
    if link_problem(path):
        raise DataError(path, "run file not found")  # the message says which link loops or leads nowhere
    what = "is a folder, not a run file" if path.exists() else "is neither an existing run file nor a system name"
    raise BeirxError(f"--first-stage {value!r} {what}; pass a TREC run file or one of: {', '.join(sorted(system_names))}")


def _value(flags: Mapping[str, Any], key: str, default: Any) -> Any:
    """``flags[key]``, ``default`` when it was not given."""
    value = flags.get(key)
    return default if value is None else value


def systems_from_flags(flags: Mapping[str, Any], params: Callable[[str, str], dict[str, Any]]) -> dict[str, System]:
    """The systems the flags describe: every first stage, each ``--fusion`` of all of them, then each
    ``--reranker`` on every first stage and fusion (or only on ``--first-stage``). ``flags`` holds the command's
    values by name (``retriever``, ``first_stage``, ``fusion`` ...; absent: not given); ``params("retriever" or
    "reranker", name)`` is that component's constructor parameters from its own flags."""
    from beirx.evaluate.retrievers import RETRIEVERS

    first_stage = flags.get("first_stage")
    run_file = _first_stage_file(first_stage, set(RETRIEVERS.names()) | set(fusion.METHODS))
    names = flags.get("retriever") or ([] if run_file else ["bm25"])
    if len(set(names)) != len(names):
        raise BeirxError("each --retriever may be given once; use --config for several variants of one retriever")
    firsts: dict[str, System] = {}
    for name in names:
        RETRIEVERS.get(name)  # an unknown name is refused naming the known ones
        firsts[name] = SystemSpec(name, params("retriever", name))
    if run_file:
        firsts[str(run_file)] = RunFileSpec(run_file)
    weights = _weights(flags.get("weights"))
    inputs = list(firsts.values())
    for method in flags.get("fusion") or []:
        if len(inputs) < 2:
            raise BeirxError("--fusion needs at least two first-stage systems (repeat --retriever)")
        firsts[method] = FusionSpec(inputs, method, _value(flags, "normalization", defaults.NORMALIZATION), weights,
                                    _value(flags, "rrf_k", defaults.RRF_K))
    systems = dict(firsts)
    rerankers = flags.get("reranker") or []
    models = flags.get("reranker_model") or []
    if models and len(models) != len(rerankers):
        raise BeirxError(f"{len(models)} --reranker-model for {len(rerankers)} --reranker: give one model per reranker")
    if rerankers:
        if first_stage and not run_file and first_stage not in firsts:
            raise BeirxError(f"--first-stage {first_stage!r} is neither a file nor one of: {', '.join(firsts)}")
        bases = [firsts[str(run_file) if run_file else first_stage]] if first_stage else list(firsts.values())
        for i, name in enumerate(rerankers):
            own = params("reranker", name)
            if models:
                own = {"model": models[i], **own}
            for base in bases:
                spec = RerankSpec(base, name, own, _value(flags, "rerank_depth", defaults.RERANK_DEPTH),
                                  interpolation=flags.get("rerank_interpolation"))
                systems[f"{spec.tag()}"] = spec
    return _named(systems, flags.get("name"))


def _named(systems: dict[str, System], names: list[str] | None) -> dict[str, System]:
    """Apply ``--name`` (one per evaluated system, in order) as each system's label and file tag."""
    if not names:
        return systems
    if len(names) != len(systems):
        listing = "; ".join(s.label() for s in systems.values())
        raise BeirxError(f"{len(names)} --name for {len(systems)} systems: give one name per system, in this "
                         f"order: {listing}")
    for system, name in zip(systems.values(), names):
        system.name = name
    return dict(zip(names, systems.values()))


def plan_from_flags(flags: Mapping[str, Any], params: Callable[[str, str], dict[str, Any]]) -> Plan:
    """The plan ``beirx eval --dataset ... --retriever ...`` describes (one dataset, one language pair); ``flags``
    and ``params`` as :func:`systems_from_flags` takes them."""
    if not flags.get("dataset"):
        raise BeirxError("--dataset is required (or describe a grid with --config)")
    from beirx.data.language import dataset_language

    dataset = flags["dataset"]
    lang, lang_source = dataset_language(dataset, flags.get("lang"))
    pair = LanguagePair.of(lang, flags.get("query_lang"))
    query_dataset = flags.get("query_dataset")
    paths = {pair.query: query_dataset} if query_dataset and pair.cross_lingual else {}
    is_folder = Path(dataset).expanduser().is_dir()
    if pair.cross_lingual and not paths and is_folder:
        raise BeirxError(f"--dataset is a folder: pass the {pair.query!r} version's folder with --query-dataset")
    target = DatasetTarget(spec=dataset, pairs=[pair], paths=paths, base_lang=lang, lang_source=lang_source)
    return Plan(datasets=[target], systems=systems_from_flags(flags, params), output=flags.get("output"),
                split=flags.get("split"), top_k=_value(flags, "top_k", defaults.TOP_K),
                ignore_identical_ids=flags.get("ignore_identical_ids"))
