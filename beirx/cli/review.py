"""``beirx review``: native speakers verify a sample of a translation in a web app; export and apply the result.

    beirx review DATASET --sample N [--seed S] [--damage DAMAGE_JSON] [--port P] [--host H] [--token]   # start
    beirx review export DATASET [--output FILE] [--min-adequacy A] [--min-fluency F]   # -> review/review.json
    beirx review apply DATASET [--annotator NAME] [--dry-run] [--force]   # corrections -> the dataset

DATASET is the translated folder (or catalogue name with ``--lang``). The sample is drawn once and kept in
``<DATASET>/review/review.sqlite`` with every rating; restarting the app resumes it.
"""

from __future__ import annotations

import argparse
import os
import secrets
from pathlib import Path
from urllib.parse import quote

from beirx.cli.types import port_number, positive_int, rating, seed
from beirx.errors import BeirxError

ACTIONS = ("export", "apply")
TOKEN_ENV = "BEIRX_REVIEW_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="DATASET|export|apply", help="the translated dataset to review, or an action")
    parser.add_argument("dataset", metavar="DATASET", nargs="?", help="the dataset of export/apply")
    parser.add_argument("--lang", help="language of the translation (default: from beirx translate's manifest)")
    serve = parser.add_argument_group("reviewing (beirx review DATASET)")
    serve.add_argument("--sample", type=positive_int, help="items to review (drawn once; later runs resume them)")
    serve.add_argument("--seed", type=seed, default=0, help="seed of the sample (default 0)")
    serve.add_argument("--source", help="the original dataset (default: the source recorded by beirx translate)")
    serve.add_argument("--src", help="language of the source (default: from the manifest, else en)")
    serve.add_argument("--quality", type=Path, help="quality.json ranking the 'worst' stratum (default: "
                                                    "<DATASET>/quality/quality.json when present)")
    serve.add_argument("--damage", type=Path, metavar="DAMAGE_JSON",
                       help="beirx report's damage.json: add a 'damage' stratum, the rows the quality signal that best "
                            "predicts the retrieval drop ranks worst")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine "
                                                           "only; another needs --token)")
    serve.add_argument("--port", type=port_number, default=8765, help="port (default 8765)")
    serve.add_argument("--token", action="store_true",
                       help=f"require an access token (from ${TOKEN_ENV}, else a random one printed in the link)")
    export = parser.add_argument_group("exporting (beirx review export DATASET)")
    export.add_argument("--output", type=Path, help="review.json to write (default <DATASET>/review/review.json)")
    export.add_argument("--min-adequacy", type=rating, default=4.0,
                        help="an item is acceptable from this mean adequacy (default 4)")
    export.add_argument("--min-fluency", type=rating, default=3.0,
                        help="... and this mean fluency (default 3)")
    apply = parser.add_argument_group("applying corrections (beirx review apply DATASET)")
    apply.add_argument("--annotator", help="whose corrections win where annotators corrected an item differently")
    apply.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    apply.add_argument("--force", action="store_true", help="apply even to records changed since the sample was drawn")


def run(args) -> int:
    if args.target in ACTIONS:
        if not args.dataset:
            raise BeirxError(f"name the dataset: beirx review {args.target} DATASET")
        return _export(args) if args.target == "export" else _apply(args)
    if args.dataset:
        raise BeirxError(f"unexpected argument {args.dataset!r}: beirx review DATASET, or beirx review "
                         f"{'|'.join(ACTIONS)} DATASET")
    return _serve(args)


def _translated(args):
    from beirx.data.resolve import resolve_dataset

    return resolve_dataset(args.dataset, lang=args.lang or "en")


def read_only_message(path: Path, problem: str) -> str:
    """The refusal to serve a review whose ratings cannot be stored at ``path`` (its database)."""
    where = path.parent if path.parent.is_dir() else path.parent.parent
    kept = f"the review in {path} is intact" if path.is_file() else "no review was started"
    return (f"{where} is read-only (a read-only file system or folder): the review app saves every rating there, so "
            f"it cannot run; {kept}. Make the folder writable, or copy the dataset to a writable place and review the "
            f"copy (writing there: {problem})")


