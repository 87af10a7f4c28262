"""A suite of beirx datasets as one MTEB ``Benchmark``: task files, a benchmark file beside them, and its results
table.

mteb 2.x describes a benchmark as ``mteb.Benchmark(name, tasks, description, reference, citation, contacts)``
(``mteb/benchmarks/benchmark.py``), whose ``tasks`` are task instances. Its own benchmarks are module-level
objects found by ``mteb.get_benchmark``, which has no registration call; a benchmark outside mteb is an object
you import. So beirx writes, into one folder:

- one task file per dataset (:func:`beirx.publish.mteb_task.task_source`, an ``AbsTaskRetrieval`` subclass);
- ``benchmark.py``, which loads those task files from its own folder and defines ``BENCHMARK``;

``load_benchmark(folder)`` imports it (``mteb.evaluate(model, BENCHMARK)`` runs it), and the file can go into
an mteb pull request next to the task files. As for task files, every user-given string enters the benchmark
file as a literal only, and the file is checked with :mod:`ast` (never executed) before it is written.

:func:`results_table` reads an MTEB results folder (``ResultCache`` layout: ``results/{model}/{revision}/
{task}.json``, written by ``mteb.evaluate`` and by :func:`beirx.publish.mteb_results.write_mteb_results` for
beirx's own systems) with ``ResultCache.load_results(tasks=benchmark)`` and renders each model's main score
(nDCG@10) per task and ``Benchmark.get_score``'s ``Mean(Task)``.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.atomic import atomic_writer
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.publish import cards
from beirx.publish.mteb_task import (TaskSpec, build_spec, check_class_name, local_task, require_mteb,
                                     write_task_file)
from beirx.publish.python_literals import citation_literal, literal, string_literal

log = logging.getLogger(__name__)

BENCHMARK_FILE = "benchmark.py"
RESULTS_TABLE = "results.md"


@dataclass
class BenchmarkSpec:
    """Every ``mteb.Benchmark`` argument beirx sets, as plain values, and the task files it loads."""

    name: str
    description: str
    citation: str
    tasks: list[tuple[str, str]]
    """``(task file name, class name)`` per task, in order."""
    reference: str | None = None
    contacts: list[str] | None = None

    def benchmark_kwargs(self) -> dict[str, Any]:
        kwargs = {"name": self.name, "description": self.description, "reference": self.reference,
                  "citation": self.citation, "contacts": self.contacts}
        return {k: v for k, v in kwargs.items() if v is not None}


def task_file_name(spec: TaskSpec) -> str:
    """``SciFact-PLSubset`` -> ``scifact_plsubset.py`` (the name ``beirx mteb task`` writes by default)."""
    return re.sub(r"[^0-9A-Za-z]+", "_", spec.name).lower().strip("_") + ".py"


def write_benchmark(datasets: list[BeirDataset], output: Path | str, *, name: str, description: str | None = None,
                    reference: str | None = None, contacts: list[str] | None = None,
                    hub: dict[str, tuple[str, str]] | None = None,
                    export_dirs: dict[str, Path] | None = None) -> tuple[Path, list[TaskSpec]]:
    """Write a task file per dataset and ``benchmark.py`` into ``output``; return the benchmark file and the specs.

    Each dataset is exported in MTEB's layout (``export_dirs[folder]``, else beirx's cache) and its task points
    there, so the benchmark runs offline; ``hub[folder] = (repo, revision)`` points a task at its Hub
    repository instead (for a pull request to mteb).
    """
    if not datasets:
        raise BeirxError("a benchmark needs at least one dataset")
    output = Path(output)
    hub, export_dirs = hub or {}, export_dirs or {}
    specs: list[TaskSpec] = []
    for dataset in datasets:
        key = str(dataset.root)
        _, spec = local_task(dataset, export_dirs.get(key))
        if key in hub:
            repo, revision = hub[key]
            spec = build_spec(dataset, dataset_path=repo, dataset_revision=revision, name=spec.name,
                              reference=f"https://huggingface.co/datasets/{repo}")
        if any(s.name == spec.name for s in specs):
            raise BeirxError(f"two datasets of the benchmark would both be MTEB task {spec.name}")
        write_task_file(spec, output / task_file_name(spec))
        specs.append(spec)
    languages = sorted({lang for s in specs for lang in s.eval_langs})
    summary = description or (f"{name}: {len(specs)} retrieval tasks ({', '.join(languages)}) built with beirx: "
                              + ", ".join(s.name for s in specs) + ".")
    bench = BenchmarkSpec(name=name, description=summary, reference=reference, contacts=contacts,
                          citation=f"\n{cards.citations()}\n",
                          tasks=[(task_file_name(s), check_class_name(s.class_name)) for s in specs])
    path = output / BENCHMARK_FILE
    source = benchmark_source(bench)
    with atomic_writer(path) as fh:
        fh.write(source)
    log.info("wrote %s (%d tasks) and its task files in %s", path, len(specs), output)
    return path, specs


def benchmark_source(spec: BenchmarkSpec) -> str:
    """``benchmark.py``: loads the task files beside it and defines ``BENCHMARK`` (checked before returning)."""
    kwargs = spec.benchmark_kwargs()
    lines = [f"    {key}={citation_literal(value) if key == 'citation' else literal(value)}," for key, value in kwargs.items()]
    lines.insert(1, "    tasks=[_task(file_name, class_name) for file_name, class_name in TASK_FILES],")
    doc = string_literal(f"{spec.name}: an MTEB benchmark generated by beirx. The task files it loads sit in this folder; "
               "run it with mteb.evaluate(model, BENCHMARK).")
    source = (
        f"{doc}\n\n"
        "import importlib.util\n"
        "from pathlib import Path\n\n"
        "from mteb import Benchmark\n\n"
        f"TASK_FILES = {literal(spec.tasks)}\n\n\n"
        "def _task(file_name, class_name):\n"
        "    path = Path(__file__).resolve().parent / file_name\n"
        "    module_spec = importlib.util.spec_from_file_location(path.stem, path)\n"
        "    module = importlib.util.module_from_spec(module_spec)\n"
        "    module_spec.loader.exec_module(module)\n"
        "    return getattr(module, class_name)()\n\n\n"
        "BENCHMARK = Benchmark(\n" + "\n".join(lines) + "\n)\n"
    )
    check_benchmark_source(source, spec)
    return source


def check_benchmark_source(source: str, spec: BenchmarkSpec) -> None:
    """Parse ``source`` (never run it): ``TASK_FILES`` and every ``Benchmark`` keyword but ``tasks`` must be
    literals equal to ``spec``, and the file holds nothing but the docstring, imports, ``TASK_FILES``, ``_task``
    and ``BENCHMARK``."""
    tree = ast.parse(source)
    found: dict[str, Any] = {}
    ok = True
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target == "TASK_FILES":
                found["tasks"] = [tuple(t) for t in ast.literal_eval(node.value)]
            elif target == "BENCHMARK" and isinstance(node.value, ast.Call) and not node.value.args:
                for kw in node.value.keywords:
                    if kw.arg != "tasks":
                        found[kw.arg] = ast.literal_eval(kw.value)
            else:
                ok = False
        elif isinstance(node, ast.FunctionDef):
            ok = ok and node.name == "_task"
        elif not isinstance(node, (ast.Import, ast.ImportFrom)) and not (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is tree.body[0]):
            ok = False
    expected = {**spec.benchmark_kwargs(), "tasks": [tuple(t) for t in spec.tasks]}
    if not ok or found != expected:
        raise BeirxError(f"generated benchmark file for {spec.name!r} does not round-trip to its values")


def load_benchmark(folder_or_file: Path | str):
    """The ``BENCHMARK`` defined by a ``benchmark.py`` (or the one in a folder), its tasks loaded from beside it."""
    require_mteb()
    path = Path(folder_or_file)
    path = path / BENCHMARK_FILE if path.is_dir() else path
    if not path.is_file():
        raise BeirxError(f"{path}: no benchmark file (write one with  beirx mteb benchmark)")
    module_spec = importlib.util.spec_from_file_location(f"beirx_benchmark_{abs(hash(str(path.resolve())))}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.BENCHMARK


def evaluate_benchmark(benchmark, model_name: str, results_dir: Path | str, batch_size: int = 32) -> None:
    """``mteb.evaluate`` of a sentence-transformers model on every task; results in the ``ResultCache`` folder
    ``results_dir`` (tasks already there are not run again)."""
    mteb = require_mteb()
    from beirx.publish.mteb_task import mteb_encoder

    model, prompts = mteb_encoder(model_name)
    log.info("evaluating %s on %s with prompts %s", model_name, benchmark.name, prompts or "none")
    mteb.evaluate(model, benchmark, cache=mteb.ResultCache(results_dir), encode_kwargs={"batch_size": batch_size},
                  overwrite_strategy="only-missing", show_progress_bar=False)


def results_table(benchmark, results_dir: Path | str) -> tuple[list[str], list[list[Any]]]:
    """``(header, rows)``: per model, the main score of every task and ``Mean(Task)``, best mean first.

    ``get_score`` is asked for ``Mean(Task)`` alone: mteb's other default aggregations (``Mean(TaskType)``, the
    per-type means) read ``TaskResult.task``, which looks the task up by name in mteb's own registry, where a
    task built by beirx is not (the results are validated against the benchmark's task objects instead)."""
    mteb = require_mteb()
    from mteb.benchmarks.benchmark import BenchmarkAggregation

    results = mteb.ResultCache(results_dir).load_results(tasks=benchmark, require_model_meta=False,
                                                         include_remote=False)
    tasks = [task.metadata.name for task in benchmark.tasks]
    means = dataclasses.replace(benchmark, aggregations=(BenchmarkAggregation.MEAN_TASK,)).get_score(results)
    rows = []
    for model_result in results.join_revisions():
        scores = {r.task_name: r.get_score() for r in model_result.task_results}
        mean = means.get(model_result.model_name, {}).get("Mean(Task)")
        rows.append([model_result.model_name] + [scores.get(t) for t in tasks] + [mean])
    rows.sort(key=lambda r: -(r[-1] if r[-1] is not None else -1.0))
    return ["model", *tasks, "Mean(Task)"], rows


def write_results_table(benchmark, results_dir: Path | str, path: Path | str) -> Path:
    """The results table as Markdown (main score nDCG@10; – where a model has no result for a task)."""
    header, rows = results_table(benchmark, results_dir)
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for row in rows:
        cells = [row[0]] + ["–" if v is None else f"{float(v):.4f}" for v in row[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    text = (f"# {benchmark.name}: results\n\nMain score (nDCG@10) per task; Mean(Task) from "
            "mteb's Benchmark.get_score, only for models with every task.\n\n" + "\n".join(lines) + "\n")
    with atomic_writer(path) as fh:
        fh.write(text)
    return Path(path)
