"""``beirx eval``: evaluate a retrieval system on a dataset, language and split."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from beirx.errors import BeirxError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True,
                        help="catalogue name (e.g. scifact), a local BEIR folder, or hf:ORG/NAME")
    parser.add_argument("--lang", default="en", help="dataset language version and analyzer (ISO 639-1, default en)")
    parser.add_argument("--retriever", default="bm25", help="first-stage retriever (default bm25)")
    parser.add_argument("--split", default=None, help="qrels split (default: the catalogue's test split, else 'test')")
    parser.add_argument("--output", type=Path, default=Path("results"), help="folder for run and results files")
    parser.add_argument("--top-k", type=int, default=1000, help="documents retrieved per query (default 1000)")
    parser.add_argument("--ignore-identical-ids", action=argparse.BooleanOptionalAction, default=None,
                        help="drop documents whose ID equals the query ID (default: from the catalogue)")
    bm25 = parser.add_argument_group("bm25")
    bm25.add_argument("--k1", type=float, default=1.2, help="BM25 k1 (default 1.2, Elasticsearch's)")
    bm25.add_argument("--b", type=float, default=0.75, help="BM25 b (default 0.75)")
    bm25.add_argument("--fields", choices=("flat", "multifield"), default="multifield",
                      help="flat: title+text in one field; multifield: best_fields with tie_breaker 0.5 (default)")
    parser.add_argument("--no-index-cache", action="store_true", help="rebuild indexes instead of loading cached ones")


def _system_params(args) -> dict:
    if args.retriever == "bm25":
        return {"k1": args.k1, "b": args.b, "fields": args.fields}
    return {}


def format_table(rows: list[tuple[str, dict[str, float]]], metrics=("NDCG@10", "MRR@10", "Recall@100")) -> str:
    """A compact fixed-width table: one row per system."""
    width = max([len("system")] + [len(name) for name, _ in rows])
    lines = ["system".ljust(width) + "".join(f"  {m:>10}" for m in metrics)]
    for name, values in rows:
        lines.append(name.ljust(width) + "".join(f"  {values.get(m, float('nan')):>10.4f}" for m in metrics))
    return "\n".join(lines)


def run(args) -> int:
    from beirx.data.catalogue import ignore_identical_ids_for, test_split_for
    from beirx.data.resolve import resolve_dataset
    from beirx.evaluate.experiment import SystemSpec, run_experiment
    from beirx.evaluate.retrievers import RETRIEVERS
    from beirx.language_packs import get_pack

    if args.retriever not in RETRIEVERS:
        raise BeirxError(f"unknown retriever {args.retriever!r}; choose one of: {', '.join(RETRIEVERS.names())}")
    dataset = resolve_dataset(args.dataset, lang=args.lang)
    split = args.split or test_split_for(dataset.name)
    ignore = args.ignore_identical_ids
    if ignore is None:
        ignore = ignore_identical_ids_for(dataset.name)
    system = SystemSpec(args.retriever, _system_params(args))
    outcome = run_experiment(dataset, get_pack(args.lang), split, system, args.output, top_k=args.top_k,
                             ignore_identical_ids=ignore, show_progress=sys.stderr.isatty(),
                             use_cache=not args.no_index_cache)
    label = f"{dataset.name} [{dataset.lang}/{split}] {system.tag()}"
    print(format_table([(label, outcome.results["metrics"])]))
    print(f"run: {outcome.run_path}\nresults: {outcome.results_path}")
    return 0
