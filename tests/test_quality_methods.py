"""Quality methods as an extension point: a new method is one class (its scores and flags reach quality.json,
flagged.jsonl and quality.md with nothing else changed); the worst-row ranking; the CLI offers every
registered method's flags; COMET's model-folder checks (the real COMET run is in test_quality_comet.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from artifact_fixtures import row_flags
from conftest import write_beir

from beirx.artifacts.quality import QualityReport
from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.translate.quality import QUALITY_METHODS, run_quality
from beirx.translate.quality.base import FieldPairs, MethodResult, QualityMethod, Score
from beirx.translate.quality.rule_checks import Checks
from beirx.translate.quality.stats import low_outlier_mask
from beirx.translate.quality.translation_flags import TranslationFlags


class WordRatio(QualityMethod):
    """A toy method: translation words / source words, flagged below 0.5 (hand-checkable)."""

    name = "word_ratio"
    scores = (Score("word_ratio", "translation words per source word", scale=(0.0, 2.0)),)
    flags = {"few_words": "fewer than half the source's words"}

    def describe(self, context):
        return {"rule": "words(translation) / words(source)"}

    def score(self, pairs: FieldPairs, context) -> MethodResult:
        values = {i: len(t.split()) / len(s.split()) for i, s, t in zip(pairs.ids, pairs.sources, pairs.translations)}
        result = MethodResult(values={"word_ratio": values}, scored=len(values),
                              summary={"rule": "< 0.5", "folder": str(context.translated_root)})
        for item, value in values.items():
            if value < 0.5:
                result.flag(item, "few_words", word_ratio=value)
        return result


SOURCE = ["the cat sleeps on the warm mat", "dogs bark at night", "birds sing in the morning", "it rains"]
TARGET = ["el gato duerme", "los perros ladran de noche", "birds sing in the morning", "llueve mucho hoy"]


def scores_of(report: QualityReport, field: str) -> dict[str, dict]:
    return {row["id"]: row["scores"] for row in report.rows([field])}


def _datasets(tmp_path):
    def build(name, texts):
        root = write_beir(tmp_path / name, [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(texts)],
                          [{"_id": f"q{i}", "text": t} for i, t in enumerate(texts)],
                          {"test": [(f"q{i}", f"d{i}", 1) for i in range(len(texts))]})
        return BeirDataset(root)

    return build("en", SOURCE), build("es", TARGET)


def test_a_new_method_needs_no_other_change(tmp_path):
    source, translated = _datasets(tmp_path)
    report = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es",
                         methods=[Checks(), WordRatio()], fields=("queries",), show_progress=False)
    entry = report.fields["queries"]
    ratios = {"q0": 3 / 7, "q1": 5 / 4, "q2": 1.0, "q3": 3 / 2}
    assert scores_of(report, "queries") == {i: {"word_ratio": value} for i, value in ratios.items()}
    assert entry.scores["word_ratio"].mean == pytest.approx(sum(ratios.values()) / 4)
    assert entry.scores["word_ratio"].histogram.edges[:3] == [0.0, 0.1, 0.2]
    assert entry.scores["word_ratio"].histogram.counts[4] == 1 and entry.scores["word_ratio"].histogram.counts[15] == 1
    assert entry.methods["word_ratio"].summary == {"rule": "< 0.5", "folder": str(translated.root)}
    assert entry.methods["word_ratio"].scored == 4
    # flags of every method together, in method order: q2 is an untranslated copy, q0 lost words (and is
    # under half the source's characters: 14/30)
    assert row_flags(report, "queries") == {"q0": ["length_ratio", "few_words"], "q2": ["untranslated", "wrong_language"]}
    assert entry.flags == {"few_words": 1, "length_ratio": 1, "untranslated": 1, "wrong_language": 1}
    assert entry.flagged_items == 2
    assert report.scores["word_ratio"].method == "word_ratio" and report.scores["word_ratio"].scale == [0.0, 2.0]
    assert report.methods["word_ratio"].description == {"rule": "words(translation) / words(source)"}
    assert list(report.methods) == ["checks", "word_ratio"] and report.encoder == {}  # no encoder was loaded
    assert QualityReport.load(tmp_path / "q" / "quality.json") == report
    # the rows are in the sidecar, one line each, the rank hand-computed: q0's ratio is the lowest of four (0/3)
    sidecar = [json.loads(line) for line in (tmp_path / "q" / "rows.jsonl").read_text().splitlines()]
    assert sidecar[0] == {"field": "queries", "id": "q0", "flags": ["length_ratio", "few_words"], "rank": 0.0,
                          "scores": {"word_ratio": 3 / 7}}
    assert [(r["id"], r["rank"]) for r in sidecar] == [("q0", 0.0), ("q1", 2 / 3), ("q2", 1 / 3), ("q3", 1.0)]
    assert "rows" not in json.loads((tmp_path / "q" / "quality.json").read_text())["fields"]["queries"]

    flagged = [json.loads(line) for line in (tmp_path / "q" / "flagged.jsonl").read_text().splitlines()]
    assert [(r["id"], r["reasons"], r["word_ratio"]) for r in flagged] == [("q0", ["length_ratio", "few_words"], 0.4286),
                                                                          ("q2", ["untranslated", "wrong_language"], 1.0)]
    assert flagged[0]["details"] == {"length_ratio": round(14 / 30, 3), "word_ratio": 3 / 7}
    md = (tmp_path / "q" / "quality.md").read_text(encoding="utf-8")
    assert "| queries | `word_ratio` | ↑ | 4 | 0 | 1.045 |" in md
    assert "- `few_words` (word_ratio): fewer than half the source's words" in md
    worst = md[md.index("## Worst 4 queries rows"):]
    assert worst.index("`q0`") < worst.index("`q2`") < worst.index("`q3`") and "| `q2` | untranslated, wrong_language | 1.000 |" in worst


def test_translation_flags_of_an_llm_backend_join_the_report(tmp_path):
    source, translated = _datasets(tmp_path)
    assert run_quality(source, translated, tmp_path / "none", src_lang="en", tgt_lang="es", fields=("queries",),
                       methods=[TranslationFlags()], show_progress=False).fields["queries"].flagged_items == 0
    rows = [{"field": "queries", "id": "q1", "outcome": "fallback", "reasons": ["untranslated"], "units": []},
            {"field": "queries", "id": "q3", "outcome": "flagged", "reasons": ["length_ratio", "lost_numbers"],
             "units": []},
            {"field": "corpus", "id": "d0", "outcome": "flagged", "reasons": ["refusal"], "units": []}]
    (translated.root / "translation_flags.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es", fields=("queries",),
                         methods=[Checks(), TranslationFlags()], show_progress=False)
    entry = report.fields["queries"]
    assert row_flags(report, "queries") == {"q0": ["length_ratio"], "q1": ["llm_fallback"],
                                              "q2": ["untranslated", "wrong_language"], "q3": ["llm_flagged"]}
    assert entry.flags["llm_fallback"] == entry.flags["llm_flagged"] == 1 and entry.flagged_items == 4
    assert entry.methods["translation_flags"].summary == {"records": 2}
    assert report.methods["translation_flags"].description == {"file": "translation_flags.jsonl", "present": True}
    flagged = {r["id"]: r for r in map(json.loads, (tmp_path / "q" / "flagged.jsonl").read_text().splitlines())}
    assert flagged["q3"]["details"]["llm"] == {"outcome": "flagged", "reasons": ["length_ratio", "lost_numbers"]}
    md = (tmp_path / "q" / "quality.md").read_text(encoding="utf-8")
    assert "- `llm_fallback` (translation_flags): the LLM's answers were rejected; the --fallback translator" in md


def test_ranked_rows_by_flags_then_mean_percentile(tmp_path):
    source, translated = _datasets(tmp_path)
    report = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es",
                         methods=[Checks(), WordRatio()], fields=("queries",), show_progress=False)
    # q0 and q2 have two flags each: q0's ratio (0.43) ranks below q2's (1.0); q1 (1.25) and q3 (1.5) are
    # unflagged, the lower ratio first
    assert [row["id"] for row in report.worst(10, ["queries"])] == ["q0", "q2", "q1", "q3"]
    assert [row["id"] for row in QualityReport.load(tmp_path / "q" / "quality.json").worst(2)] == ["q0", "q2"]


def test_two_methods_may_not_claim_one_score(tmp_path):
    source, translated = _datasets(tmp_path)

    class Clash(WordRatio):
        name = "clash"

    with pytest.raises(BeirxError, match="word_ratio and clash both produce a score named 'word_ratio'"):
        run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es",
                    methods=[WordRatio(), Clash()], show_progress=False)


def test_rows_scored_in_chunks_and_out_of_order_give_the_same_report(tmp_path, monkeypatch):
    """Chunks of 8,192 rows bound the memory; chunks of 3 rows, or a translation whose rows are not in the source's
    order (then held in memory), give the same report, row by row."""
    from beirx.translate.quality import base

    texts = [f"{word} number {n} of the test corpus" for n, word in enumerate(["cats", "dogs", "birds"] * 10)]
    out = [t.replace("number", ["número", "num.", "el número"][n % 3]) for n, t in enumerate(texts)]
    out[4], out[7], out[11] = texts[4], " ".join([out[7]] * 5), ""  # a copy, a blown-up translation, an empty one
    source = BeirDataset(write_beir(tmp_path / "en", [{"_id": f"d{i}", "title": "", "text": t}
                                                      for i, t in enumerate(texts)], [], {}))

    def report(name, rows):
        translated = BeirDataset(write_beir(tmp_path / name, rows, [], {}))
        run_quality(source, translated, tmp_path / f"q-{name}", src_lang="en", tgt_lang="es", fields=("corpus",),
                    methods=[Checks(), WordRatio()], show_progress=False)
        written = json.loads((tmp_path / f"q-{name}" / "quality.json").read_text())
        del written["fields"]["corpus"]["methods"]["word_ratio"]["summary"]["folder"]  # (the translation's folder)
        return written["fields"], (tmp_path / f"q-{name}" / "rows.jsonl").read_text()

    rows = [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(out)]
    whole = report("es", rows)
    flags = [json.loads(line)["flags"] for line in whole[1].splitlines()]
    assert "length_ratio" in flags[7] and "untranslated" in flags[4] and flags[11] == ["empty", "few_words"]
    assert whole[0]["corpus"]["flags"]["length_ratio"] == 1 and whole[0]["corpus"]["methods"]["checks"]["summary"][
        "length_ratio"]["method"] == "robust z-score of log ratio"
    monkeypatch.setattr(base, "CHUNK", 3)
    assert report("es-chunked", rows) == whole
    assert report("es-shuffled", rows[15:] + rows[:15]) == whole


@pytest.mark.parametrize("side", ["en", "es"])
def test_a_duplicate_id_in_either_corpus_stops_quality_naming_its_line(tmp_path, capsys, side):
    """The readers that stream the corpus for scoring skip the duplicate-ID check (8 bytes a row); the first walk
    over the source checks it, and a translation repeating an ID cannot follow the source's order, so it is read
    with the check: either way the run stops with the file and line, before writing a report."""
    source, translated = _datasets(tmp_path)
    corpus = (source if side == "en" else translated).corpus_path
    lines = corpus.read_text().splitlines()
    corpus.write_text("\n".join(lines + [lines[1]]) + "\n")
    code = main(["quality", str(translated.root), "--source", str(source.root), "--lang", "es", "--no-similarity",
                 "--fields", "corpus", "--output", str(tmp_path / "q"), "--no-progress"])
    assert code == 2
    assert f"{corpus}:5: duplicate _id 'd1'" in capsys.readouterr().err
    assert not (tmp_path / "q" / "quality.json").exists()


def test_low_outliers_by_robust_z():
    values = np.array([0.8 + 0.001 * (i % 7) for i in range(30)] + [0.2, np.nan])  # row 30 is bad, 31 has no value
    assert low_outlier_mask(values).nonzero()[0].tolist() == [30]
    assert low_outlier_mask(-values, higher_is_better=False).nonzero()[0].tolist() == [30]
    assert not low_outlier_mask(np.array([0.1, 0.9])).any()  # too few rows for a robust rule


def test_cli_offers_every_registered_method(capsys):
    assert main(["quality", "--help"]) == 0
    help_text = capsys.readouterr().out
    for name in QUALITY_METHODS.in_order():
        if name not in ("checks", "translation_flags"):  # always on, no options (argparse hides an empty group)
            assert f"quality method {name}:" in help_text
    assert "--roundtrip-sample N|all" in help_text and "--comet PATH" in help_text and "--no-similarity" in help_text


def test_a_toy_method_is_one_module_plus_one_registry_line(tmp_path, capsys, monkeypatch):
    """tests/quality_toy.py declares its flags (defaults there, once), scores, flags, report and card lines; one
    registry line later beirx quality offers its flags, runs it, and its column, report line and figure appear."""
    monkeypatch.setattr(QUALITY_METHODS, "_entries", dict(QUALITY_METHODS._entries))  # undone after the test
    QUALITY_METHODS.register("char_ratio", "quality_toy:CharRatio")  # the one line
    assert main(["quality", "--help"]) == 0
    assert "quality method char_ratio:" in capsys.readouterr().out
    source, translated = _datasets(tmp_path)
    assert main(["quality", str(translated.root), "--source", str(source.root), "--lang", "es", "--no-similarity",
                 "--no-progress", "--toy", "--toy-max-ratio", "1.4", "--output", str(tmp_path / "q")]) == 0
    printed = capsys.readouterr().out
    # its score's mean ((14/30 + 26/18 + 1 + 2) / 4), its figure after the checks' one, its flag counted
    line = printed.splitlines()[1]
    assert line.startswith("queries       4        4  char_ratio 1.2278; in target language ")
    assert line.endswith(", longest ratio 2.0000; flags: length_ratio 1, too_long 2, untranslated 1, wrong_language 1")
    report = QualityReport.load(tmp_path / "q" / "quality.json")
    assert report.methods["char_ratio"].description == {"max_ratio": 1.4}
    # characters: q0 14/30, q1 26/18, q2 25/25, q3 16/8; above 1.4: q1 and q3
    assert scores_of(report, "corpus") == {"d0": {"char_ratio": 14 / 30}, "d1": {"char_ratio": 26 / 18},
                                           "d2": {"char_ratio": 1.0}, "d3": {"char_ratio": 2.0}}
    assert row_flags(report, "queries") == {"q0": ["length_ratio"], "q1": ["too_long"],
                                            "q2": ["untranslated", "wrong_language"], "q3": ["too_long"]}
    md = (tmp_path / "q" / "quality.md").read_text(encoding="utf-8")
    assert "- Longest queries translation: 2.00x its source." in md and "- Longest corpus translation: 2.00x" in md
    assert "- `too_long` (char_ratio): the translation is more than --toy-max-ratio times" in md
    from beirx.publish.cards import read_quality

    assert QualityReport.path_in(translated.root).parent != tmp_path / "q"
    (translated.root / "quality").mkdir()
    for name in ("quality.json", "rows.jsonl"):
        (translated.root / "quality" / name).write_bytes((tmp_path / "q" / name).read_bytes())
    assert read_quality(translated.root)["queries longest ratio"] == 2.0


# -- COMET: model folder checks (no unbabel-comet needed) -------------------------------------------------------
def _comet_folder(tmp_path, hparams: str):
    folder = tmp_path / "kiwi"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "model.ckpt").write_bytes(b"not loaded in these tests")
    (folder / "hparams.yaml").write_text(hparams, encoding="utf-8")
    return folder


def test_comet_refuses_a_folder_that_is_not_a_reference_free_model(tmp_path, capsys):
    source, translated = _datasets(tmp_path)
    args = ["quality", str(translated.root), "--source", str(source.root), "--lang", "es", "--no-similarity",
            "--no-progress", "--comet"]
    assert main(args + [str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: not a COMET model (expected a folder with checkpoints/model.ckpt" in \
        capsys.readouterr().err
    with_reference = _comet_folder(tmp_path, "class_identifier: regression_metric\npretrained_model: xlm-roberta-large\n")
    assert main(args + [str(with_reference)]) == 2
    assert "class_identifier 'regression_metric' needs a reference translation" in capsys.readouterr().err
    assert not (translated.root / "quality").exists()  # refused before any work


def test_comet_without_the_extra_names_it(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "comet", None)  # as when unbabel-comet is not installed
    source, translated = _datasets(tmp_path)
    kiwi = _comet_folder(tmp_path, "class_identifier: unified_metric\ninput_segments: [mt, src]\n"
                                   "pretrained_model: microsoft/infoxlm-large\n")
    assert main(["quality", str(translated.root), "--source", str(source.root), "--lang", "es", "--no-similarity",
                 "--no-progress", "--fields", "queries", "--comet", str(kiwi)]) == 2
    assert "beirx[comet]" in capsys.readouterr().err
