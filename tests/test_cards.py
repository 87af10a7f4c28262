"""The whole dataset card, pinned byte for byte: a machine translation with a quality report and a native review
(licence outside the Hub's list), and an untranslated export (a Hub licence, no quality report). The goldens in
tests/data/cards were rendered before render_dataset_card was split into section renderers; regenerate them only
for an intended change of the card (BEIRX_REGENERATE_CARDS=1) and read the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from beirx.publish.cards import render_dataset_card
from beirx.publish.verification import Verification

GOLDEN = Path(__file__).parent / "data" / "cards"
CONFIGS = [{"config_name": "corpus", "data_files": [{"split": "corpus", "path": ["corpus/corpus-00000.parquet"]}]},
           {"config_name": "queries", "data_files": [{"split": "queries", "path": ["queries/queries.parquet"]}]},
           {"config_name": "default", "data_files": [{"split": "test", "path": ["qrels/test.parquet"]}]}]
ROWS = {("corpus", "corpus"): 5183, ("queries", "queries"): 1109, ("default", "test"): 339}


def _info(**changes) -> dict:
    info = {"name": "scifact-pl", "lang": "pl", "title": "SciFact (Polish)", "summary": "SciFact from BEIR, in Polish.",
            "repo_id": "org/scifact-pl", "checksum": "sha256:abc123", "license": "CC BY-NC 2.0",
            "task": "Fact Checking", "source_id": "BeIR/scifact", "ignore_identical_ids": False, "eval_split": "test",
            "provenance": {"translator": "opus-mt", "model": "Helsinki-NLP/opus-mt-en-pl", "model_revision": "r1",
                           "source_language": "en", "target_language": "pl", "source_dataset": "scifact",
                           "source_checksum": "sha256:def456", "partial": True, "created": "2026-11-27T00:00:00Z"},
            "quality": {"queries flagged share": 0.0125, "corpus similarity (mean)": 0.876543},
            "verification": Verification("human-verified", "a native review of 120 items",
                                         {"reviewed items": 120, "adequate share": 0.9166666, "reviewers": "2"}),
            "configs": CONFIGS, "rows": ROWS, "beirx_version": "9.9.9"}
    return {**info, **changes}


CASES = {
    "translated": _info(),
    "untranslated": _info(name="scifact", lang="en", title="SciFact", license="cc-by-sa-4.0", task="Other",
                          ignore_identical_ids=None, quality=None, provenance={"translator": None, "source_dataset": None},
                          verification=Verification("found", "the source dataset's own text")),
    "no-quality-no-source": _info(license=None, source_id=None, quality=None,
                                  provenance={"translator": "apertium", "source_dataset": None},
                                  verification=Verification("machine-translated", "no review",
                                                            {"reviewed items": 10, "alpha": 0.41})),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_whole_dataset_card_is_pinned(case):
    card = render_dataset_card(CASES[case])
    golden = GOLDEN / f"{case}.md"
    if os.environ.get("BEIRX_REGENERATE_CARDS"):
        golden.write_text(card, encoding="utf-8")
    assert card == golden.read_text(encoding="utf-8")
