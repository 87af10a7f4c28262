"""The command-line reference: every ``beirx`` command's ``--help``, rendered from the same argument parsers
the command runs with, as one Markdown page.

The documentation site builds its ``cli.md`` from :func:`markdown` at every ``mkdocs build`` (the hook in
``tools/mkdocs_hooks.py``), so the reference cannot drift from the code. ``python -m beirx.cli.reference``
prints the page.
"""

from __future__ import annotations

import argparse
import importlib

from beirx.cli import COMMANDS, build_parser, common_options

WIDTH = 100
"""Help text is wrapped at a fixed width, so the page does not depend on the terminal that built it."""


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str):
        super().__init__(prog, width=WIDTH, max_help_position=32)


class _Recording(argparse.ArgumentParser):
    """An argument parser that keeps its subcommands (``beirx mteb task``...) so they can be listed too."""

    def __init__(self, *args, **kwargs):
        kwargs["formatter_class"] = _Formatter
        super().__init__(*args, **kwargs)
        self.subcommands: dict[str, _Recording] = {}

    def add_subparsers(self, **kwargs):
        action = super().add_subparsers(**kwargs)
        self.subcommands = action.choices  # name -> parser, filled as add_parser is called
        return action


def _section(level: int, parser: argparse.ArgumentParser) -> list[str]:
    anchor = parser.prog.replace(" ", "-")
    lines = [f"{'#' * level} `{parser.prog}` {{#{anchor}}}", "", "```text", parser.format_help().rstrip(), "```", ""]
    for child in getattr(parser, "subcommands", {}).values():
        lines += _section(level + 1, child)
    return lines


def command_parser(name: str) -> argparse.ArgumentParser:
    """``beirx NAME``'s parser with every option and subcommand, as ``beirx NAME --help`` shows it."""
    module, help_text = COMMANDS[name]
    parser = _Recording(prog=f"beirx {name}", description=help_text, parents=[common_options()])
    importlib.import_module(module).add_arguments(parser)
    return parser


def markdown() -> str:
    """The whole reference: ``beirx --help``, then each command (and its subcommands) in catalogue order."""
    top = build_parser([])
    top.formatter_class = _Formatter
    lines = ["# Command-line reference", "",
             "Generated from beirx's argument parsers when this site was built (`python -m beirx.cli.reference`); "
             "`beirx COMMAND --help` prints the same text. Every command also takes `-v`/`-q` and "
             "`--progress`/`--no-progress`.", "",
             "## `beirx` {#beirx}", "", "```text", top.format_help().rstrip(), "```", ""]
    for name in COMMANDS:
        lines += _section(2, command_parser(name))
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
