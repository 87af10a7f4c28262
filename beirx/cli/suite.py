"""``beirx suite build|status SUITE.toml``: a benchmark suite (datasets x languages) built end to end.

``build`` runs subset -> translate -> quality -> publish for every dataset and language and writes the MTEB
benchmark (see :mod:`beirx.suites.config` for the file, :mod:`beirx.suites.orchestrate` for the steps); rerun
after an interruption, it skips what is done and resumes the rest. ``status`` lists the steps done so far.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from beirx.cli import show_progress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("build", "status"), help="build (or resume) the suite, or show its state")
    parser.add_argument("suite", type=Path, metavar="SUITE", help="the suite file (.toml)")
    parser.add_argument("--no-index-cache", action="store_true", help="recompute indexes and embeddings")


def _print_steps(steps, what: str) -> None:
    for s in steps:
        where = " ".join(x for x in (s.dataset and Path(s.dataset).name, s.language and f"[{s.language}]") if x)
        shown = {k: v for k, v in s.details.items() if v not in (None, [], {})}
        print(f"{what:>8}  {s.step:<9} {where:<28} {s.seconds:>8.1f} s  {shown}")


def run(args) -> int:
    from beirx.artifacts.suite import SuiteState
    from beirx.suites.config import load_suite

    suite = load_suite(args.suite)
    if args.action == "status":
        path = SuiteState.path_in(suite.output)
        state = SuiteState.load(path) if path.is_file() else None
        if state is None or not state.steps:
            print(f"{suite.name}: nothing built yet ({suite.output})")
            return 0
        _print_steps(state.steps, "done")
        print(f"{suite.name}: {len(state.steps)} steps done; state in {path}")
        return 0
    from beirx.suites.orchestrate import build_suite

    builder = build_suite(suite, show_progress=show_progress(args), use_cache=not args.no_index_cache)
    _print_steps(builder.skipped, "skipped")
    _print_steps(builder.ran, "ran")
    print(f"{suite.name}: built in {suite.output} ({len(builder.ran)} steps ran, {len(builder.skipped)} were done "
          f"earlier); MTEB benchmark: {suite.output / 'mteb' / 'benchmark.py'}")
    return 0
