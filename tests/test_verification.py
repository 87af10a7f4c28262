"""sample_creation from the evidence: the dataset card and the MTEB task say "machine-translated and verified"
only with a human review of enough items and agreement, "machine-translated and LM verified" with an LLM judge
only, and why."""

from __future__ import annotations

import dataclasses

import pytest
from artifact_fixtures import BEFORE_V3, translation_manifest
from conftest import write_beir
from review_fixtures import scripted_review

from beirx.artifacts.quality import MethodField, MethodInfo, QualityReport
from beirx.data.dataset import BeirDataset
from beirx.data.front_matter import read_front_matter
from beirx.publish import verification
from extras import needs

AGREE = {"Ana": [(5, 5), (4, 4), (2, 3), (5, 4), (1, 2)], "Ben": [(5, 4), (4, 4), (2, 2), (4, 4), (1, 1)]}
DISAGREE = {"Ana": [(5, 5), (1, 4), (5, 3), (1, 4), (5, 2)], "Ben": [(1, 4), (5, 4), (1, 2), (5, 4), (2, 1)]}


def _translated(tmp_path, name="scifact-es"):
    root = write_beir(tmp_path / name, [{"_id": "d1", "title": "Gatos", "text": "Los gatos cazan ratones."},
                                         {"_id": "d2", "title": "", "text": "Los perros son leales."}],
                      [{"_id": "q1", "text": "¿Quién caza ratones?"}, {"_id": "q2", "text": "perro leal"},
                       {"_id": "q3", "text": "gatos"}],
                      {"test": [("q1", "d1", 1), ("q2", "d2", 1)]})
    translation_manifest(name="scifact", src="en", tgt="es", translator={"backend": "apertium"}).save(
        root / "translation.json")
    return BeirDataset(root, name="scifact", lang="es")


def _judged(root):
    """A quality report whose methods include the LLM judge (2 rows judged)."""
    report = QualityReport.load(BEFORE_V3 / "quality.json")
    fields = {name: dataclasses.replace(entry, methods={**entry.methods, "judge": MethodField(scored=1, missing=0)})
              for name, entry in report.fields.items()}
    judge = MethodInfo(description={"model": "gemma"}, scores=["judge_mqm", "judge_da"], flags={})
    dataclasses.replace(report, fields=fields, methods={**report.methods, "judge": judge}).save(
        QualityReport.path_in(root))


def test_the_label_follows_the_evidence(tmp_path):
    dataset = _translated(tmp_path)
    label = lambda **kw: verification.verification(dataset.root, dataset.checksum(), True, **kw)  # noqa: E731
    assert verification.verification(dataset.root, dataset.checksum(), False).sample_creation == "found"
    assert label() == verification.Verification("machine-translated", "no human review or LLM judge on record")
    _judged(dataset.root)
    assert label().sample_creation == "machine-translated and LM verified"
    assert label().reason == "an LLM judge scored 2 translations" and label().figures == {"LLM-judged items": 2}

    scripted_review(dataset.root, AGREE)  # 5 items, 2 annotators who agree
    found = label(min_items=5)
    assert found.sample_creation == "machine-translated and verified"
    assert found.figures["reviewed items"] == 5 and found.figures["annotators"] == 2
    alpha = found.figures["Krippendorff's alpha (adequacy, ordinal)"]
    assert alpha > 0.8 and found.reason.startswith(f"5 items rated by 2 native speakers, Krippendorff's alpha {alpha:.3f}")
    too_few = label()  # the default asks for 100 items: the judge's label, saying why the review did not count
    assert too_few.sample_creation == "machine-translated and LM verified"
    assert too_few.reason.startswith("the human review rated 5 items, fewer than 100; an LLM judge scored 2")
    assert label(min_items=5, min_alpha=0.99).reason.startswith(
        f"the annotators' agreement (Krippendorff's alpha {alpha:.3f}) is below 0.99")

    (dataset.root / "queries.jsonl").write_text('{"_id": "q1", "text": "otra"}\n', encoding="utf-8")
    stale = verification.verification(dataset.root, BeirDataset(dataset.root).checksum(), True, min_items=5)
    assert stale.reason.startswith("the human review is of another version of the data")


def test_disagreeing_annotators_do_not_verify(tmp_path):
    dataset = _translated(tmp_path)
    scripted_review(dataset.root, DISAGREE)
    found = verification.verification(dataset.root, dataset.checksum(), True, min_items=5)
    assert found.sample_creation == "machine-translated"
    assert "is below 0.667" in found.reason and found.figures["Krippendorff's alpha (adequacy, ordinal)"] < 0.667


def test_card_and_mteb_task_state_it(tmp_path):
    needs("mteb", "mteb")
    needs("pyarrow", "hub")
    from beirx.publish.hub import export_dataset
    from beirx.publish.mteb_task import build_spec, build_task_class

    dataset = _translated(tmp_path)
    scripted_review(dataset.root, AGREE)
    out = export_dataset(dataset, tmp_path / "hub", repo_id="org/scifact-es", min_review_items=5)
    meta = read_front_matter(out / "README.md")
    assert meta["beirx"]["sample_creation"] == "machine-translated and verified"
    assert meta["beirx"]["review"]["reviewed items"] == 5 and meta["beirx"]["review"]["annotators"] == 2
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "MTEB `sample_creation`: **machine-translated and verified** (5 items rated by 2 native speakers" in card
    assert "| acceptable share | 0.6 |" in card and (out / "provenance" / "review" / "review.json").is_file()
    assert not (out / "provenance" / "review" / "review.sqlite").exists()  # its secret stays home

    spec = build_spec(dataset, dataset_path="org/scifact-es", dataset_revision="a" * 40, min_review_items=5)
    assert build_task_class(spec).metadata.sample_creation == "machine-translated and verified"  # mteb accepts it
    default = build_spec(dataset, dataset_path="org/scifact-es", dataset_revision="a" * 40)
    assert default.sample_creation == "machine-translated"  # 5 items < 100