def _serve(args) -> int:
    from dataclasses import asdict

    from beirx.artifacts.manifest import DatasetSide
    from beirx.artifacts.quality import QualityReport
    from beirx.data.resolve import resolve_translation
    from beirx.review.sample import damage_record, damaging_rows, draw
    from beirx.review.app import is_loopback, listen, serve
    from beirx.review.store import ReviewStore

    if not is_loopback(args.host) and not args.token:
        raise BeirxError(f"--host {args.host} makes the review reachable from other machines: require an access "
                         "token with --token (or keep the default 127.0.0.1)")
    source, translated = resolve_translation(args.target, args.source, args.lang, args.src)
    if args.sample is None and not ReviewStore.path_in(translated.root).is_file():
        raise BeirxError(f"{translated.root} has no review yet: say how many items to draw with --sample N")
    problem = ReviewStore.storage_problem(translated.root)
    if problem:  # before a port is taken or a sample drawn: every rating is saved as it is submitted
        raise BeirxError(read_only_message(ReviewStore.path_in(translated.root), problem))
    quality_path = args.quality or QualityReport.path_in(translated.root)
    side = DatasetSide(path=str(translated.root), name=translated.name, lang=translated.lang,
                       checksum=translated.checksum())
    analysis = _damage_analysis(args.damage, side, quality_path) if args.damage else None  # refused before listening
    # the sample is drawn once for good: from a report that is whole, else not at all, checked before anything is written
    quality = QualityReport.load_verified(quality_path) \
        if args.sample is not None and (args.quality or quality_path.is_file()) else None
    sock = listen(args.host, args.port)  # a port in use stops here, before anything is written or printed
    store = ReviewStore.in_folder(translated.root, create=True)
    if store.read_only:
        raise BeirxError(read_only_message(store.path, "read-only"))
    if not store.size():
        if quality is not None and quality.translated.checksum != side.checksum:
            print(f"note: {quality_path} was made for another version of the translation; its ranking is used anyway")
        items = draw(source, translated, args.sample, args.seed, quality, analysis)
        strata: dict[str, int] = {}
        for item in items:
            strata[item.stratum] = strata.get(item.stratum, 0) + 1
        meta = {"dataset": asdict(side), "source_lang": source.lang, "size": len(items), "seed": args.seed,
                "strata": strata, "quality_report": str(quality_path) if quality is not None else None}
        if analysis is not None:
            meta["damage"] = damage_record(args.damage, analysis, damaging_rows(translated, analysis), items)
            found = meta["damage"]
            print(f"damage stratum: {found['stratum']} rows by {found['signal']} ({found['view']}), "
                  f"{found['stratum_damaging']} of them damaging; the sample holds {found['sampled']} of the "
                  f"{len(found['damaging'])} damaging rows (the {found['damaged_queries']} most-damaged "
                  f"{found['split']} queries' rows)")
        store.create_sample(items, meta)
        print(f"sample: {len(items)} items ({', '.join(f'{k} {v}' for k, v in strata.items())}), seed {args.seed}")
    else:
        if args.sample is not None and args.sample != store.size():
            print(f"note: this review already has {store.size()} items; --sample {args.sample} is ignored")
        if args.damage:
            print(f"note: this review's sample was drawn already; --damage {args.damage} is ignored")
    token = None
    if args.token:
        token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(16)
    link = f"http://{'[' + args.host + ']' if ':' in args.host else args.host}:{args.port}/"
    print(f"review {translated.root}: {store.size()} items, {store.rating_count()} ratings so far")
    print(f"open {link}{'?token=' + quote(token, safe='') if token else ''}  (Ctrl+C stops; every submitted rating "
          "is already saved)", flush=True)
    serve(store, sock, args.host, token, (source.lang, translated.lang))
    return 0


def _damage_analysis(path: Path, side, quality_path: Path):
    """The analysis of this translation in beirx report's ``damage.json``, with the signal it chose."""
    from beirx.artifacts.damage import DamageReport

    if not quality_path.is_file():
        raise BeirxError(f"--damage {path} needs the quality report its signals come from ({quality_path} does not "
                         "exist): pass --quality QUALITY_JSON, the one beirx report read")
    analysis = DamageReport.load(path).find(side)
    if analysis is None:
        raise BeirxError(f"{path} has no analysis with a chosen signal for {side.path} (checksum {side.checksum}): "
                         "run beirx report on this translation's results with its quality report")
    return analysis


def _export(args) -> int:
    from beirx.review.export import export_review

    dataset = _translated(args)
    document, path = export_review(dataset.root, args.output, min_adequacy=args.min_adequacy,
                                   min_fluency=args.min_fluency)
    estimate = document.acceptable.estimate
    print(f"{document.rated_items} of {len(document.items)} items rated by {len(document.annotators)} annotators "
          f"({', '.join(document.annotators) or '-'})")
    for scale, agreement in document.agreement.items():
        alpha = "-" if agreement.alpha is None else f"{agreement.alpha:.3f}"
        print(f"Krippendorff's alpha ({scale}, ordinal): {alpha} over {agreement.items} items rated twice or more")
    if estimate.share is not None:
        print(f"acceptable ({document.acceptable.rule}): {estimate.acceptable}/{estimate.items} = {estimate.share:.3f}, "
              f"95% CI {estimate.ci_low:.3f}-{estimate.ci_high:.3f} (random strata)")
    if document.sample.damage is not None:
        print(document.sample.damage.note())
    for score, corr in document.correlations.items():
        rho = "-" if corr.spearman is None else f"{corr.spearman:+.3f} (p {corr.p_value:.3g})"
        print(f"Spearman {score} vs adequacy: {rho}, n={corr.n}")
    print(f"review: {path}")
    return 0


def _apply(args) -> int:
    from beirx.review.apply import apply_corrections

    dataset = _translated(args)
    counts = apply_corrections(dataset, annotator=args.annotator, force=args.force, dry_run=args.dry_run)
    verb = "would change" if args.dry_run else "changed"
    print(f"{verb}: {counts['queries']} queries, {counts['corpus']} documents in {dataset.root}"
          + ("" if args.dry_run or not any(counts.values()) else "; IDs and qrels unchanged, review/corrections.jsonl "
                                                                  "keeps the machine output"))
    return 0
