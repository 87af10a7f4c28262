"""The shell and Python blocks of README.md and docs/*.md, their markers, and the check of every command in
them against beirx's own argument parser (docs/docs-tests.md describes the markers).

``python tests/docs_blocks.py`` prints how many blocks and commands are run and how many only checked.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NEEDS = ("network", "gpu", "key", "server", "data", "people", "hours")
MARKER = re.compile(r"<!-- docs-test: (run|needs (?:%s)) -->" % "|".join(NEEDS))
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py"}
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
OPERATORS = {";", "&&", "||", "|", "&", "(", ")"}


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@dataclass
class Block:
    path: Path
    line: int
    """1-based line of the block's first line of code."""
    lang: str
    marker: str | None
    """``run``, ``needs network`` ... or None when the block is not marked."""
    text: str

    @property
    def where(self) -> str:
        path = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path
        return f"{path}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.marker == "run"

    @property
    def shell(self) -> bool:
        return self.lang in SHELL


def blocks(path: Path, text: str | None = None) -> list[Block]:
    """Every fenced shell or Python block of a Markdown file, with the marker on the line above its fence."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang = match["fence"], match["lang"].lower()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence)), len(lines))
        included = all(line.strip().startswith("--8<--") for line in lines[i + 1:end] if line.strip())
        if lang in SHELL | PYTHON and not included:  # a file included whole is tested where it runs
            above = lines[i - 1].strip() if i else ""
            marker = MARKER.fullmatch(above)
            body = "\n".join(line[len(match["indent"]):] for line in lines[i + 1:end])
            found.append(Block(path, i + 2, lang, marker[1] if marker else None, body))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [b for path in doc_files() for b in blocks(path)]


def commands(block: Block) -> list[tuple[int, list[str]]]:
    """The simple commands of a shell block as ``(line, argv)``: ``\\`` continuations joined, comments
    dropped, split at ``;``, ``&&``, ``||``, ``|`` and ``&``, redirections and leading ``VAR=value``
    assignments removed."""
    found = []
    logical, start = "", 0
    for offset, line in enumerate(block.text.splitlines()):
        if not logical:
            start = offset
        if line.rstrip().endswith("\\"):
            logical += line.rstrip()[:-1] + " "
            continue
        logical += line
        lexer = shlex.shlex(logical, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split, lexer.commenters = True, "#"
        current: list[str] = []
        tokens = list(lexer)
        k = 0
        while k < len(tokens):
            token = tokens[k]
            if token in OPERATORS or set(token) <= set(";&|"):
                found.append((block.line + start, current))
                current = []
            elif set(token) <= set("<>"):
                k += 1  # a redirection: skip its target
            else:
                current.append(token)
            k += 1
        found.append((block.line + start, current))
        logical = ""
    commands_ = []
    for line, argv in found:
        while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]):
            argv = argv[1:]
        if argv:
            commands_.append((line, argv))
    return commands_


def beirx_argv(argv: list[str]) -> list[str] | None:
    """The arguments after ``beirx`` (or ``python -m beirx``), else None."""
    if argv[0] == "beirx":
        return argv[1:]
    if argv[0].startswith("python") and argv[1:3] == ["-m", "beirx"]:
        return argv[3:]
    return None


def parse_error(args: list[str]) -> str | None:
    """What beirx's argument parser says about ``beirx ARGS`` (None when it accepts them): every subcommand
    and flag must exist and every value have its type. Nothing runs."""
    from beirx.cli import build_parser

    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            build_parser(args).parse_args(args)
        except SystemExit as exc:
            if exc.code not in (0, None):
                return err.getvalue().strip().splitlines()[0]
    return None


def python_problems(block: Block) -> list[str]:
    """A Python block must compile, and every name it imports from beirx must exist."""
    try:
        tree = ast.parse(block.text)
    except SyntaxError as exc:
        return [f"{block.where}: invalid Python: {exc.msg} (block line {exc.lineno})"]
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "beirx":
            try:
                module = importlib.import_module(node.module)
            except ModuleNotFoundError:
                problems.append(f"{block.where}: no module {node.module}")
                continue
            is_package = hasattr(module, "__path__")
            problems += [f"{block.where}: {node.module} has no {alias.name!r}" for alias in node.names
                         if not hasattr(module, alias.name)
                         and not (is_package and importlib.util.find_spec(f"{node.module}.{alias.name}"))]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "beirx" and importlib.util.find_spec(alias.name) is None:
                    problems.append(f"{block.where}: no module {alias.name}")
    return problems


def problems(block: Block) -> list[str]:
    """Everything wrong with a block without running it (an empty list: it passes the check)."""
    if block.marker is None:
        return [f"{block.where}: a ```{block.lang} block needs a marker on the line above its fence: "
                f"<!-- docs-test: run --> or <!-- docs-test: needs {'|'.join(NEEDS)} -->"]
    if not block.shell:
        return python_problems(block)
    syntax = subprocess.run(["bash", "-n", "-c", block.text], capture_output=True, text=True)
    if syntax.returncode:
        return [f"{block.where}: not valid shell: {syntax.stderr.strip()}"]
    found = []
    for line, argv in commands(block):
        args = beirx_argv(argv)
        if args is not None:
            error = parse_error(args)
            if error:
                found.append(f"{block.where.rsplit(':', 1)[0]}:{line}: {error}")
    return found


def counts(items: list[Block]) -> dict[str, int]:
    """Blocks and commands, run and checked only (a command: a simple command of a shell block; a Python
    block counts as one)."""
    def n(b: Block) -> int:
        return len(commands(b)) if b.shell else 1

    run = [b for b in items if b.runs]
    checked = [b for b in items if not b.runs]
    return {"blocks run": len(run), "commands run": sum(map(n, run)),
            "beirx commands run": sum(1 for b in run if b.shell for _, a in commands(b) if beirx_argv(a) is not None),
            "blocks checked": len(checked), "commands checked": sum(map(n, checked)),
            "beirx commands checked": sum(1 for b in checked if b.shell for _, a in commands(b)
                                          if beirx_argv(a) is not None)}


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    items = all_blocks()
    for path in doc_files():
        mine = [b for b in items if b.path == path]
        if mine:
            print(f"{path.relative_to(REPO)}: " + ", ".join(f"{k} {v}" for k, v in counts(mine).items()))
    print("total: " + ", ".join(f"{k} {v}" for k, v in counts(items).items()))
