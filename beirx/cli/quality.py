"""``beirx quality``: score a translated dataset against its source and write the quality report.

    beirx quality TRANSLATED --source SRC --lang L [--src en] [--encoder M] [--sample N]
                  [--roundtrip-translator NAME [--roundtrip-sample N|all]] [--comet PATH]
                  [--judge-model M [--judge-base-url URL]] [--output DIR]

TRANSLATED and SRC are BEIR folders or catalogue names (``beirx quality scifact --lang pl`` compares the
cached ``scifact-pl`` with ``scifact``). The report goes to ``<translated folder>/quality/`` by default.
Each quality method adds its own flags (see ``beirx.translate.quality``).
"""

from __future__ import annotations

import argparse

from beirx.cli import show_progress
from beirx.cli.flags import add_options, given
from beirx.cli.types import comma_list, non_negative_int, output_dir, positive_int, seed
from beirx.errors import BeirxError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from beirx.translate.quality import QUALITY_METHODS

    parser.add_argument("translated", metavar="TRANSLATED", help="the translated dataset (folder or catalogue name)")
    parser.add_argument("--source", help="the original dataset (folder or catalogue name; default: the source "
                                         "recorded by beirx translate, else TRANSLATED's catalogue name)")
    parser.add_argument("--lang", help="language of the translation (ISO 639-1; default: from beirx translate's manifest)")
    parser.add_argument("--src", help="language of the source (default: from the manifest, else en)")
    parser.add_argument("--encoder", default="sentence-transformers/LaBSE",
                        help="multilingual sentence-transformers model, Hub id or folder, or use-multilingual-v3 "
                             "(beirx[use]), shared by every embedding method (default LaBSE, as BEIR-PL)")
    parser.add_argument("--encoder-revision", help="Hub revision of --encoder")
    parser.add_argument("--fields", default="queries,corpus", type=comma_list,
                        help="comma-separated: queries, corpus (default both)")
    parser.add_argument("--sample", type=non_negative_int, default=100, help="pairs per field for manual review (default 100)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of every random sample (default 0)")
    parser.add_argument("--max-items", type=positive_int, help="score a seeded random subset of at most N items per field")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="encoder batch size (default 32)")
    parser.add_argument("--output", type=output_dir, help="report folder (default: <translated folder>/quality)")
    parser.add_argument("--no-cache", action="store_true", help="re-encode instead of using cached embeddings")
    for name in QUALITY_METHODS.in_order():
        if QUALITY_METHODS.get(name).OPTIONS:
            add_options(parser.add_argument_group(f"quality method {name}"), QUALITY_METHODS.get(name).OPTIONS)


def run(args) -> int:
    from beirx.data.resolve import resolve_translation
    from beirx.network import HubUnavailable
    from beirx.translate.quality import QUALITY_METHODS, report_dir, run_quality

    source, translated = resolve_translation(args.translated, args.source, args.lang, args.src)
    src, lang = source.lang, translated.lang
    methods = []
    for name in QUALITY_METHODS.in_order():
        cls = QUALITY_METHODS.get(name)
        method = cls.from_options(given(args, cls.OPTIONS), src, lang, use_cache=not args.no_cache)
        if method is not None:
            methods.append(method)
    try:
        report = run_quality(source, translated, args.output, methods=methods, encoder=args.encoder,
                             encoder_revision=args.encoder_revision, src_lang=src, tgt_lang=lang,
                             fields=tuple(args.fields), sample_size=args.sample, seed=args.seed,
                             batch_size=args.batch_size, max_items=args.max_items, use_cache=not args.no_cache,
                             show_progress=show_progress(args))
    except HubUnavailable as exc:
        if args.encoder not in exc.what:
            raise
        raise BeirxError(f"the encoder {args.encoder} is not in the local Hugging Face cache and the Hub cannot be "
                         f"reached ({exc.cause}); pass --encoder DIR (a local multilingual sentence-transformers "
                         "folder)") from exc
    finally:
        for method in methods:
            method.close()
    print(f"{'field':<8} {'pairs':>6} {'flagged':>8}  means / figures / flags")
    for field, entry in report.fields.items():
        means = ", ".join(f"{score} {d.mean:.4f}" for score, d in entry.scores.items() if d.mean is not None)
        figures = ", ".join(f"{label} {value:.4f}" for label, value in entry.figures().items())
        flags = ", ".join(f"{k} {v}" for k, v in entry.flags.items()) or "-"
        print(f"{field:<8} {entry.pairs:>6} {entry.flagged_items:>8}  {means or '-'}{'; ' + figures if figures else ''}"
              f"; flags: {flags}")
    print(f"report: {report_dir(translated, args.output)}/quality.md")
    return 0
