"""``beirx mteb task|results|benchmark``: a dataset as an MTEB retrieval task; beirx results in MTEB's format; a
suite of datasets as one MTEB ``Benchmark`` with its results table."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from beirx.cli.flags import add_options, given
from beirx.cli.types import output_dir, positive_int
from beirx.options import defaults
from beirx.publish import verification


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    task = sub.add_parser("task", help="build and write an MTEB retrieval task for a dataset",
                          description="Export the dataset in MTEB's layout, build its TaskMetadata and "
                                      "AbsTaskRetrieval class, and write a standalone task file for an mteb PR.")
    task.add_argument("path", metavar="DATASET", help="BEIR folder, catalogue name or hf:ORG/NAME")
    task.add_argument("--lang", default="en", help="the dataset's language (ISO 639-1, default en)")
    task.add_argument("--name", default=None,
                      help="task name (default: the MTEB task it adapts + -LANG, e.g. SciFact-PL)")
    task.add_argument("--repo", default=None, help="Hub repository the dataset is published in (for the PR file)")
    task.add_argument("--revision", default=None, help="commit of --repo to pin (default: looked up on the Hub)")
    task.add_argument("--endpoint", default=None, help="Hub URL for the revision look-up (default: $HF_ENDPOINT)")
    task.add_argument("--export-dir", type=output_dir, default=None,
                      help="where the local MTEB-layout copy goes (default: $BEIRX_HOME/hub/mteb/...)")
    task.add_argument("--output", type=Path, default=None, help="task file to write (default: ./<task_name>.py)")
    task.add_argument("--evaluate", metavar="MODEL", default=None,
                      help="also run mteb.evaluate with this sentence-transformers model (name or folder), or "
                           "'bm25': beirx's BM25 with the --lang language pack (beirx.evaluate.mteb_bm25)")
    task.add_argument("--results", type=Path, default=Path("mteb-results"),
                      help="MTEB results folder for --evaluate (default ./mteb-results)")
    task.add_argument("--batch-size", type=positive_int, default=32, help="encoding batch size for --evaluate")
    add_options(task.add_argument_group("sample_creation (machine-translated and verified)"), verification.OPTIONS)

    res = sub.add_parser("results", help="convert beirx results JSON files to MTEB's results format",
                         description="Write {model}/{revision}/{task}.json files that mteb.TaskResult loads.")
    res.add_argument("files", metavar="RESULTS_JSON", nargs="+", type=Path, help="beirx results files")
    res.add_argument("--task", required=True, help="MTEB task name the results are for (e.g. SciFact-PL)")
    res.add_argument("--output", type=output_dir, required=True, help="MTEB results folder (results/ of the results repo)")
    res.add_argument("--model", default=None, help="model name (default: the system recorded in each file)")
    res.add_argument("--revision", default=None, help="model revision (default: recorded, else no_revision_available)")

    bench = sub.add_parser("benchmark", help="write an MTEB Benchmark of several datasets (a suite) and its results table",
                           description="Write one task file per dataset and benchmark.py (an mteb.Benchmark loading "
                                       "them) into --output; optionally evaluate models and write results.md.")
    bench.add_argument("datasets", metavar="DATASET", nargs="*", help="BEIR folders (translations) in the benchmark")
    bench.add_argument("--suite", type=Path, default=None,
                       help="a suite file: its translated datasets (built by beirx suite build) instead of DATASETs")
    bench.add_argument("--name", default=None, help="benchmark name (default: the suite's)")
    bench.add_argument("--description", default=None, help="description (default: generated from the tasks)")
    bench.add_argument("--reference", default=None, help="a URL about the benchmark")
    bench.add_argument("--contact", action="append", default=None, help="a maintainer (e.g. a GitHub handle)")
    bench.add_argument("--output", type=Path, default=None, help="folder (default ./mteb-benchmark, or the suite's mteb/)")
    bench.add_argument("--evaluate", metavar="MODEL", action="append", default=[],
                       help="run mteb.evaluate with this sentence-transformers model (repeatable)")
    bench.add_argument("--beirx-results", metavar="RESULTS", type=Path, nargs="+", default=[],
                       help="beirx results files or folders on the benchmark's datasets, added to the results table")
    bench.add_argument("--batch-size", type=positive_int, default=32, help="encoding batch size for --evaluate")


def _benchmark(args) -> int:
    from beirx.publish.mteb_benchmark import (RESULTS_TABLE, evaluate_benchmark, load_benchmark, write_benchmark,
                                              write_results_table)

    datasets, name, output = _benchmark_datasets(args)
    path, specs = write_benchmark(datasets, output, name=name, description=args.description,
                                  reference=args.reference, contacts=args.contact)
    print(f"benchmark {name}: {len(specs)} tasks ({', '.join(s.name for s in specs)}) -> {path}")
    if not (args.evaluate or args.beirx_results):
        return 0
    results = output / "results"
    if args.beirx_results:
        _convert_results(args.beirx_results, datasets, specs, results / "results")
    benchmark = load_benchmark(path)
    for model in args.evaluate:
        evaluate_benchmark(benchmark, model, results, args.batch_size)
    table = write_results_table(benchmark, results, output / RESULTS_TABLE)
    print(table.read_text(encoding="utf-8"))
    return 0


def _benchmark_datasets(args):
    """The datasets, the benchmark name and the output folder, from DATASETs or a suite's translations."""
    from beirx.data.dataset import BeirDataset
    from beirx.data.language import dataset_language
    from beirx.errors import BeirxError

    if args.suite:
        from beirx.artifacts.suite import SuiteState
        from beirx.suites.config import load_suite

        suite = load_suite(args.suite)
        state = SuiteState.load_optional(SuiteState.path_in(suite.output))
        done = [Path(s.output) for s in (state.steps if state else []) if s.step == "translate"]
        if not done:
            raise BeirxError(f"{args.suite}: no translated dataset yet; run  beirx suite build {args.suite}")
        folders, name = done, args.name or suite.name
        output = args.output or suite.output / "mteb"
    else:
        if not args.datasets or not args.name:
            raise BeirxError("name the datasets and --name (or pass --suite SUITE.toml)")
        folders, name, output = [Path(d) for d in args.datasets], args.name, args.output or Path("mteb-benchmark")
    return [BeirDataset(f, lang=dataset_language(str(f), None)[0]) for f in folders], name, output


