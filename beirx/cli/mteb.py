"""``beirx mteb task|results``: a dataset as an MTEB retrieval task; beirx results in MTEB's format."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from beirx.argtypes import output_dir, positive_int
from beirx.publish import verification


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    task = sub.add_parser("task", help="build, register and write an MTEB retrieval task for a dataset",
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
                      help="also run mteb.evaluate with this sentence-transformers model (name or folder)")
    task.add_argument("--results", type=Path, default=Path("mteb-results"),
                      help="MTEB results folder for --evaluate (default ./mteb-results)")
    task.add_argument("--batch-size", type=positive_int, default=32, help="encoding batch size for --evaluate")
    verification.add_arguments(task.add_argument_group("sample_creation (machine-translated and verified)"))

    res = sub.add_parser("results", help="convert beirx results JSON files to MTEB's results format",
                         description="Write {model}/{revision}/{task}.json files that mteb.TaskResult loads.")
    res.add_argument("files", metavar="RESULTS_JSON", nargs="+", type=Path, help="beirx results files")
    res.add_argument("--task", required=True, help="MTEB task name the results are for (e.g. SciFact-PL)")
    res.add_argument("--output", type=output_dir, required=True, help="MTEB results folder (results/ of the results repo)")
    res.add_argument("--model", default=None, help="model name (default: the system recorded in each file)")
    res.add_argument("--revision", default=None, help="model revision (default: recorded, else no_revision_available)")


def _task(args) -> int:
    from beirx.data.resolve import resolve_dataset
    from beirx.publish.mteb_task import build_spec, hub_revision, local_task, mteb_encoder, write_task_file

    dataset = resolve_dataset(args.path, lang=args.lang)
    thresholds = {"min_review_items": args.min_review_items, "min_review_alpha": args.min_review_alpha}
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
    return _task(args) if args.what == "task" else _results(args)
