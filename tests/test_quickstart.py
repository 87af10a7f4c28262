"""The README's set-up and quickstart commands, as written, in a fresh virtual environment: the set-up installs
beirx from a copy of this checkout with the ``quickstart`` extra and the CPU torch, then ``quickstart.sh`` runs the
whole flow (evaluate, subset, translate, check, evaluate both languages, report) and prints where the report is.

What differs from a reader's machine, and why:
- ``sudo`` is dropped from the set-up line when the test runs as root on a machine without sudo (CI's container);
  the ``apt-get install`` itself runs, finding the packages installed.
- ``PIP_RETRIES=0``: the PyTorch index the line names is unreachable here, and pip would otherwise retry it five
  times for every package; the CPU torch comes from the local package index instead.
- ``scifact`` is the catalogue's copy already in the fresh ``~/.cache/beirx`` (the docs tests' slice of the real
  SciFact: 60 test queries, 100 documents), as if downloaded earlier: dataset hosts are unreachable.
pip's own cache is left as it is (a second install on a machine is that fast too).

The quickstart's refusals are cheap and run everywhere: a missing Apertium pair or extra stops it before any
work with one sentence naming the install line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docs_blocks import REPO, blocks
from test_docs_commands import scifact_slice  # noqa: F401  (a fixture)

SETUP_TIMEOUT = 1800


def _readme_block(heading: str) -> str:
    """The first shell block under ``## heading`` of README.md, ``\\`` continuations joined."""
    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8")
    start = text.index(f"## {heading}\n")
    (block, *_) = [b for b in blocks(readme) if b.shell and b.line > text[:start].count("\n") + 1]
    return block.text.replace("\\\n", " ")


def _checkout_copy(target: Path) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore) copied to ``target``, as a clone."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _clean_env(venv: Path, home: Path) -> dict[str, str]:
    """A shell of the fresh environment: its bin first on PATH, nothing of this test process's Python setup."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "BEIRX_", "VIRTUAL_ENV", "PYENV_VERSION", "HF_", "CONDA"))}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv),
               BEIRX_HOME=str(home / ".cache" / "beirx"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               PIP_RETRIES="0", OMP_NUM_THREADS="1")
    return env


def test_the_readme_commands_are_one_line_each():
    setup = _readme_block("Set-up")
    assert setup.count("\n") == 0 and setup.startswith("sudo apt-get install -y apertium apertium-eng-spa && pip ")
    assert "torch==" in setup and "download.pytorch.org/whl/cpu" in setup and '".[quickstart]"' in setup
    assert _readme_block("Quickstart") == "DATA=scifact bash quickstart.sh"


@pytest.mark.slow
def test_set_up_and_quickstart_in_a_fresh_virtual_environment(scifact_slice, tmp_path):  # noqa: F811
    setup = _readme_block("Set-up")
    if shutil.which("sudo") is None:
        if os.geteuid() != 0:
            pytest.skip("the set-up line needs sudo or root for apt-get")
        setup = setup.removeprefix("sudo ")
    clone = _checkout_copy(tmp_path / "beirx")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    home = tmp_path / "home"
    shutil.copytree(scifact_slice, home / ".cache" / "beirx" / "datasets" / "scifact")
    env = _clean_env(venv, home)

    start = time.perf_counter()
    done = subprocess.run(["bash", "-e", "-c", setup], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=SETUP_TIMEOUT)
    print(f"set-up: {time.perf_counter() - start:.0f} s, exit {done.returncode}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    torch = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
                           env=env, capture_output=True, text=True)
    assert torch.stdout.strip().endswith("+cpu"), torch.stdout + torch.stderr  # the CPU build, not CUDA's

    start = time.perf_counter()
    done = subprocess.run(["bash", "-e", "-c", _readme_block("Quickstart")], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=1800)
    print(f"quickstart: {time.perf_counter() - start:.0f} s, exit {done.returncode}")
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    report = clone / "quickstart" / "report" / "report.html"
    assert done.stdout.strip().splitlines()[-1] == f"The report: {report} (Markdown: report/report.md)"
    markdown = (report.parent / "report.md").read_text(encoding="utf-8")
    assert "| es |" in markdown or " es " in markdown  # the languages table has the Spanish row
    for path in ("results/full", "subset/subset.json", "subset-es/translation.json", "subset-es/quality/quality.md"):
        assert (clone / "quickstart" / path).exists(), path


def _fake(folder: Path, name: str, script: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    (folder / name).chmod(0o755)


@pytest.mark.parametrize("missing,expected", [
    ("apertium", "Apertium's English-Spanish pair is missing: sudo apt-get install apertium apertium-eng-spa"),
    ("extras", "the quickstart's extras are missing: pip install -e '.[quickstart]'"),
    ("beirx", "beirx is not installed: pip install -e '.[quickstart]'"),
])
def test_the_quickstart_names_what_is_missing_before_any_work(missing, expected, tmp_path):
    """A machine without the Apertium pair, the extras or beirx: exit 2 and one sentence naming the install
    line, and nothing written."""
    bin_dir = tmp_path / "bin"
    _fake(bin_dir, "apertium", "echo eng-cat" if missing == "apertium" else "echo eng-spa")
    _fake(bin_dir, "python", "exit 1" if missing == "extras" else "exit 0")
    if missing != "beirx":
        _fake(bin_dir, "beirx", "exit 0")
    # only the fakes and the shell's basic tools: no beirx, python or apertium of this machine
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("grep", "mkdir", "cat", "echo"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    env = {"PATH": f"{bin_dir}{os.pathsep}{tools}", "HOME": str(tmp_path)}
    done = subprocess.run([shutil.which("bash"), str(REPO / "quickstart.sh")], cwd=tmp_path, env=env, capture_output=True,
                          text=True)
    assert (done.returncode, done.stderr.strip()) == (2, expected)
    assert not (tmp_path / "quickstart").exists()
