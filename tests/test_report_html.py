"""The HTML report opened in a real browser (headless Chromium): it renders its tables and images from one
self-contained file. Skipped when Chromium is not installed (``.ci/run`` installs Debian's ``chromium``)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from beirx.report.build import build_report
from extras import needs
from report_docs import translated_folder, write_all

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)


@pytest.fixture
def html_report(tmp_path):
    needs("matplotlib", "report")  # the page embeds the plots
    translated = translated_folder(tmp_path)
    write_all(tmp_path / "results", translated,
              {"bm25": {"latency_ms_p50": 2.0, "latency_ms_p95": 4.0}, "dense": {"latency_ms_p50": 9.0}})
    return build_report([tmp_path / "results"], tmp_path / "out", permutations=500).html


def test_html_is_self_contained(html_report):
    text = html_report.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing fetched from the network
    assert "<link" not in text and text.count("data:image/png;base64,") == 6
    assert 'href="#src-1"' in text and 'id="src-1"' in text  # numbers link to their provenance


def test_html_renders_in_chromium(html_report, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", html_report.as_uri())
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (2000, 1280)
    assert np.std(pixels) > 0.05  # not blank: text, table rules and figures
    assert (pixels.mean(axis=2) < 0.5).mean() > 0.005  # dark pixels: rendered text

    dom = _chromium(tmp_path, "--dump-dom", html_report.as_uri()).stdout
    for heading in ("Languages: source vs target language", "Systems: NDCG@10 per dataset", "Efficiency",
                    "Translation cost", "Translation quality vs retrieval drop",
                    "Which quality signal predicts the retrieval drop", "Does the translation rank systems like the source?",
                    "Significance tests", "Figures",
                    "Provenance"):
        assert f">{heading}</h2>" in dom, heading
    assert len(re.findall(r'<table class="sortable"', dom)) == 9
    assert len(re.findall(r'<img alt="[^"]+" src="data:image/png;base64,', dom)) == 6
    assert "<b>0.7500</b>" in dom  # the best system on toy [en], in bold
