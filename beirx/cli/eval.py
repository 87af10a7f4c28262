"""``beirx eval``: evaluate retrievers, fusions and rerankers on datasets, language pairs and a split.

Systems come from the flags (``--retriever`` (repeatable), ``--fusion``, ``--reranker``, ``--first-stage``)
or from a grid file (``--config grid.toml``); both become one :class:`~beirx.evaluate.plan.Plan` run by
:func:`~beirx.evaluate.runner.run_plan`. Every first-stage system on the command line is evaluated; each
``--fusion`` method fuses all of them; each ``--reranker`` reranks every first-stage system and fusion (or
only ``--first-stage``). Each retriever's and reranker's flags are generated from its declared options
(``OPTIONS``, :mod:`beirx.cli.flags`); the component receives the values given as a plain dictionary.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from beirx.cli import show_progress
from beirx.cli.flags import add_options, given
from beirx.cli.types import output_dir, positive_int, unit_weight
from beirx.errors import BeirxError
from beirx.evaluate import defaults, fusion


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from beirx.evaluate.rerankers import RERANKERS
    from beirx.evaluate.retrievers import RETRIEVERS

    parser.add_argument("--dataset", help="catalogue name (e.g. scifact), a local BEIR folder, or hf:ORG/NAME")
    parser.add_argument("--lang", "--corpus-lang", dest="lang", default=None,
                        help="language of the corpus and qrels, and of the analyzer (ISO 639-1; default: the "
                             "dataset's own, else en)")
    parser.add_argument("--query-lang", default=None,
                        help="language of the queries when it differs from --lang (cross-lingual pair; same IDs)")
    parser.add_argument("--query-dataset", default=None,
                        help="where the --query-lang queries are (default: --dataset in --query-lang; "
                             "required when --dataset is a folder)")
    parser.add_argument("--retriever", action="append", default=None,
                        help=f"first-stage retriever: {', '.join(RETRIEVERS.names())} (default bm25); repeat to "
                             "evaluate (and fuse) several")
    parser.add_argument("--config", type=Path, default=None,
                        help="a grid of systems x datasets x languages (.toml/.yaml) instead of the flags above")
    parser.add_argument("--name", action="append", default=None,
                        help="label of each evaluated system, in order (default: a short readable tag)")
    parser.add_argument("--split", default=None, help="qrels split (default: the catalogue's test split, else 'test')")
    parser.add_argument("--output", type=output_dir, default=None,
                        help=f"folder for run and results files (default {defaults.OUTPUT})")
    parser.add_argument("--top-k", type=positive_int, default=defaults.TOP_K,
                        help=f"documents retrieved per query (default {defaults.TOP_K})")
    parser.add_argument("--ignore-identical-ids", action=argparse.BooleanOptionalAction, default=None,
                        help="drop documents whose ID equals the query ID (default: from the catalogue)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1 ... for dense encoders and rerankers "
                                         "(default: cuda when available)")
    seen = {"--device"}  # the command's own flag, read by every component that declares a device option
    for name in RETRIEVERS.names():
        add_options(parser.add_argument_group(f"{name} (--retriever {name})"), RETRIEVERS.get(name).OPTIONS, seen=seen)
    fuse = parser.add_argument_group("fusion")
    fuse.add_argument("--fusion", action="append", choices=fusion.METHODS, default=None,
                      help="fuse all first-stage systems; repeat for several methods")
    add_options(fuse, fusion.OPTIONS)
    rerank = parser.add_argument_group("reranking")
    rerank.add_argument("--reranker", action="append", default=None,
                        help=f"reranker ({', '.join(RERANKERS.names())}); repeat to compare several on identical "
                             "candidates")
    rerank.add_argument("--reranker-model", action="append", default=None,
                        help="model of each --reranker, in the same order (default: the language's)")
    rerank.add_argument("--rerank-depth", type=positive_int, default=defaults.RERANK_DEPTH,
                        help=f"first-stage documents reranked (default {defaults.RERANK_DEPTH})")
    rerank.add_argument("--rerank-interpolation", type=unit_weight, default=None, metavar="W",
                        help="final score = W x the reranker's + (1 - W) x the first stage's, both min-max normalised "
                             "per query (default: the reranker's alone)")
    rerank.add_argument("--first-stage", default=None,
                        help="what the rerankers rerank: a TREC run file, or one of the first-stage systems "
                             "(bm25, dense, or a --fusion method); default: each of them")
    _add_reranker_options(parser, rerank, seen)
    parser.add_argument("--no-index-cache", action="store_true",
                        help="recompute indexes, embeddings and runs instead of loading cached ones")
    parser.add_argument("--report", action="store_true",
                        help="also write the benchmark report (tables, significance, plots, HTML; see beirx report) "
                             "of this run's results into OUTPUT/report")
    parser.add_argument("--mteb-results", type=output_dir, default=None, metavar="DIR",
                        help="also write MTEB-format results ({model}/{revision}/{task}.json) under DIR")
    parser.add_argument("--mteb-task", default=None,
                        help="MTEB task name for --mteb-results (default: the catalogue's, English only)")


def _add_reranker_options(parser: argparse.ArgumentParser, shared, seen: set[str]) -> None:
    """Each reranker's flags in its own group; a flag several rerankers declare (the LLM connection's) once, in
    ``shared``, its help naming them all."""
    from beirx.evaluate.rerankers import RERANKERS

    for name in RERANKERS.names():  # options declared for several rerankers with a help of their own
        add_options(shared, getattr(RERANKERS.get(name), "SHARED_OPTIONS", ()), seen=seen)
    owners: dict[str, list[str]] = {}
    for name in RERANKERS.names():
        for option in RERANKERS.get(name).OPTIONS:
            flag = option.flag_name()
            if flag is not None and flag not in seen:
                owners.setdefault(flag, []).append(name)
    for name in RERANKERS.names():
        for option in RERANKERS.get(name).OPTIONS:
            if len(owners.get(option.flag_name(), ())) > 1:
                add_options(shared, [option], owner=", ".join(owners[option.flag_name()]), seen=seen)
    for name in RERANKERS.names():
        add_options(parser.add_argument_group(f"{name} (--reranker {name})"), RERANKERS.get(name).OPTIONS,
                    owner=name, seen=seen)


def component_params(args: argparse.Namespace, kind: str, name: str) -> dict:
    """The constructor parameters of retriever or reranker ``name`` from its flags given."""
    from beirx.evaluate.rerankers import RERANKERS
    from beirx.evaluate.retrievers import RETRIEVERS

    if kind == "retriever":
        cls = RETRIEVERS.get(name)
        if name == "splade" and args.model and "dense" in (args.retriever or []):
            raise BeirxError("--model would name both the dense and the SPLADE model: describe the two systems in a "
                             "--config grid file instead")
        return cls.flag_params(given(args, cls.flag_options()))
    cls = RERANKERS.get(name)
    return cls.flag_params(given(args, cls.OPTIONS))


def systems_from_args(args: argparse.Namespace) -> dict:
    """The systems the flags describe (:func:`beirx.evaluate.plan.systems_from_flags`)."""
    from beirx.evaluate.plan import systems_from_flags

    return systems_from_flags(vars(args), lambda kind, name: component_params(args, kind, name))


def plan_from_args(args: argparse.Namespace):
    """The plan the flags describe (:func:`beirx.evaluate.plan.plan_from_flags`)."""
    from beirx.evaluate.plan import plan_from_flags

    return plan_from_flags(vars(args), lambda kind, name: component_params(args, kind, name))


def format_table(rows: list[tuple[str, dict[str, float]]], metrics=("NDCG@10", "MRR@10", "Recall@100")) -> str:
    """A compact fixed-width table: one row per system."""
    width = max([len("system")] + [len(name) for name, _ in rows])
    lines = ["system".ljust(width) + "".join(f"  {m:>10}" for m in metrics)]
    for name, values in rows:
        lines.append(name.ljust(width) + "".join(f"  {values.get(m, float('nan')):>10.4f}" for m in metrics))
    return "\n".join(lines)


def _plan(args):
    from beirx.evaluate.plan import plan_from_config

    if not args.config:
        return plan_from_args(args)
    flags = [f for f, v in (("--dataset", args.dataset), ("--retriever", args.retriever), ("--fusion", args.fusion),
                            ("--reranker", args.reranker), ("--first-stage", args.first_stage),
                            ("--query-lang", args.query_lang), ("--name", args.name)) if v]
    if flags:
        raise BeirxError(f"--config describes datasets and systems itself; drop {', '.join(flags)}")
    plan = plan_from_config(args.config)
    if args.output:
        plan.output = args.output
    return plan


def _mteb_writer(args, plan):
    """Writes MTEB-format results after each system; every task name is checked before any work."""
    from beirx.evaluate.runner import resolve_target
    from beirx.paths import check_segment
    from beirx.publish.mteb_results import catalogue_task_name, write_mteb_results

    if args.mteb_task:
        check_segment(args.mteb_task, "MTEB task name")  # it becomes a file name: checked before any work
    else:
        for target in plan.datasets:
            for pair in target.pairs:
                catalogue_task_name(resolve_target(target, pair.corpus).name, pair.corpus)

    def write(outcome) -> None:
        results = outcome.results
        task = args.mteb_task or catalogue_task_name(results.dataset.name, results.dataset.language)
        print(f"MTEB results: {write_mteb_results(results, task, args.mteb_results)}")

    return write


def run(args) -> int:
    from beirx.evaluate.runner import run_plan

    plan = _plan(args)
    on_result = _mteb_writer(args, plan) if args.mteb_results else None
    rows = run_plan(plan, show_progress=show_progress(args), use_cache=not args.no_index_cache, on_result=on_result)
    print(format_table([(f"{r.dataset} [{r.languages}/{r.split}] {r.system}", r.metrics) for r in rows]))
    output = plan.output or Path(defaults.OUTPUT)
    if len(rows) == 1:
        print(f"run: {rows[0].run_path}\nresults: {rows[0].results_path}")
    else:
        summary = "; summary.tsv, summary.json" if plan.summary else ""
        print(f"runs and results: {output}/ ({len(rows)} systems{summary})")
    if args.report:
        from beirx.report.build import build_report

        report = build_report([r.results_path for r in rows], output / "report")
        print(f"report: {report.html}")
    return 0
