"""``beirx quality --comet`` for real: a random-weight CometKiwi-shaped checkpoint built with unbabel-comet's
own classes and saved as COMET publishes models, loaded through the same path a user's model folder takes,
its scores compared with COMET's own ``predict``.

unbabel-comet (2.2.7, the newest) pins transformers<5 and fails inside its encoders with transformers 5, so it
cannot share beirx's test environment. The test runs where COMET works: in this interpreter when it imports
comet with transformers<5, or in a subprocess whose PYTHONPATH starts with BEIRX_TEST_COMET_STACK, a folder
holding unbabel-comet and the versions it needs (``pip install --no-deps --target DIR unbabel-comet==2.2.7
entmax==1.3 jsonargparse==3.13.1 pytorch-lightning==2.6.6 torchmetrics==1.9.0 lightning-utilities==0.15.3
transformers==4.57.1 huggingface_hub==0.36.0 tokenizers==0.22.1``). Otherwise it is skipped, saying why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from artifact_fixtures import row_values
from conftest import REPO, write_beir

SCRIPT = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])  # tests/, for tiny_models
from tiny_models import build_tiny_comet
from beirx.cli import main
work, e5, source, translated = map(Path, sys.argv[2:6])
folder = build_tiny_comet(work, e5)
rc = main(["quality", str(translated), "--source", str(source), "--lang", "es", "--no-similarity", "--no-progress",
           "--comet", str(folder), "--comet-batch-size", "4", "--output", str(work / "report")])
rc_sample = main(["quality", str(translated), "--source", str(source), "--lang", "es", "--no-similarity",
                  "--no-progress", "--fields", "queries", "--comet", str(folder), "--comet-sample", "3",
                  "--output", str(work / "sampled")])
from comet import load_from_checkpoint
model = load_from_checkpoint(str(folder / "checkpoints" / "model.ckpt"), local_files_only=True)
rows = [json.loads(line) for name in ("queries", "corpus") for line in open(translated / f"{name}.jsonl")]
sources = {json.loads(line)["_id"]: json.loads(line) for name in ("queries", "corpus")
           for line in open(source / f"{name}.jsonl")}
def text(r):
    return f"{r.get('title', '')} {r['text']}".strip()
expected = model.predict([{"src": text(sources[r["_id"]]), "mt": text(r)} for r in rows], batch_size=8, gpus=0,
                         progress_bar=False).scores
print(json.dumps({"rc": [rc, rc_sample], "folder": str(folder), "expected": dict(zip([r["_id"] for r in rows],
                                                                                   expected))}))
"""

ENGLISH = ["Vitamin D deficiency is common in northern countries.", "Antibiotics do not work against viral infections.",
           "Smoking during pregnancy harms the baby.", "Regular exercise lowers the risk of heart disease.",
           "The library opens at nine in the morning."]
SPANISH = ["La deficiencia de vitamina D es común en los países del norte.",
           "Los antibióticos no funcionan contra las infecciones virales.",
           "Fumar durante el embarazo daña al bebé.", "El ejercicio regular reduce el riesgo de enfermedad cardíaca.",
           "La biblioteca abre a las nueve de la mañana."]


def _comet_pythonpath() -> str | None:
    """Where COMET runs: '' for this interpreter, a folder to put first on PYTHONPATH, or None."""
    stack = os.environ.get("BEIRX_TEST_COMET_STACK")
    if stack and (Path(stack) / "comet").is_dir():
        return stack
    try:
        import comet  # noqa: F401
        import transformers
    except ImportError:
        return None
    return "" if int(transformers.__version__.split(".")[0]) < 5 else None


def test_comet_scores_every_row_through_the_user_loading_path(tmp_path, e5_small):
    stack = _comet_pythonpath()
    if stack is None:
        pytest.skip("no environment where unbabel-comet runs (it needs transformers<5): set BEIRX_TEST_COMET_STACK")

    def build(name, texts):
        return write_beir(tmp_path / name, [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(texts)],
                          [{"_id": f"q{i}", "text": t} for i, t in enumerate(texts)],
                          {"test": [(f"q{i}", f"d{i}", 1) for i in range(len(texts))]})

    source, translated = build("en", ENGLISH), build("es", SPANISH)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (stack, str(REPO)) if p)}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO / "tests"), str(tmp_path / "work"), str(e5_small),
                          str(source), str(translated)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["rc"] == [0, 0]

    from beirx.artifacts.quality import QualityReport
    from beirx.models.files import folder_checksum

    report = QualityReport.load(tmp_path / "work" / "report" / "quality.json")
    assert list(report.methods) == ["checks", "translation_flags", "comet"] and report.scores["comet"].higher_is_better
    assert report.methods["comet"].description["revision"] == folder_checksum(Path(found["folder"]))
    assert report.methods["comet"].description["class"] == "unified_metric"
    for field, prefix in (("queries", "q"), ("corpus", "d")):
        rows = row_values(report, field, "comet")
        assert sorted(rows) == [f"{prefix}{i}" for i in range(5)]
        assert rows == pytest.approx({k: v for k, v in found["expected"].items() if k.startswith(prefix)}, abs=1e-5)
        assert report.fields[field].methods["comet"].scored == 5 and report.fields[field].scores["comet"].n == 5
    sampled = QualityReport.load(tmp_path / "work" / "sampled" / "quality.json")
    assert sampled.methods["comet"].sample == 3 and len(row_values(sampled, "queries", "comet")) == 3
