"""Lay ``beirx/translate/`` out as its pipeline and give every module name one meaning: ``git mv`` each module
to its place and rewrite every reference to it.

    python tools/relayout_translate.py            # from the repository root; then run the tests and commit
    python tools/relayout_translate.py --dry-run  # print the moves still to do, change nothing

The layout (what each folder is for is in its ``__init__``)::

    translate/runner.py pipeline.py  a request -> the steps, in order
    translate/translation_memory.py  the persistent memory every step reads or writes
    translate/planning/              what is translated and what it may cost (segments, units, store, budget)
    translate/execution/             who translates the batches: the driver, every executor, shards
    translate/output/                the dataset written from the memory, and what happened to each unit
    translate/backends/ llm/ quality/

Why a script rather than a commit: the moves touch files other branches edit at the same time, so they are
applied to the tree those branches merged into. It is re-runnable: a move already done is skipped, a reference
already rewritten is left alone, and it stops before changing anything when a module to move is neither at its
old place nor at its new one. It rewrites, in every tracked text file (never recorded artifacts under
``tests/data/``): dotted module paths wherever they stand (imports, ``mock.patch`` targets, registry targets
``"module:Class"``, docstring roles, mkdocstrings ``::: module`` lines, field descriptions), ``from package
import module`` statements, relative imports and docstring roles (``from .units import``, ``:mod:`.units```)
and file paths ``beirx/.../module.py``; then puts the ``from beirx...`` imports it touched back in order, wraps
those longer than the code's 120 columns and carries the words of a docstring line it lengthened past them.

Nothing a run writes names a module: loggers are named by module but only their ``beirx`` prefix is used
(:mod:`beirx.cli.library_logs`); cache keys, manifests and provenance hold backend descriptions, file names and
hashes; the LLM prompt file stays where it is (its source, ``beirx:beirx.translate.llm/prompts.toml``, is
recorded in manifests). The script checks what it can of this after rewriting (no reference to an old module
left, every Python file compiles, every moved module imports).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

#: old file -> new file, relative to the repository root.
MOVES = {
    # planning: what is translated and what it may cost
    "beirx/translate/plan.py": "beirx/translate/planning/text_plan.py",  # one text -> parts, and back
    "beirx/translate/planning.py": "beirx/translate/planning/dataset_plan.py",  # a dataset -> segments on disk
    "beirx/translate/segment.py": "beirx/translate/planning/segment.py",
    "beirx/translate/placeholders.py": "beirx/translate/planning/placeholders.py",
    "beirx/translate/llm/units.py": "beirx/translate/planning/document_units.py",
    "beirx/translate/segment_store.py": "beirx/translate/planning/segment_store.py",
    "beirx/translate/budget.py": "beirx/translate/planning/budget.py",
    "beirx/translate/subset_cost.py": "beirx/translate/planning/subset_cost.py",
    "beirx/translate/llm/estimate.py": "beirx/translate/planning/cost_estimate.py",  # vs subsets/estimate
    # execution: who translates the batches
    "beirx/translate/batches.py": "beirx/translate/execution/driver.py",
    "beirx/translate/work.py": "beirx/translate/execution/work.py",
    "beirx/translate/executors.py": "beirx/translate/execution/executors.py",
    "beirx/translate/ray_executor.py": "beirx/translate/execution/ray_executor.py",
    "beirx/translate/llm/batch.py": "beirx/translate/execution/openai_batch.py",
    "beirx/translate/shards.py": "beirx/translate/execution/shards.py",
    # output: what is written
    "beirx/translate/output.py": "beirx/translate/output/writer.py",
    "beirx/translate/llm/outcome.py": "beirx/translate/output/outcome.py",
    # shared by the steps; train/memory.py is GPU memory
    "beirx/translate/memory.py": "beirx/translate/translation_memory.py",
    # quality: what is measured on a translation
    "beirx/translate/langid.py": "beirx/translate/quality/langid.py",
    "beirx/translate/similarity.py": "beirx/translate/quality/pair_encoder.py",  # beside the method embedding.py
    "beirx/translate/quality/checks.py": "beirx/translate/quality/rule_checks.py",  # vs models/checks.py
    "beirx/translate/quality/report.py": "beirx/translate/quality/report_files.py",  # vs cli/report.py
    # llm: names that meant something else elsewhere
    "beirx/translate/llm/prompts.py": "beirx/translate/llm/translation_prompts.py",  # vs models/prompts.py
    "beirx/translate/llm/validate.py": "beirx/translate/llm/validator.py",  # vs data/validate.py
    # outside translate/: the subset's sample of queries vs the review's sample of pairs
    "beirx/subsets/sample.py": "beirx/subsets/query_sample.py",
}

#: New packages and their docstrings.
PACKAGES = {
    "beirx/translate/planning/__init__.py": '''\
"""Planning, the first step of :mod:`beirx.translate.pipeline`: what is translated, and what it may cost.

