"""``beirx validate PATH [--against SOURCE]``: exit 0 when the dataset is sound, 1 otherwise."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="BEIR folder to check, or hf:ORG/NAME (or hf:/local/copy) of a Hub dataset")
    parser.add_argument("--against", type=Path, default=None,
                        help="source dataset: also check that IDs and qrels are identical (for translations)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args) -> int:
    from beirx.data.validate import validate_dataset

    path = Path(args.path)
    if args.path.startswith("hf:"):  # as every other command takes it: the converted BEIR folder is checked
        from beirx.data.resolve import resolve_dataset

        path = resolve_dataset(args.path).root
        print(f"{args.path}: {path}")
    report = validate_dataset(path, against=args.against)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return 0 if report.ok else 1
    for name, count in report.counts.items():
        if name != "compared_with":
            print(f"{name:>24}: {count}")
    for warning in report.warnings:
        print(f"warning: {warning}")
    for error in report.errors[:50]:
        print(f"error: {error}")
    if len(report.errors) > 50:
        print(f"... and {len(report.errors) - 50} more errors")
    verdict = "OK" if report.ok else f"INVALID ({len(report.errors)} errors)"
    suffix = f"; IDs and qrels identical to {args.against}" if args.against and report.ok else ""
    print(f"{args.path}: {verdict}{suffix}")
    return 0 if report.ok else 1
