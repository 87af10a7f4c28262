"""``beirx publish dataset|results``: export a dataset or a results folder and push it to the Hub.

The token is whatever ``huggingface_hub`` finds (``HF_TOKEN`` or the ``hf auth login`` store);
beirx never takes it as an argument, so it never lands in shell history, logs or results files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from beirx.cli.flags import add_options, given
from beirx.cli.types import output_dir
from beirx.artifacts.results import ResultsDocument
from beirx.errors import BeirxError
from beirx.publish import verification
from beirx.redact import redact_url


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--repo", required=True, help="Hub repository ORG/NAME (a dataset repository)")
    common.add_argument("--private", action="store_true", help="create the repository as private")
    common.add_argument("--dry-run", action="store_true", help="write the folder and card, push nothing")
    common.add_argument("--endpoint", default=None,
                        help="Hub URL for self-hosted hubs (default: $HF_ENDPOINT or huggingface.co)")

    ds = sub.add_parser("dataset", parents=[common], help="export a BEIR dataset in the Hub/MTEB layout and push it",
                        description="Export corpus/queries/qrels as parquet configs with a dataset card, then push.")
    ds.add_argument("path", metavar="DATASET", help="BEIR folder, catalogue name or hf:ORG/NAME")
    ds.add_argument("--lang", default="en", help="the dataset's language (ISO 639-1, default en)")
    add_options(ds.add_argument_group("sample_creation (machine-translated and verified)"), verification.OPTIONS)
    ds.add_argument("--output", type=output_dir, default=None,
                    help="export folder (default: $BEIRX_HOME/hub/exports/ORG/NAME)")

    res = sub.add_parser("results", parents=[common], help="push a folder of beirx results with a results card",
                         description="Render README.md (tables per dataset and language) into DIR and push DIR.")
    res.add_argument("path", metavar="DIR", type=Path, help="folder holding beirx results JSON files (and runs)")
    res.add_argument("--title", default=None, help="card title (default: the repository name)")


def collect_results(folder: Path) -> list[tuple[str, ResultsDocument]]:
    """``(relative_path, document)`` for every beirx results JSON under ``folder``; other JSON files are
    skipped, a malformed results file stops with its name and the bad field."""
    found = []
    for path in sorted(folder.rglob("*.json")):
        doc = ResultsDocument.load_if_any(path)
        if doc is not None:
            found.append((path.relative_to(folder).as_posix(), doc))
    return found


def _dataset(args) -> int:
    from beirx.data.cache import cache_dir
    from beirx.data.resolve import resolve_dataset
    from beirx.paths import confined
    from beirx.publish.hub import export_dataset, local_files, push_folder

    dataset = resolve_dataset(args.path, lang=args.lang)
    out = args.output or confined(cache_dir("hub") / "exports", *args.repo.split("/"))
    export_dataset(dataset, out, repo_id=args.repo, **given(args, verification.OPTIONS))
    files = local_files(out)
    print(f"exported {dataset.name} ({dataset.lang}) to {out}: {len(files)} files")
    if args.dry_run:
        print("\n".join(f"  {f}" for f in files))
        print("dry run: nothing pushed")
        return 0
    url = push_folder(out, args.repo, private=args.private, endpoint=args.endpoint,
                      commit_message=f"beirx: {dataset.name} ({dataset.lang})")
    print(f"pushed to {args.repo}: {redact_url(url)}")
    return 0


def _results(args) -> int:
    from beirx import __version__
    from beirx.atomic import atomic_writer
    from beirx.publish.cards import render_results_card
    from beirx.publish.hub import local_files, push_folder

    folder = args.path
    if not folder.is_dir():
        raise BeirxError(f"{folder}: not a folder")
    results = collect_results(folder)
    if not results:
        raise BeirxError(f"{folder}: no beirx results JSON files (schema beirx.results/...) found")
    card = render_results_card(results, title=args.title or args.repo.split("/")[-1], beirx_version=__version__)
    with atomic_writer(folder / "README.md") as fh:
        fh.write(card)
    print(f"wrote {folder / 'README.md'} ({len(results)} results files, {len(local_files(folder))} files to push)")
    if args.dry_run:
        print("dry run: nothing pushed")
        return 0
    url = push_folder(folder, args.repo, private=args.private, endpoint=args.endpoint, stale_dirs=(),
                      commit_message="beirx: results")
    print(f"pushed to {args.repo}: {redact_url(url)}")
    return 0


def run(args) -> int:
    from beirx.paths import check_repo_id

    check_repo_id(args.repo)  # it becomes a folder name and a Hub URL
    return _dataset(args) if args.what == "dataset" else _results(args)