A text becomes parts (:mod:`.text_plan`): sentences (:mod:`.segment`), or for LLM backends whole queries and
documents (:mod:`.document_units`), with URLs, numbers and code kept verbatim (:mod:`.placeholders`). A dataset
becomes its unique segments on disk, sorted by length (:mod:`.dataset_plan`, :mod:`.segment_store`). Before
anything is sent, a paid run is estimated and capped (:mod:`.budget`, :mod:`.cost_estimate`), and a subset's
cost is put beside its full dataset's (:mod:`.subset_cost`).
"""
''',
    "beirx/translate/execution/__init__.py": '''\
"""Execution, the second step of :mod:`beirx.translate.pipeline`: who translates the batches.

The driver (:mod:`.driver`) claims each batch in the translation memory, hands it to an executor and commits
its translations; every executor takes and returns the same work (:mod:`.work`): this process
(:mod:`.executors`, which also chooses among them), translator replicas on Ray (:mod:`.ray_executor`) or the
OpenAI Batch API (:mod:`.openai_batch`). :mod:`.shards` partitions the batches across machines.
"""
''',
    "beirx/translate/output/__init__.py": '''\
"""Output, the last step of :mod:`beirx.translate.pipeline`: the translated dataset and what it records.

:mod:`.writer` renders each record from the translation memory and streams it to disk with the manifest;
:mod:`.outcome` is what happened to each LLM unit (retried, fallback, flagged), summed into the manifest and
listed in ``translation_flags.jsonl``.
"""
''',
}

#: SHA-256 of each package file below as the layout found it: a file edited since is left for a person to merge.
REPLACES = {
    "beirx/translate/__init__.py": "3da6cad3f444af6161158e44710d57b11a6d567b9bfacb8f6504e7e2c1d80f19",
    "beirx/translate/llm/__init__.py": "a418b2d66b6f860dbe4460adb3a6133a95dab90c9ad09454b3275c5aaa29231b",
}
#: Package docstrings that describe the layout.
DOCSTRINGS = {
    "beirx/translate/__init__.py": '''\
"""Translation stage, laid out as its pipeline.

:mod:`.runner` turns a ``beirx translate`` request into one call of :mod:`.pipeline`, which runs the steps:

- :mod:`.planning`: records cut into segments or document units, deduplicated onto disk, estimated and capped;
- :mod:`.execution`: the batches claimed, translated by an executor (this process, Ray, the Batch API) and
  committed, optionally one shard of them;
- :mod:`.output`: the dataset written by streaming from the memory, with its manifest;
- :mod:`.quality`: how good the translation is (``beirx quality``; also run when a translation finishes).

Every step reads or writes the :mod:`.translation_memory`. The translators are :mod:`.backends`, by name; the
LLM ones are built on :mod:`.llm`, which the steps reach only through the
:class:`~beirx.translate.backends.base.Translator` interface.
"""
''',
    "beirx/translate/llm/__init__.py": '''\
"""LLM translation, the task the ``openai`` and ``hf-llm`` backends share (the LLM itself is the shared
:mod:`beirx.models.llm`): the loop (:mod:`.translator`: prompt, validate, retry, fall back or flag), its
requests (:mod:`.translation_prompts`, ``prompts.toml``), the :mod:`.glossary` and the check of every answer
(:mod:`.validator`).

