"""``beirx report``: tables across languages and systems, significance, efficiency, plots; Markdown, LaTeX,
CSV and one self-contained HTML page.

    beirx report RESULTS... [--output DIR] [--metric NDCG@10] [--baseline bm25] [--permutations 10000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from beirx.cli.types import (metric_name, metric_names, non_negative_int, output_dir, positive_int, seed,
                            significance_level)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS", nargs="+", type=Path,
                        help="results JSON files or folders of them (e.g. a grid's output folder)")
    parser.add_argument("--output", type=output_dir, default=Path("report"), help="report folder (default ./report)")
    parser.add_argument("--metric", type=metric_name, default="NDCG@10",
                        help="metric of the systems table, plots and quality analysis (default NDCG@10): MEASURE@k, "
                             "MEASURE one of NDCG, MAP, Recall, P, MRR, R_cap, Hole, k one of 1, 3, 5, 10, 100, 1000")
    parser.add_argument("--language-metrics", type=metric_names, default=["NDCG@10", "Recall@100"],
                        help="comma-separated metrics of the languages table (default NDCG@10,Recall@100)")
    parser.add_argument("--baseline", default="bm25",
                        help="baseline system label (default bm25; else the first BM25 retriever)")
    parser.add_argument("--source-lang", default=None,
                        help="source language of the translations (default: from the results / translation.json)")
    parser.add_argument("--test", choices=["permutation", "t"], default="permutation",
                        help="test whose Holm-corrected p-values mark significance (default permutation; "
                             "both are computed and listed)")
    parser.add_argument("--alpha", type=significance_level, default=0.05, help="significance level (default 0.05)")
    parser.add_argument("--permutations", type=positive_int, default=10_000,
                        help="resamples of the randomization test (default 10000)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the randomization test and bootstrap (default 0)")
    parser.add_argument("--bootstrap", type=non_negative_int, default=0, metavar="N",
                        help="add paired bootstrap 95%% confidence intervals with N resamples (default off)")
    parser.add_argument("--quality", type=Path, action="append", default=[], metavar="QUALITY_JSON",
                        help="a quality report kept away from its translated dataset (repeatable)")
    parser.add_argument("--no-plots", action="store_true", help="tables only")
    parser.add_argument("--title", default="beirx report", help="title of the report")


def run(args: argparse.Namespace) -> int:
    from beirx.report.build import build_report

    report = build_report(args.results, args.output, metric=args.metric, language_metrics=args.language_metrics,
                          baseline=args.baseline, source_language=args.source_lang, test=args.test,
                          alpha=args.alpha, permutations=args.permutations, seed=args.seed,
                          bootstrap=args.bootstrap, quality=[str(p) for p in args.quality],
                          plots=not args.no_plots, title=args.title)
    for name in ("languages", "systems"):
        if name in report.tables:
            print((args.output / "tables" / f"{name}.md").read_text(encoding="utf-8"))
    for analysis in report.damage:
        chosen = analysis.chosen
        print(f"{analysis.family} {analysis.source_pair} -> {analysis.target_pair}: {len(analysis.damaged)} damaged of "
              f"{analysis.queries} queries; best-predicting signal: "
              + (f"{chosen.signal} ({chosen.view}): {chosen.reason}" if chosen else "none defined"))
    if report.damage:
        print(f"damage: {args.output / 'damage.json'} (beirx review --damage aims a stratum of the sample by it)")
    print(f"report: {report.html}  ({len(report.tables)} tables, {len(report.figures)} figures; "
          f"Markdown, LaTeX and CSV in {args.output})")
    return 0
