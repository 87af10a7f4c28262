"""One progress helper: every long loop's bar or log lines come from beirx.progress."""

from __future__ import annotations

import ast
import logging

from conftest import REPO


def _imports_tqdm(node) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "tqdm" for alias in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tqdm"


def test_no_module_but_the_helper_imports_tqdm():
    offenders = [str(path.relative_to(REPO)) for path in sorted((REPO / "beirx").rglob("*.py"))
                 if path != REPO / "beirx" / "progress.py"
                 and any(_imports_tqdm(n) for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))]
    assert offenders == []


def test_silenced_progress_shows_and_logs_nothing(caplog, monkeypatch):
    from beirx import progress as progress_mod

    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    with caplog.at_level(logging.INFO, logger="beirx.progress"):
        with progress_mod.silenced():
            with progress_mod.progress(total=2, desc="inner", unit="q") as bar:
                bar.update(2)
            assert list(progress_mod.progress(range(3), desc="loop")) == [0, 1, 2]
        with progress_mod.progress(total=1, desc="after", unit="q") as bar:
            bar.update(1)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["after", "after"]