The pipeline never imports this package; it reaches it through the backends' :class:`Translator
<beirx.translate.backends.base.Translator>` interface. What the pipeline needs of LLM units lives with its step:
document units in planning, cost estimates in planning, the Batch API executor in execution, each unit's
outcome in output.
"""
''',
}

TEXT_SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".ini", ".txt", ".rst", ".sh"}
NOT_REWRITTEN = ("tests/data/",)  # recorded artifacts: what they say stays as it was written
WIDTH = 120
ROLE = re.compile(r":(?:mod|class|func|meth|data|attr|exc|obj):`(~?)\.([A-Za-z_][\w.]*)")
DOTTED = re.compile(r"(?<![\w.])beirx(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"(?<![\w/.])beirx(?:/[A-Za-z_]\w*)+\.py\b")
FROM_IMPORT = re.compile(r"^(?P<indent>[ \t]*)from[ \t]+(?P<module>beirx(?:\.\w+)*)[ \t]+import[ \t]+"
                         r"(?P<names>\([^)]*\)|[^\n#(]*?)(?P<comment>[ \t]*#[^\n]*)?$", re.M)
RELATIVE_IMPORT = re.compile(r"^(?P<indent>[ \t]*)from[ \t]+(?P<dots>\.+)(?P<module>[\w.]*)[ \t]+import[ \t]+"
                             r"(?P<names>\([^)]*\)|[^\n#(]*?)(?=[ \t]*(?:#[^\n]*)?$)", re.M)


def dotted(path: str) -> str:
    """``beirx/a/b.py`` -> ``beirx.a.b``; ``beirx/a/__init__.py`` -> ``beirx.a``."""
    name = path[:-3].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


OLD = {dotted(old): dotted(new) for old, new in MOVES.items()}
NEW = set(OLD.values())
#: An old module whose name is now a package's (``planning``, ``output``): ``name.child`` is the new meaning.
CHILDREN = {pkg: {n.rpartition(".")[2] for n in NEW if n.rpartition(".")[0] == pkg}
            for pkg in (dotted(p) for p in PACKAGES) if pkg in OLD}
BACK = {new: old for old, new in MOVES.items()}


def packages_of(path: str) -> tuple[str, str]:
    """The package a file is in now and the one it was in before the moves (what its relative names meant)."""
    def package(file: str) -> str:
        return dotted(file) if file.endswith("__init__.py") else dotted(file).rpartition(".")[0]

    return package(path), package(BACK.get(path, path))


def git(*args: str, root: Path) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def new_name(chain: str, following: str = "") -> str | None:
    """The rewritten dotted ``chain`` (``beirx.x.y.attr``), or None when it names no moved module.
    ``following`` is the text after it, to tell ``from beirx.translate.planning import dataset_plan`` (the new
    package) from ``from beirx.translate.planning import chunks`` (the old module)."""
    parts = chain.split(".")
    for n in range(len(parts), 1, -1):
        prefix = ".".join(parts[:n])
        if prefix in NEW:
            return None
        if prefix in OLD:
            rest = parts[n:]
            children = CHILDREN.get(prefix, set())
            if rest and rest[0] in children:
                return None
            if not rest and children:
                imported = re.match(r"[ \t]+import[ \t]+\(?\s*(\w+)", following)
                if imported and imported.group(1) in children:
                    return None
            return ".".join([OLD[prefix], *rest])
    return None


def rewrite_from_imports(text: str) -> str:
    """``from beirx.translate import budget, pipeline`` -> ``from beirx.translate import pipeline`` and
    ``from beirx.translate.planning import budget``: a module imported by name from its package, where the
    module moved to another package or name (the local name stays, through ``as`` when the name changed)."""
    def one(match: re.Match) -> str:
        package, indent = match["module"], match["indent"]
        names = match["names"].strip()
        if names.startswith("("):
            if "#" in names:
                return match[0]
            names = names[1:-1]
        items = [item.split() for item in names.replace("\n", " ").split(",") if item.strip()]
        kept, moved = [], {}
        for item in items:
            name, alias = item[0], (item[2] if len(item) == 3 else None)
            full = f"{package}.{name}"
            if full in OLD and not (package in CHILDREN and name in CHILDREN[package]):
                parent, _, leaf = OLD[full].rpartition(".")
                local = alias or name
                moved.setdefault(parent, []).append(leaf if local == leaf else f"{leaf} as {local}")
            else:
                kept.append(" ".join(item))
        if not moved:
            return match[0]
        lines = [f"from {package} import {', '.join(kept)}"] if kept else []
        lines += [f"from {parent} import {', '.join(leaves)}" for parent, leaves in moved.items()]
        comment = match["comment"] or ""
        return "\n".join(indent + line + (comment if i == 0 else "") for i, line in enumerate(lines))

    return FROM_IMPORT.sub(one, text)


def rewrite_dotted(text: str) -> str:
    out, last = [], 0
    for match in DOTTED.finditer(text):
        replacement = new_name(match[0], text[match.end():match.end() + 80])
        if replacement is not None:
            out += [text[last:match.start()], replacement]
            last = match.end()
    return "".join(out + [text[last:]])


def rewrite_paths(text: str) -> str:
    def one(match: re.Match) -> str:
        path = match[0]
        return MOVES.get(path, path)

    return PATH.sub(one, text)


def rewrite_relative_roles(text: str, path: str, modules: set[str]) -> str:
    """``:mod:`.units``` in a module of ``beirx.translate.llm``: relative to the package the file was in."""
    here, was = packages_of(path)

    def one(match: re.Match) -> str:
        tilde, ref = match[1], match[2]
        first = ref.split(".")[0]
        if f"{here}.{first}" in modules:
            return match[0]  # a module beside this file now
        target = new_name(f"{was}.{ref}")
        if target is None:
            if here != was and f"{was}.{first}" in modules:
                target = f"{was}.{ref}"  # this file moved away from a module that stayed
            else:
                return match[0]
        if target.startswith(here + ".") and f"{here}.{target[len(here) + 1:].split('.')[0]}" in modules:
            target = target[len(here):]
        return match[0][:match.start(1) - match.start(0)] + tilde + target

    return ROLE.sub(one, text)


def absolute_relative_imports(text: str, path: str, modules: set[str]) -> str:
    """``from .units import x`` -> ``from beirx.translate.llm.units import x`` where the module it names moved
    or the file itself moved (relative to the package the file was in), so the other passes rewrite it."""
    here, was = packages_of(path)

    def one(match: re.Match) -> str:
        dots, module, names = match["dots"], match["module"], match["names"]
        anchor = was.split(".")[:len(was.split(".")) - len(dots) + 1]
        base = ".".join(anchor + ([module] if module else []))
        current = ".".join(here.split(".")[:len(here.split(".")) - len(dots) + 1] + ([module] if module else []))
        targets = [base] if module else [f"{base}.{n.split()[0]}" for n in names.strip("()").split(",") if n.strip()]
        if all(t in modules for t in ([current] if module else [f"{current}.{t.rpartition('.')[2]}"
                                                               for t in targets])):
            return match[0]  # names what sits beside the file now
        if here == was and not any(new_name(t) for t in targets):
            return match[0]
        return f"{match['indent']}from {base} import {names}"

    return RELATIVE_IMPORT.sub(one, text)


def reflow_imports(text: str) -> str:
    """A ``from`` statement of a moved module longer than :data:`WIDTH`: its names wrapped in parentheses,
    aligned as the rest of the code wraps them."""
    def one(match: re.Match) -> str:
        statement = match[0]
        module = match["module"]
        if max(map(len, statement.splitlines())) <= WIDTH or match["comment"] or "#" in match["names"]:
            return statement
        if not any(module == n or module.startswith(n + ".") or n.startswith(module + ".") for n in NEW):
            return statement
        names = [n.strip() for n in match["names"].strip().strip("()").replace("\n", " ").split(",") if n.strip()]
        head = f"{match['indent']}from {module} import ("
        lines, line = [], head
        for i, name in enumerate(names):
            piece = name + (")" if i == len(names) - 1 else ",")
            if line not in (head, " " * len(head)) and len(line) + 1 + len(piece) > WIDTH:
                lines.append(line)
                line = " " * len(head)
            line += piece if line in (head, " " * len(head)) else " " + piece
        return "\n".join(lines + [line])

    return FROM_IMPORT.sub(one, text)


def names_moved(text: str) -> bool:
    """Whether ``text`` names a module this script moved (so it is what the script changed)."""
    return any(n in NEW for m in DOTTED.finditer(text)
               for n in (".".join(m[0].split(".")[:k]) for k in range(2, m[0].count(".") + 2)))


def sort_imports(text: str) -> str:
    """Consecutive ``from beirx... import`` statements (same indentation) in module order again, where one of
    them names a moved module: the order the rest of the code keeps."""
    matches = [m for m in FROM_IMPORT.finditer(text)]
    out, last, i = [], 0, 0
    while i < len(matches):
        block = [matches[i]]
        while (i + len(block) < len(matches) and matches[i + len(block)].start() == block[-1].end() + 1
               and matches[i + len(block)]["indent"] == block[0]["indent"]):
            block.append(matches[i + len(block)])
        i += len(block)
        statements = [m[0] for m in block]
        if len(block) > 1 and any(names_moved(s) or any(f"{m['module']}.{n.split()[0]}" in NEW
                                                          for n in m["names"].strip("()").split(",") if n.strip())
                                  for s, m in zip(statements, block)):
            ordered = sorted(statements, key=lambda s: FROM_IMPORT.match(s)["module"])
            out += [text[last:block[0].start()], "\n".join(ordered)]
            last = block[-1].end()
    return "".join(out + [text[last:]])


LIST_ITEM = re.compile(r"^\s*(?:[-*] |\d+\. )")


def reflow_docstrings(text: str) -> str:
    """A docstring line made longer than :data:`WIDTH` by a longer module path: its last words carried to the
    next line of the paragraph (or to a new line when the paragraph ends there)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                spans.append((first.lineno - 1, first.end_lineno - 1))
    lines = text.split("\n")
    for start, end in sorted(spans, reverse=True):
        base = len(lines[start]) - len(lines[start].lstrip())
        i, carried = start, set()
        while i <= end:
            line = lines[i]
            if len(line) > WIDTH and (i in carried or names_moved(line)):
                indent = len(line) - len(line.lstrip())
                cut = line.rfind(" ", indent + 1, WIDTH + 1)
                if cut > indent:
                    lines[i], carry = line[:cut].rstrip(), line[cut + 1:].lstrip()
                    nxt = lines[i + 1] if i + 1 <= end else ""
                    nxt_indent = len(nxt) - len(nxt.lstrip())
                    if (i + 1 <= end and nxt.strip() and not nxt.lstrip().startswith('"""')
                            and not LIST_ITEM.match(nxt) and nxt_indent >= (indent if i > start else base)):
                        lines[i + 1] = nxt[:nxt_indent] + carry + " " + nxt.lstrip()
                    else:
                        item = LIST_ITEM.match(line)
                        pad = (item.end() if item else indent) if i > start else base
                        lines.insert(i + 1, " " * pad + carry)
                        end += 1
                    carried.add(i + 1)
            i += 1
    return "\n".join(lines)