def _convert_results(inputs, datasets, specs, target: Path) -> None:
    """beirx results on the benchmark's datasets into the results folder, one model per beirx system."""
    from beirx.artifacts.results import ResultsDocument
    from beirx.publish.mteb_results import write_mteb_results

    tasks = {(d.name, d.lang): s.name for d, s in zip(datasets, specs)}
    files = [p for item in inputs for p in (sorted(item.rglob("*.json")) if item.is_dir() else [item])]
    for path in files:
        doc = ResultsDocument.load_if_any(path) if path.is_file() else None
        task = tasks.get((doc.family, doc.corpus_language)) if doc else None
        if task is not None and doc.language_pair == doc.corpus_language:
            write_mteb_results(doc, task, target, model_name=f"beirx/{doc.system.tag}")


def _task(args) -> int:
    from beirx.data.resolve import resolve_dataset
    from beirx.publish.mteb_task import build_spec, hub_revision, local_task, mteb_encoder, write_task_file

    dataset = resolve_dataset(args.path, lang=args.lang)
    thresholds = {**defaults(verification.OPTIONS), **given(args, verification.OPTIONS)}
    cls, spec = local_task(dataset, args.export_dir, args.name, **thresholds)
    print(f"task {spec.name}: {spec.eval_langs[0]}, splits {', '.join(spec.eval_splits)}, "
          f"ignore_identical_ids={spec.ignore_identical_ids}, sample_creation={spec.sample_creation}")
    print(f"local data: {spec.dataset_path} (revision {spec.dataset_revision})")
    if args.repo:
        revision = args.revision or hub_revision(args.repo, args.endpoint)
        file_spec = build_spec(dataset, dataset_path=args.repo, dataset_revision=revision, name=spec.name,
                               reference=f"https://huggingface.co/datasets/{args.repo}", **thresholds)
    else:
        file_spec = spec
    output = args.output or Path(f"{re.sub(r'[^0-9A-Za-z]+', '_', spec.name).lower()}.py")
    write_task_file(file_spec, output)
    print(f"task file: {output}" + ("" if args.repo else
          "  (dataset path is local: pass --repo ORG/NAME [--revision SHA] for a file ready for an mteb PR)"))
    if args.evaluate:
        import mteb

        if args.evaluate == "bm25" and not Path(args.evaluate).is_dir():
            from beirx.evaluate.mteb_bm25 import model as bm25_model

            model = bm25_model(lang=args.lang)
            print(f"MTEB model: {model.mteb_model_meta.name} (the {args.lang} language pack's analyzer)")
        else:
            model, prompts = mteb_encoder(args.evaluate)
            print(f"prompts for MTEB: {prompts or 'none'}")
        result = mteb.evaluate(model, cls(), cache=mteb.ResultCache(args.results),
                               encode_kwargs={"batch_size": args.batch_size}, overwrite_strategy="always")
        for task_result in result.task_results:
            print(f"mteb.evaluate {args.evaluate}: {task_result.task_name} main score (nDCG@10) "
                  f"{task_result.get_score():.5f}; results in {args.results}")
    return 0


def _results(args) -> int:
    from beirx.artifacts.results import ResultsDocument
    from beirx.publish.mteb_results import write_mteb_results

    for path in args.files:
        doc = ResultsDocument.load(path)  # a malformed file: DataError naming the file and the field
        out = write_mteb_results(doc, args.task, args.output, model_name=args.model, revision=args.revision)
        print(f"{path} -> {out}")
    return 0


def run(args) -> int:
    return {"task": _task, "results": _results, "benchmark": _benchmark}[args.what](args)
