"""The documentation site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``: a broken link or anchor, a
page left out of the nav, an API reference to a name that no longer exists all fail the build. The command-line
reference is generated from beirx's own parsers at build time, so it cannot drift."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from beirx.cli import COMMANDS
from beirx.cli.reference import command_parser, markdown

REPO = Path(__file__).resolve().parents[1]


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    done = _mkdocs(REPO / "mkdocs.yml", site)
    assert done.returncode == 0, done.stderr[-5000:]
    assert "WARNING" not in done.stderr, done.stderr[-5000:]
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    for anchor in ["beirx", *(f"beirx-{name}" for name in COMMANDS), "beirx-mteb-task", "beirx-train-bi-encoder"]:
        assert f'id="{anchor}"' in cli, anchor
    assert "--roundtrip-sample" in cli and "--bm25-preset" in cli  # flags that quality methods and retrievers add
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("beirx.evaluate.runner.run_plan", "beirx.evaluate.plan.plan_from_config",
                 "beirx.translate.pipeline.translate_dataset", "beirx.report.build.build_report"):
        assert f'id="{name}"' in api, name
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'id="quickstart"' in home and "extract_model" in home  # the README's quickstart, included


def test_a_broken_link_fails_the_build(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nvalidation:\n  unrecognized_links: warn\n", encoding="utf-8")
    done = _mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 1
    assert "Doc file 'index.md' contains a link 'missing.md', but the target is not found among documentation files." \
        in done.stderr


def test_the_cli_reference_is_every_parser():
    page = markdown()
    for name in COMMANDS:
        assert f"## `beirx {name}` {{#beirx-{name}}}" in page
        help_text = command_parser(name).format_help()
        assert help_text.rstrip() in page  # the same text `beirx NAME --help` prints (at a fixed width)
    for nested in ("mteb task", "mteb results", "mteb benchmark", "publish dataset", "publish results",
                   "train bi-encoder", "train cross-encoder"):
        assert f"### `beirx {nested}`" in page
    assert "--round-trip-sample" not in page and "--roundtrip-sample N|all" in page
