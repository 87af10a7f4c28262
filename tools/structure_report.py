"""Structure figures of the ``beirx`` package: import cycles, imports against the layering, long code.

    python tools/structure_report.py [--root DIR] [--top N]

Reads the source only (``ast``, standard library), so it measures any checkout, e.g. an older commit::

    git archive main | tar -x -C /tmp/before && python tools/structure_report.py --root /tmp/before

Printed:

- **import cycles**: strongly connected components of more than one module in the graph of ``beirx``
  imports, once with module-level imports only and once with the imports inside functions as well (a lazy
  import still ties two modules together);
- **imports against the layering**: ``beirx`` imports (any level) from a package to one it may not use.
  The layers follow the data flow (the developers' guide and ``tests/test_layering.py``): shared top-level
  modules, then ``artifacts`` and ``language_packs``, ``data``, ``models``; the stages ``translate``,
  ``evaluate``, ``review``, ``report`` and ``publish`` use only those; ``train`` and ``subsets`` may also use
  ``evaluate``; ``suites`` may use every stage; ``cli`` may use everything;
- **private names reached from outside** (``obj._name``, ``from beirx.x import _name``): a caller that
  depends on another module's internals (third-party ones included, e.g. argparse's);
- **modules importing tqdm themselves** instead of the one progress helper (``beirx.progress``), and
  **module names used in more than one package** (``runner``'s ``results`` vs ``artifacts.results``);
- **longest functions and modules**, in lines (a function from its ``def`` to its last line).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

SHARED = "(shared)"
LAYERS = {"artifacts": {SHARED}, "language_packs": {SHARED}}
LAYERS["data"] = {SHARED, "artifacts", "language_packs"}
LAYERS["models"] = LAYERS["data"] | {"data"}
for _stage in ("translate", "evaluate", "review", "report", "publish"):
    LAYERS[_stage] = LAYERS["models"] | {"models"}
LAYERS["train"] = LAYERS["evaluate"] | {"evaluate"}
LAYERS["subsets"] = LAYERS["evaluate"] | {"evaluate"}  # pools with and checks through evaluate
LAYERS["suites"] = set(LAYERS) | {SHARED}  # orchestrates the stages; only the CLI imports it
LAYERS[SHARED] = {SHARED}


def modules(root: Path) -> dict[str, Path]:
    """``{dotted module name: file}`` of every module under ``root/beirx``."""
    found = {}
    for path in sorted((root / "beirx").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def package_of(module: str) -> str:
    """The top-level folder of ``beirx`` a module belongs to, or ``(shared)`` for top-level modules
    (``python -m beirx``'s ``__main__`` is the command line's)."""
    if module == "beirx.__main__":
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and _is_package.get(module)) else SHARED


_is_package: dict[str, bool] = {}


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, bool, int]]:
    """``(imported beirx module, at module level, line)`` for every ``beirx`` import in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    for node in tree.body:  # imports under a module-level ``if``/``try`` run at import time too
        if isinstance(node, (ast.If, ast.Try)):
            top_level.update(id(n) for n in ast.walk(node))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in targets:
            while target and target not in known:  # ``import beirx.x.y`` of a name inside a module
                target = target.rpartition(".")[0]
            if target.startswith("beirx") and target != name:
                found.append((target, id(node) in top_level, node.lineno))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def private_reaches(path: Path, root: Path) -> list[str]:
    """``file:line expression`` of every ``x._name`` whose ``x`` is not ``self``, ``cls`` or ``super()``, and
    every ``from beirx... import _name``: another object's or module's private name used from outside."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            out.append(f"{path.relative_to(root)}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("beirx"):
            out += [f"{path.relative_to(root)}:{node.lineno} from {node.module} import {alias.name}"
                    for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")
                    and f"{node.module}.{alias.name}" not in _is_package and alias.name != "_speedups"]
    return out


def functions(path: Path, root: Path) -> list[tuple[int, str]]:
    """``(lines, file:line qualified name)`` of every function and method in one file."""
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                out.append((child.end_lineno - child.lineno + 1, f"{path.relative_to(root)}:{child.lineno} {name}"))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="checkout holding beirx/ (default: this one)")
    parser.add_argument("--top", type=int, default=10, help="longest functions and modules listed (default 10)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    known = modules(root)
    _is_package.update({name: path.name == "__init__.py" for name, path in known.items()})

    eager: dict[str, set[str]] = defaultdict(set)
    every: dict[str, set[str]] = defaultdict(set)
    against = []
    for name, path in known.items():
        eager[name], every[name] = set(), set()
        for target, top, line in imports(name, path, known):
            every[name].add(target)
            if top:
                eager[name].add(target)
            source, dest = package_of(name), package_of(target)
            if source != dest and source != "cli" and dest not in LAYERS.get(source, set()):
                against.append(f"{path.relative_to(root)}:{line} {source} -> {dest} ({target})")

    print(f"modules: {len(known)}, lines: {sum(len(p.read_text(encoding='utf-8').splitlines()) for p in known.values())}")
    for label, graph in (("module-level imports", eager), ("all imports (also inside functions)", every)):
        found = cycles(graph)
        print(f"import cycles, {label}: {len(found)}")
        for component in found:
            print("  " + " <-> ".join(component))
    print(f"imports against the layering: {len(against)}")
    for line in sorted(against):
        print("  " + line)

    private = [line for p in known.values() for line in private_reaches(p, root)]
    print(f"private names used from outside their object or module: {len(private)}")
    for line in sorted(private):
        print("  " + line)

    bars = sorted(str(p.relative_to(root)) for name, p in known.items() if name != "beirx.progress"
                  and any(isinstance(n, (ast.Import, ast.ImportFrom)) and "tqdm" in ast.unparse(n)
                          for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))))
    print(f"modules importing tqdm themselves (not through beirx.progress): {len(bars)}")
    for where in bars:
        print("  " + where)
    by_name = defaultdict(list)
    for name in known:
        if not _is_package[name] and not name.rpartition(".")[2].startswith("__"):
            by_name[name.rpartition(".")[2]].append(name)
    clashes = {k: v for k, v in sorted(by_name.items()) if len(v) > 1}
    print(f"module names used in more than one package: {len(clashes)}")
    for short, names in clashes.items():
        print(f"  {short}: {', '.join(names)}")

    sizes = sorted(((len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(root))) for p in known.values()),
                   reverse=True)
    print(f"longest modules (lines; {sum(n > 300 for n, _ in sizes)} over 300):")
    for n, where in sizes[:args.top]:
        print(f"  {n:5d}  {where}")
    funcs = sorted((f for p in known.values() for f in functions(p, root)), key=lambda f: (-f[0], f[1]))
    print(f"longest functions (lines; {sum(n > 50 for n, _ in funcs)} over 50, {sum(n > 30 for n, _ in funcs)} over 30, "
          f"of {len(funcs)}):")
    for n, where in funcs[:args.top]:
        print(f"  {n:5d}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
