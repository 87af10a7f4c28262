"""``beirx datasets``: the catalogue, what is cached (source and translated versions), and downloads."""

from __future__ import annotations

import argparse
import json

from beirx.data import catalogue
from beirx.data.cache import beirx_home, dataset_dir, translated_dirs
from beirx.data.catalogue import DatasetInfo
from beirx.data.extract import beir_layout_problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cached", action="store_true", help="list only datasets with a copy in the cache")
    parser.add_argument("--download", action="append", metavar="NAME", default=[],
                        help="download and extract a catalogue dataset (repeatable; 'cqadupstack' fetches all 12 "
                             "subsets)")
    parser.add_argument("--json", action="store_true", help="machine-readable output (every catalogue field)")
    parser.add_argument("--base-url", metavar="URL", default=None,
                        help="where archives are fetched from (default: $BEIRX_BEIR_URL, else BEIR's server)")


def run(args) -> int:
    from beirx.data.resolve import ensure_cached

    if args.download:
        for name in args.download:
            members = catalogue.GROUPS.get(name.strip().lower())
            info = catalogue.get(members[0] if members else name)
            path = ensure_cached(info, base_url=args.base_url)
            print(f"{name}: {path.parent if members else path}")
        return 0
    rows = [describe(info, args.base_url) for info in catalogue.CATALOGUE]
    if args.cached:
        rows = [row for row in rows if row["cached"] or row["translations"]]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    print(format_table(rows))
    print(f"\ncache: {beirx_home()}   (set $BEIRX_HOME to move it)")
    if not args.cached:
        print("not downloadable: " + ", ".join(r["name"] for r in rows if not r["downloadable"])
              + "  (--download NAME says how to obtain them)")
    return 0


def describe(info: DatasetInfo, base_url: str | None = None) -> dict:
    """Every catalogue field of ``info`` plus its URL and what the cache holds for it."""
    folder = dataset_dir(info.name)
    cached = folder.is_dir() and not beir_layout_problems(folder)
    translations = {lang: str(path) for lang, path in translated_dirs(info.name).items()
                    if not beir_layout_problems(path)}
    return {"name": info.name, "title": info.title, "task": info.task, "domain": info.domain,
            "num_docs": info.num_docs, "num_queries": info.num_queries, "test_split": info.test_split,
            "license": info.license, "ignore_identical_ids": info.ignore_identical_ids,
            "downloadable": info.downloadable, "url": info.url(base_url), "md5": info.md5, "sha256": info.sha256,
            "hf_id": info.hf_id, "hf_qrels_id": info.hf_qrels_id, "beir_pl_id": info.beir_pl_id,
            "mteb_task": info.mteb_task, "zero_shot": info.zero_shot, "access": info.access or None,
            "cached": cached, "path": str(folder) if cached else None, "translations": translations}


def format_table(rows: list[dict]) -> str:
    """One line per dataset; the (long) cache path comes last so the other columns stay aligned."""
    header = ("name", "domain", "docs", "queries", "split", "licence", "ign-ids", "dl", "translated", "cached")
    cells = [header] + [(r["name"], r["domain"], f"{r['num_docs']:,}", f"{r['num_queries']:,}", r["test_split"],
                         r["license"], "yes" if r["ignore_identical_ids"] else "no",
                         "yes" if r["downloadable"] else "no", ",".join(r["translations"]) or "-",
                         r["path"] or "no") for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header) - 1)]
    right = {2, 3}  # numbers
    lines = []
    for row in cells:
        parts = [row[i].rjust(w) if i in right else row[i].ljust(w) for i, w in enumerate(widths)]
        lines.append("  ".join(parts + [row[-1]]).rstrip())
    return "\n".join(lines)
