"""The ``beirx`` command: one entry point, one module per subcommand in this package.

Each subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int``. Only the module of the
subcommand being run is imported, so ``beirx --help`` never loads torch, transformers or datasets.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from beirx import __version__
from beirx.errors import BeirxError

COMMANDS: dict[str, tuple[str, str]] = {
    "datasets": ("beirx.cli.datasets", "list the dataset catalogue and what is cached; download datasets"),
    "validate": ("beirx.cli.validate", "check a BEIR folder (and that a translation kept IDs and qrels)"),
    "translate": ("beirx.cli.translate", "machine-translate a BEIR dataset, keeping IDs and qrels"),
    "quality": ("beirx.cli.quality", "score a translated dataset's translation quality"),
    "review": ("beirx.cli.review", "native speakers rate a sample of a translation in a web app; export, apply"),
    "eval": ("beirx.cli.eval", "evaluate retrievers and rerankers on a dataset and language"),
    "publish": ("beirx.cli.publish", "export/push datasets and results to the Hugging Face Hub"),
    "mteb": ("beirx.cli.mteb", "register a dataset as an MTEB task; MTEB-format results"),
    "train": ("beirx.cli.train", "fine-tune a bi-encoder or cross-encoder reranker on a split's qrels"),
    "generate-queries": ("beirx.cli.generate_queries", "synthetic queries for a corpus (GenQ), as a training split"),
    "schema": ("beirx.cli.schema", "print the JSON Schema of the results, manifest or quality file format"),
    "report": ("beirx.cli.report", "tables, significance tests, efficiency and plots from results (Markdown, LaTeX, HTML)"),
    "subset": ("beirx.cli.subset", "cut a small pooled benchmark (NanoBEIR-style) and check it ranks systems like the full one"),
    "suite": ("beirx.cli.suite", "build a suite (datasets x languages) end to end: subset, translate, quality, publish"),
}


def _command_name(argv: list[str]) -> str | None:
    return next((a for a in argv if a in COMMANDS), None)


class Parser(argparse.ArgumentParser):
    """An argument error is two lines, the reason and where the options are listed: argparse's default prints
    the whole usage first, which for ``beirx eval`` is sixty lines above the one that matters."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n(`{self.prog} --help` lists the options)\n")


def common_options() -> argparse.ArgumentParser:
    """The flags every subcommand takes after its name (``beirx eval -v``); SUPPRESS keeps ``beirx -v eval``
    working. A parent parser (``parents=[common_options()]``)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more log output")
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="warnings and errors only")
    common.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bars (default: when stderr is a terminal; periodic log lines otherwise)")
    return common


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = Parser(prog="beirx", description="Translated IR benchmarks and multilingual retrieval evaluation.")
    parser.add_argument("--version", action="version", version=f"beirx {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors on stderr")
    common = common_options()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _command_name(argv)
    for name, (module, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text, parents=[common])
        if name == chosen:
            mod = importlib.import_module(module)
            mod.add_arguments(cmd)
            cmd.set_defaults(handler=mod.run)
    return parser


def show_progress(args: argparse.Namespace) -> bool:
    """``--progress``/``--no-progress`` as given, else bars only on a terminal and never with ``--quiet``."""
    if getattr(args, "progress", None) is not None:
        return bool(args.progress)
    return sys.stderr.isatty() and not getattr(args, "quiet", False)


def configure_logging(verbose: int, quiet: bool) -> None:
    from beirx.redact import RedactingFilter

    level = logging.WARNING if quiet else (logging.DEBUG if verbose > 1 else logging.INFO)
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    for handler in logging.getLogger().handlers:  # every log line loses URL credentials
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
    from beirx.cli.library_logs import quiet_libraries

    quiet_libraries(0 if quiet else verbose)  # other libraries: one line per error by default, details with -v


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version (0) or a bad option value (2)
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    configure_logging(args.verbose, args.quiet)
    from beirx.cli.errors import describe, is_expected

    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print(f"beirx {args.command}: interrupted; completed work is kept and a rerun resumes", file=sys.stderr)
        return 130
    except Exception as exc:
        if not is_expected(exc):
            raise
        if args.verbose:
            import traceback

            from beirx.redact import redact_text

            print(redact_text("".join(traceback.format_exception(exc))), file=sys.stderr, end="")
        hint = "" if args.verbose else " (run with -v for the traceback)"
        if isinstance(exc, BeirxError):
            hint = ""
        print(f"beirx {args.command}: error: {describe(exc)}{hint}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
