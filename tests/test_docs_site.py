"""The documentation site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``: a broken link or anchor, a
page left out of the nav, an API reference to a name that no longer exists all fail the build. The command-line
reference is generated from beirx's own parsers at build time, so it cannot drift."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

from beirx.cli import COMMANDS
from beirx.cli.reference import command_parser, markdown

REPO = Path(__file__).resolve().parents[1]
CODE_WIDTH = 100
"""Characters of a code line that fit the page's code block at a 1400 px window (Chromium, Material's
default monospace size and docs/stylesheets/extra.css): the widest line that does not scroll sideways."""
# what makes a browser fetch: an element's src, a stylesheet or icon link, CSS url() and @import
FETCHES = re.compile(r"""<(?:script|img|iframe|source|audio|video|embed)\b[^>]*\bsrc=["']?(https?:)?//"""
                     r"""|<link\b[^>]*\bhref=["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import\s+["']?(https?:)?//""",
                     re.IGNORECASE)
BLOCK = re.compile(r'<div class="(?P<cls>[^"]*\bhighlight\b[^"]*)"><pre>(?P<body>.*?)</pre>', re.DOTALL)


def external_fetches(site: Path) -> list[str]:
    """Every place in the built site that would make a browser fetch from another host."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix in (".html", ".css") and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [f"{path.relative_to(site)}: {text[m.start():m.start() + 120]}" for m in FETCHES.finditer(text)]
            # Material's script fetches Mermaid from unpkg.com for a diagram, and a repository's stars from
            # api.github.com when the site names one
            if path.suffix == ".html" and ('class="mermaid"' in text or 'class="md-source"' in text):
                found.append(f"{path.relative_to(site)}: a Mermaid diagram or a repository link")
    return found


def code_lines_too_wide(site: Path) -> list[str]:
    """Code lines wider than CODE_WIDTH in the site's code blocks (commands, Python, API signatures, the CLI
    reference). Printed output (a fence with no language, or ``text``) is exempt: the stylesheet wraps it."""
    found = []
    for path in sorted(site.rglob("index.html")):
        for match in BLOCK.finditer(path.read_text(encoding="utf-8")):
            classes = match["cls"].split()
            if not any(c.startswith("language-") for c in classes) and "doc-signature" not in classes \
                    or "language-text" in classes:
                continue
            text = html.unescape(re.sub(r"<[^>]+>", "", match["body"]))
            found += [f"{path.parent.relative_to(site)}: {len(line)} {line[:60]!r}" for line in text.splitlines()
                      if len(line) > CODE_WIDTH]
    return found


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
    assert 'id="quickstart"' in home and "bash quickstart.sh" in home  # the README's quickstart, included
    assert "extract_model" in home  # and the script it runs
    assert external_fetches(site) == []  # air-gapped: no fonts, scripts or styles from other hosts
    assert code_lines_too_wide(site) == []
    assert "white-space: pre-wrap" in (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")


def test_what_the_site_checks_catch(tmp_path):
    """A Google Fonts stylesheet, a CDN script and a CSS import are fetches; a link to another site is not.
    A 101-character command is too wide; the same line as printed output is not."""
    (tmp_path / "index.html").write_text(
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">\n'
        '<script src="//cdn.example.org/x.js"></script>\n<a href="https://github.com/">a link</a>\n'
        f'<div class="language-bash highlight"><pre><span></span><code>{"x" * 101}\n{"y" * 100}</code></pre></div>\n'
        f'<div class="highlight"><pre><span></span><code>{"z" * 300}</code></pre></div>\n', encoding="utf-8")
    (tmp_path / "style.css").write_text('@import "https://fonts.example.org/a.css";\nb { background: url(/x.png) }',
                                        encoding="utf-8")
    found = external_fetches(tmp_path)
    assert len(found) == 3 and "googleapis" in found[0] and "cdn.example.org" in found[1] and "style.css" in found[2]
    assert code_lines_too_wide(tmp_path) == [f".: 101 {'x' * 60!r}"]


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


CONTRIBUTOR_PAGES = {"contributing.md", "docs-tests.md"}
# notes on how a figure was produced that mean nothing to a reader
PRODUCTION_NOTES = re.compile(r"\bissue \d+|\bthe issue's|shared machine|loaded machine|load average|this round",
                              re.IGNORECASE)


def test_user_pages_name_no_path_of_the_development_setup_nor_notes_on_the_day():
    """``../shared`` (this project's test data, beside a clone) is named only by the contributor pages and the
    README's test instructions; no user text carries notes such as "issue 31" or "on the shared machine"."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    user_text = {"README.md": readme[:readme.index("\n## Tests\n")]}
    user_text |= {f"docs/{p.name}": p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").glob("*.md"))
                  if p.name not in CONTRIBUTOR_PAGES}
    assert [name for name, text in user_text.items() if "../shared" in text] == []
    notes = [f"{name}: {m[0]}" for name, text in user_text.items() for m in PRODUCTION_NOTES.finditer(text)]
    assert notes == []
