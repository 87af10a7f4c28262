"""``beirx validate PATH [--against SOURCE]``: exit 0 when the dataset is sound, 1 otherwise."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="BEIR folder to check")
    parser.add_argument("--against", type=Path, default=None,
                        help="source dataset: also check that IDs and qrels are identical (for translations)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args) -> int:
    from beirx.data.validate import validate_dataset

    report = validate_dataset(args.path, against=args.against)
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
