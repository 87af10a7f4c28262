"""``beirx eval``: evaluate retrievers, fusions and rerankers on a dataset, language pair and split.

Systems come from the command line (``--retriever`` (repeatable), ``--fusion``, ``--reranker``,
``--first-stage``) or from a grid config (``--config grid.toml``, see :mod:`beirx.evaluate.grid`).
Every first-stage system on the command line is evaluated; each ``--fusion`` method fuses all of them;
each ``--reranker`` reranks every first-stage system and fusion (or only ``--first-stage``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from beirx.errors import BeirxError

_FUSION_METHODS = ("rrf", "arithmetic", "geometric", "harmonic", "linear")  # beirx.evaluate.fusion.METHODS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", help="catalogue name (e.g. scifact), a local BEIR folder, or hf:ORG/NAME")
    parser.add_argument("--lang", "--corpus-lang", dest="lang", default="en",
                        help="language of the corpus and qrels, and of the analyzer (ISO 639-1, default en)")
    parser.add_argument("--query-lang", default=None,
                        help="language of the queries when it differs from --lang (cross-lingual pair; same IDs)")
    parser.add_argument("--query-dataset", default=None,
                        help="where the --query-lang queries are (default: --dataset in --query-lang; "
                             "required when --dataset is a folder)")
    parser.add_argument("--retriever", action="append", default=None,
                        help="first-stage retriever: bm25 (default), dense or elasticsearch; repeat to evaluate "
                             "(and fuse) several")
    parser.add_argument("--config", type=Path, default=None,
                        help="a grid of systems x datasets x languages (.toml/.yaml) instead of the flags above")
    parser.add_argument("--split", default=None, help="qrels split (default: the catalogue's test split, else 'test')")
    parser.add_argument("--output", type=Path, default=None, help="folder for run and results files (default results)")
    parser.add_argument("--top-k", type=int, default=1000, help="documents retrieved per query (default 1000)")
    parser.add_argument("--ignore-identical-ids", action=argparse.BooleanOptionalAction, default=None,
                        help="drop documents whose ID equals the query ID (default: from the catalogue)")
    bm25 = parser.add_argument_group("bm25")
    bm25.add_argument("--k1", type=float, default=1.2, help="BM25 k1 (default 1.2, Elasticsearch's)")
    bm25.add_argument("--b", type=float, default=0.75, help="BM25 b (default 0.75)")
    bm25.add_argument("--fields", choices=("flat", "multifield"), default="multifield",
                      help="flat: title+text in one field; multifield: best_fields with tie_breaker 0.5 (default)")
    dense = parser.add_argument_group("dense")
    dense.add_argument("--model", help="sentence-transformers model folder or Hub id (default: the language pack's)")
    dense.add_argument("--model-revision", help="Hub commit/branch/tag of --model")
    dense.add_argument("--query-prompt", help="text put before each query (default: the model's 'query' prompt; '' = none)")
    dense.add_argument("--passage-prompt", help="text put before each document (default: the model's; '' = none)")
    dense.add_argument("--similarity", choices=("cosine", "dot"), help="default: the model's similarity function")
    dense.add_argument("--search", choices=("exact", "faiss"), default="exact",
                       help="exact: chunked numpy search in bounded memory (default); faiss: IndexFlatIP in RAM")
    dense.add_argument("--max-length", type=int, help="tokens per text (default: the model's max_seq_length)")
    dense.add_argument("--batch-size", type=int, default=32, help="encoding batch size (default 32)")
    dense.add_argument("--device", help="cpu, cuda, cuda:1 ... for dense encoders and rerankers (default: cuda when available)")
    fuse = parser.add_argument_group("fusion")
    fuse.add_argument("--fusion", action="append", choices=_FUSION_METHODS, default=None,
                      help="fuse all first-stage systems; repeat for several methods")
    fuse.add_argument("--normalization", choices=("min_max", "l2", "none"), default="min_max",
                      help="score normalisation before a score-based fusion (default min_max)")
    fuse.add_argument("--weights", help="comma-separated weights, one per first-stage system (default equal)")
    fuse.add_argument("--rrf-k", type=int, default=60, help="RRF constant k (default 60, Cormack et al. 2009)")
    rerank = parser.add_argument_group("reranking")
    rerank.add_argument("--reranker", action="append", default=None,
                        help="reranker name; repeat to compare several on identical candidates")
    rerank.add_argument("--reranker-model", action="append", default=None,
                        help="model of each --reranker, in the same order (default: the language pack's)")
    rerank.add_argument("--rerank-depth", type=int, default=100, help="first-stage documents reranked (default 100)")
    rerank.add_argument("--first-stage", default=None,
                        help="what the rerankers rerank: a TREC run file, or one of the first-stage systems "
                             "(bm25, dense, or a --fusion method); default: each of them")
    parser.add_argument("--no-index-cache", action="store_true",
                        help="recompute indexes, embeddings and runs instead of loading cached ones")
    parser.add_argument("--mteb-results", type=Path, default=None, metavar="DIR",
                        help="also write MTEB-format results ({model}/{revision}/{task}.json) under DIR")
    parser.add_argument("--mteb-task", default=None,
                        help="MTEB task name for --mteb-results (default: the catalogue's, English only)")
    from beirx.evaluate.retrievers import elasticsearch as es_retriever  # light: no client import here

    es_retriever.add_cli_arguments(parser.add_argument_group("elasticsearch (--retriever elasticsearch)"))


def _retriever_params(name: str, args) -> dict:
    if name == "bm25":
        return {"k1": args.k1, "b": args.b, "fields": args.fields}
    if name == "elasticsearch":
        from beirx.evaluate.retrievers.elasticsearch import params_from_args

        return params_from_args(args)
    if name == "dense":
        params = {"model": args.model, "revision": args.model_revision, "query_prompt": args.query_prompt,
                  "passage_prompt": args.passage_prompt, "similarity": args.similarity,
                  "max_length": args.max_length, "device": args.device}
        params = {k: v for k, v in params.items() if v is not None}
        if args.batch_size != 32:
            params["batch_size"] = args.batch_size
        if args.search != "exact":
            params["search"] = args.search
        return params
    return {}


def _weights(text: str | None) -> list[float] | None:
    if not text:
        return None
    try:
        return [float(w) for w in text.split(",")]
    except ValueError:
        raise BeirxError(f"--weights must be comma-separated numbers, e.g. 0.3,0.7; got {text!r}") from None


def build_systems(args) -> list:
    """The systems the command-line flags describe, first stages first."""
    from beirx.evaluate.experiment import FusionSpec, RerankSpec, RunFileSpec, SystemSpec
    from beirx.evaluate.rerankers import RERANKERS
    from beirx.evaluate.retrievers import RETRIEVERS

    run_file = Path(args.first_stage) if args.first_stage and Path(args.first_stage).is_file() else None
    names = args.retriever or ([] if run_file else ["bm25"])
    if len(set(names)) != len(names):
        raise BeirxError("each --retriever may be given once; use --config for several variants of one retriever")
    for name in names:
        if name not in RETRIEVERS:
            raise BeirxError(f"unknown retriever {name!r}; choose one of: {', '.join(RETRIEVERS.names())}")
    firsts = {name: SystemSpec(name, _retriever_params(name, args)) for name in names}
    if run_file:
        firsts[str(run_file)] = RunFileSpec(run_file)
    weights = _weights(args.weights)
    inputs = list(firsts.values())
    for method in args.fusion or []:
        if len(inputs) < 2:
            raise BeirxError("--fusion needs at least two first-stage systems (repeat --retriever)")
        firsts[method] = FusionSpec(inputs, method, args.normalization, weights, args.rrf_k)
    systems = list(firsts.values())
    rerankers = args.reranker or []
    models = args.reranker_model or []
    if models and len(models) != len(rerankers):
        raise BeirxError(f"{len(models)} --reranker-model for {len(rerankers)} --reranker: give one model per reranker")
    if rerankers:
        if args.first_stage and not run_file and args.first_stage not in firsts:
            raise BeirxError(f"--first-stage {args.first_stage!r} is neither a file nor one of: {', '.join(firsts)}")
        bases = [firsts[str(run_file) if run_file else args.first_stage]] if args.first_stage else list(firsts.values())
        for i, name in enumerate(rerankers):
            if name not in RERANKERS:
                raise BeirxError(f"unknown reranker {name!r}; choose one of: {', '.join(RERANKERS.names()) or 'none'}")
            params = {"model": models[i]} if models else {}
            if args.device:
                params["device"] = args.device
            systems += [RerankSpec(base, name, params, args.rerank_depth) for base in bases]
    return systems


def format_table(rows: list[tuple[str, dict[str, float]]], metrics=("NDCG@10", "MRR@10", "Recall@100")) -> str:
    """A compact fixed-width table: one row per system."""
    width = max([len("system")] + [len(name) for name, _ in rows])
    lines = ["system".ljust(width) + "".join(f"  {m:>10}" for m in metrics)]
    for name, values in rows:
        lines.append(name.ljust(width) + "".join(f"  {values.get(m, float('nan')):>10.4f}" for m in metrics))
    return "\n".join(lines)


def _run_config(args) -> int:
    from beirx.evaluate.grid import load_config, main_table, run_grid

    flags = [f for f, v in (("--dataset", args.dataset), ("--retriever", args.retriever), ("--fusion", args.fusion),
                            ("--reranker", args.reranker), ("--first-stage", args.first_stage),
                            ("--query-lang", args.query_lang)) if v]
    if flags:
        raise BeirxError(f"--config describes datasets and systems itself; drop {', '.join(flags)}")
    grid = load_config(args.config)
    output = args.output or grid.output or Path("results")
    rows = run_grid(grid, output, show_progress=sys.stderr.isatty(), use_cache=not args.no_index_cache)
    print(format_table(main_table(rows)))
    print(f"results: {output}/ (summary.tsv, summary.json)")
    return 0


def _resolve_pair(args):
    from beirx.data.resolve import resolve_dataset

    dataset = resolve_dataset(args.dataset, lang=args.lang)
    query_lang = args.query_lang or args.lang
    if args.query_dataset:
        return dataset, resolve_dataset(args.query_dataset, lang=query_lang)
    if query_lang == args.lang:
        return dataset, None
    if Path(args.dataset).expanduser().is_dir():
        raise BeirxError(f"--dataset is a folder: pass the {query_lang!r} version's folder with --query-dataset")
    return dataset, resolve_dataset(args.dataset, lang=query_lang)


def run(args) -> int:
    from beirx.data.catalogue import ignore_identical_ids_for, test_split_for
    from beirx.evaluate.experiment import Stages, result_stem, run_experiment
    from beirx.language_packs import get_pack

    if args.config:
        return _run_config(args)
    if not args.dataset:
        raise BeirxError("--dataset is required (or describe a grid with --config)")
    systems = build_systems(args)
    dataset, query_dataset = _resolve_pair(args)
    split = args.split or test_split_for(dataset.name)
    ignore = args.ignore_identical_ids
    if ignore is None:
        ignore = ignore_identical_ids_for(dataset.name)
    pack = get_pack(args.lang)
    output = args.output or Path("results")
    stages = Stages(dataset, pack, split, args.top_k, ignore, show_progress=sys.stderr.isatty(),
                    use_cache=not args.no_index_cache, query_dataset=query_dataset)
    langs = dataset.lang if query_dataset is None else f"{query_dataset.lang}>{dataset.lang}"
    mteb_task = None
    if args.mteb_results:  # checked before any work: the task name must be known
        from beirx.publish.mteb_results import catalogue_task_name

        mteb_task = args.mteb_task or catalogue_task_name(dataset.name, dataset.lang)
    rows, paths = [], []
    for system in systems:
        outcome = run_experiment(dataset, pack, split, system, output, top_k=args.top_k, ignore_identical_ids=ignore,
                                 query_dataset=query_dataset, stages=stages)
        rows.append((f"{dataset.name} [{langs}/{split}] {system.tag()}", outcome.results["metrics"]))
        paths.append(outcome)
        if mteb_task:
            from beirx.publish.mteb_results import write_mteb_results

            print(f"MTEB results: {write_mteb_results(outcome.results, mteb_task, args.mteb_results)}")
    print(format_table(rows))
    if len(paths) == 1:
        print(f"run: {paths[0].run_path}\nresults: {paths[0].results_path}")
    else:
        stem = result_stem(dataset, split, "*", query_dataset.lang if query_dataset else None)
        print(f"runs and results: {output}/{stem}.trec|json ({len(paths)} systems)")
    return 0