def modules_in(root: Path) -> set[str]:
    return {dotted(str(p.relative_to(root))) for p in (root / "beirx").rglob("*.py")}


def set_docstring(path: Path, docstring: str, replaces: str) -> bool:
    """Write a package's new docstring over the file it replaces; False when the file was edited since (then
    the references in it are still rewritten, and a person merges the two texts)."""
    current = path.read_bytes()
    if current == docstring.encode("utf-8"):
        return True
    if hashlib.sha256(current).hexdigest() != replaces:
        return False
    path.write_text(docstring, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the moves still to do; change nothing")
    parser.add_argument("--no-import-check", action="store_true", help="skip importing every moved module")
    args = parser.parse_args(argv)
    root = Path(git("rev-parse", "--show-toplevel", root=Path.cwd()).strip())

    todo, problems = [], []
    for old, new in MOVES.items():
        at_old, at_new = (root / old).exists(), (root / new).exists()
        if at_old and at_new:
            problems.append(f"{old} and {new} both exist: merge them by hand, then run again")
        elif at_old:
            todo.append((old, new))
        elif not at_new:
            problems.append(f"{old} is missing (and {new} does not exist either)")
    if problems:
        print("nothing changed:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    for old, new in todo:
        print(f"git mv {old} {new}")
    if args.dry_run:
        print(f"{len(todo)} of {len(MOVES)} moves to do")
        return 0

    for init, docstring in PACKAGES.items():
        if not (root / init).exists():
            (root / init).parent.mkdir(parents=True, exist_ok=True)
            (root / init).write_text(docstring, encoding="utf-8")
            git("add", init, root=root)
    for old, new in todo:
        git("mv", old, new, root=root)
    for init, docstring in DOCSTRINGS.items():
        if not set_docstring(root / init, docstring, REPLACES[init]):
            print(f"warning: {init} was edited since the layout was written; merge its docstring with this one "
                  f"by hand:\n{docstring}", file=sys.stderr)
        git("add", init, root=root)

    modules = modules_in(root)
    me = "tools/relayout_translate.py"  # names every old module, on purpose
    changed = []
    for path in git("ls-files", root=root).splitlines():
        if (Path(path).suffix not in TEXT_SUFFIXES and path != ".ci/run") or path == me \
                or path.startswith(NOT_REWRITTEN) or not (root / path).is_file():
            continue
        before = (root / path).read_text(encoding="utf-8")
        after = before
        if path.startswith("beirx/") and path.endswith(".py"):
            after = absolute_relative_imports(after, path, modules)
        after = rewrite_from_imports(after)
        after = rewrite_relative_roles(after, path, modules) if path.startswith("beirx/") else after
        after = rewrite_paths(rewrite_dotted(after))
        if path.endswith(".py"):
            after = reflow_docstrings(reflow_imports(sort_imports(after)))
        if after != before:
            (root / path).write_text(after, encoding="utf-8")
            changed.append(path)
    if changed:
        git("add", *changed, root=root)
    print(f"{len(todo)} modules moved, {len(changed)} files rewritten")
    return verify(root, me, not args.no_import_check)


def verify(root: Path, me: str, import_check: bool) -> int:
    """Nothing names an old module any more (recorded artifacts aside), every Python file compiles and every
    moved module imports."""
    left, failed = [], []
    for path in git("ls-files", root=root).splitlines():
        if path == me or not (root / path).is_file() or Path(path).suffix in {".png", ".gz", ".zip", ".parquet"}:
            continue
        try:
            text = (root / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for match in DOTTED.finditer(text):
            if new_name(match[0], text[match.end():match.end() + 80]) is not None:
                left.append(f"{path}: {match[0]}")
        for match in PATH.finditer(text):
            if match[0] in MOVES:
                left.append(f"{path}: {match[0]}")
        if path.endswith(".py"):
            try:
                compile(text, path, "exec")
            except SyntaxError as exc:
                failed.append(f"{path}:{exc.lineno}: {exc.msg}")
    if left:
        print("old module names still referenced (recorded artifacts are never rewritten):\n  "
              + "\n  ".join(left), file=sys.stderr)
    if failed:
        print("files that no longer compile:\n  " + "\n  ".join(failed), file=sys.stderr)
    if import_check:
        code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
        result = subprocess.run([sys.executable, "-c", code, *sorted(NEW)], cwd=root, capture_output=True,
                                text=True, env={**os.environ, "PYTHONPATH": str(root)})
        if result.returncode:
            failed.append(result.stderr.strip().splitlines()[-1])
            print(f"a moved module does not import: {failed[-1]}", file=sys.stderr)
    return 1 if (left or failed) else 0


if __name__ == "__main__":
    sys.exit(main())
