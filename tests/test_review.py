"""The review stage without a browser: the stratified sample, the statistics (checked against hand computation
and the libraries), applying corrections, and the command's refusals. The web app itself: test_review_app.py."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from conftest import write_beir
from extras import needs
from review_fixtures import jsonl, write_pair

from beirx.artifacts.manifest import TranslationManifest
from beirx.artifacts.quality import QualityReport
from beirx.cli import main
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError, DataError
from beirx.review import statistics
from beirx.review.apply import apply_corrections
from beirx.review.sample import draw, quotas
from beirx.review.store import Item, ReviewStore
from beirx.translate.quality.base import MethodResult, QualityMethod, Score
from beirx.translate.quality.run import run_quality


class IdNumber(QualityMethod):
    """A score equal to the number in the row's ID (q7 -> 7): the 'worst' rows are known in advance."""

    name = "id_number"
    scores = (Score("id_number", "the ID's number"),)

    def describe(self, context):
        return {}

    def score(self, pairs, context):
        return MethodResult(values={"id_number": {i: float(i[1:]) for i in pairs.ids}}, scored=len(pairs))


def _synthetic(tmp_path, queries=40, docs=100):
    def build(name, word):
        return BeirDataset(write_beir(tmp_path / name,
                                      [{"_id": f"d{i}", "title": "", "text": f"{word} document {i}"} for i in range(docs)],
                                      [{"_id": f"q{i}", "text": f"{word} query {i}"} for i in range(queries)],
                                      {"test": [("q0", "d0", 1)]}))

    return build("en", "english"), build("es", "spanish")


def test_stratified_sample(tmp_path):
    source, translated = _synthetic(tmp_path)
    quality = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es", methods=[IdNumber()],
                          show_progress=False)
    items = draw(source, translated, 20, seed=1, quality=quality)
    assert quotas(20, True) == {"damage": 0, "worst": 5, "queries": 5, "documents": 5, "random": 5}
    assert [i.stratum for i in items] == ["worst"] * 5 + ["queries"] * 5 + ["documents"] * 5 + ["random"] * 5
    # lowest percentile ranks of both fields together: q0 and d0 (0), d1 (1/99), d2 (2/99), q1 (1/39)
    assert [(i.field, i.id) for i in items if i.stratum == "worst"] == [("corpus", "d0"), ("corpus", "d1"),
                                                                        ("corpus", "d2"), ("queries", "q0"),
                                                                        ("queries", "q1")]
    assert all(i.field == "queries" for i in items if i.stratum == "queries")
    assert all(i.field == "corpus" for i in items if i.stratum == "documents")
    assert len({(i.field, i.id) for i in items}) == 20 and [i.position for i in items] == list(range(1, 21))
    first = items[7]
    assert first.source == f"english {'query' if first.field == 'queries' else 'document'} {first.id[1:]}"
    assert first.translation == first.source.replace("english", "spanish") and first.scores == {"id_number": float(first.id[1:])}
    assert draw(source, translated, 20, seed=1, quality=quality) == items  # seeded: the same sample
    assert draw(source, translated, 20, seed=2, quality=quality) != items
    plain = draw(source, translated, 20, seed=1)  # no quality report: a third each of the random strata
    assert [i.stratum for i in plain].count("worst") == 0 and [i.stratum for i in plain].count("random") == 8
    small = draw(source, translated, 500, seed=1)
    assert len(small) == 140  # every item of the dataset, once


def test_the_sample_reads_the_rows_of_the_report_on_disk_and_names_a_missing_sidecar(tmp_path):
    source, translated = _synthetic(tmp_path)
    quality = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es", methods=[IdNumber()],
                          show_progress=False)
    saved = QualityReport.load(tmp_path / "q" / "quality.json")
    assert draw(source, translated, 20, seed=1, quality=saved) == draw(source, translated, 20, seed=1, quality=quality)
    (tmp_path / "q" / "rows.jsonl").unlink()
    with pytest.raises(DataError, match=r"rows\.jsonl: cannot read the per-row quality scores .*copy it along, or run "
                                        "beirx quality again"):
        draw(source, translated, 20, seed=1, quality=saved)


def test_the_sample_holds_no_state_per_record(tmp_path, monkeypatch):
    """Bounded memory (issue 32): the sampler streams the files without the readers' duplicate-ID hashes (8 bytes
    a record) and never loads the queries whole; the sample is the same."""
    source, translated = _synthetic(tmp_path)
    quality = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es", methods=[IdNumber()],
                          show_progress=False)
    expected = [(i.field, i.id, i.stratum) for i in draw(source, translated, 20, seed=1, quality=quality)]
    monkeypatch.setattr(beir_io, "_SeenIds", lambda: pytest.fail("the sampler kept every ID"))
    monkeypatch.setattr(BeirDataset, "queries", property(lambda self: pytest.fail("the sampler loaded every query")))
    items = draw(source, translated, 20, seed=1, quality=quality)
    assert [(i.field, i.id, i.stratum) for i in items] == expected and len(expected) == 20


def test_agreement_interval_and_correlation():
    krippendorff = needs("krippendorff", "review")
    annotators, items = ["a", "b", "c"], [1, 2, 3, 4]
    perfect = {(a, i): i % 5 + 1 for a in annotators for i in items}
    assert statistics.krippendorff_alpha(perfect, annotators, items) == pytest.approx(1.0)
    ratings = {("a", 1): 1, ("b", 1): 2, ("a", 2): 4, ("b", 2): 4, ("c", 2): 5, ("a", 3): 2, ("c", 3): 2, ("b", 4): 3}

    matrix = np.array([[1, 4, 2, np.nan], [2, 4, np.nan, np.nan], [np.nan, 5, 2, np.nan]])  # item 4: one rating only
    expected = krippendorff.alpha(reliability_data=matrix[:, :3], level_of_measurement="ordinal",
                                  value_domain=[1, 2, 3, 4, 5])
    assert statistics.krippendorff_alpha(ratings, annotators, items) == pytest.approx(expected)
    assert statistics.krippendorff_alpha({("a", 1): 3}, ["a"], [1]) is None  # nobody to agree with
    assert statistics.krippendorff_alpha({("a", 1): 3, ("b", 1): 3}, ["a", "b"], [1]) is None  # one value: undefined
    # Wilson interval by hand: centre (k + z^2/2)/(n + z^2), half-width z/(n + z^2) sqrt(k(n-k)/n + z^2/4)
    z, k, n = 1.959963984540054, 7, 10
    centre, half = (k + z * z / 2) / (n + z * z), z / (n + z * z) * np.sqrt(k * (n - k) / n + z * z / 4)
    assert statistics.wilson_interval(k, n) == pytest.approx((centre - half, centre + half))
    assert statistics.wilson_interval(0, 0) == (None, None)
    from scipy import stats

    x, y = [0.9, 0.2, 0.5, 0.7, 0.1], [5, 2, 3, 4, 1]
    assert statistics.spearman(x, y) == pytest.approx((1.0, stats.spearmanr(x, y).pvalue))
    assert statistics.spearman([1.0, 2.0], [1, 2]) == (None, None) and statistics.spearman([1, 1, 1], [1, 2, 3]) == (None, None)


def _store_with_sample(dataset_root, items):
    store = ReviewStore.in_folder(dataset_root, create=True)
    store.create_sample(items, {"dataset": {"path": str(dataset_root), "name": "toy", "lang": "es", "checksum": "x"},
                                "source_lang": "en", "size": len(items), "seed": 0, "strata": {}, "quality_report": None})
    return store


def test_apply_writes_titles_and_texts_and_refuses_what_it_cannot_trust(tmp_path, caplog):
    english, spanish = write_pair(tmp_path)
    dataset = BeirDataset(spanish)
    doc = dataset.corpus["d2"]
    items = [Item(1, "corpus", "d2", "random", "Pregnancy Smoking...", doc.joined(), doc.title),
             Item(2, "queries", "q0", "random", "Vitamin D...", dataset.queries["q0"].text),
             Item(3, "queries", "q1", "random", "Antibiotics...", dataset.queries["q1"].text)]
    store = _store_with_sample(spanish, items)
    store.save_rating(1, "Ana", 4, 4, {}, {"title": "Embarazo y tabaco", "text": "Fumar en el embarazo daña al bebé."})
    store.save_rating(2, "Ana", 3, 4, {}, {"text": "La carencia de vitamina D es frecuente en el norte."})
    store.save_rating(2, "Ben", 3, 4, {}, {"text": "La carencia de vitamina D es frecuente en el norte."})  # agrees
    store.save_rating(3, "Ana", 4, 4, {}, {"text": "Los antibióticos no sirven contra los virus."})
    store.save_rating(3, "Ben", 4, 4, {}, {"text": "Los antibióticos no actúan contra los virus."})  # disagrees
    qrels = (spanish / "qrels" / "test.tsv").read_bytes()

    with pytest.raises(BeirxError, match=r"corrected 1 item\(s\) differently \(e\.g\. queries q1: Ana, Ben\)"):
        apply_corrections(dataset)
    assert apply_corrections(dataset, annotator="Ben", dry_run=True) == {"queries": 2, "corpus": 0}
    assert apply_corrections(dataset, annotator="Ana") == {"queries": 2, "corpus": 1}
    fresh = BeirDataset(spanish)
    assert (fresh.corpus["d2"].title, fresh.corpus["d2"].text) == ("Embarazo y tabaco", "Fumar en el embarazo daña al bebé.")
    assert fresh.queries["q1"].text == "Los antibióticos no sirven contra los virus."
    assert list(fresh.corpus) == list(dataset.corpus) and (spanish / "qrels" / "test.tsv").read_bytes() == qrels
    log = jsonl(spanish / "review" / "corrections.jsonl")
    assert {(e["field"], e["id"]): e["machine"] for e in log}[("corpus", "d2")] == {"title": "Embarazo",
                                                                                   "text": doc.text}
    manifest = TranslationManifest.load(spanish / "translation.json")
    assert manifest.corrections.records == {"queries": 2, "corpus": 1} and manifest.corrections.annotators == ["Ana"]
    assert manifest.corrections.log == "review/corrections.jsonl"

    # Ben's q1 now meets Ana's applied text, not the machine output he corrected: refused unless forced
    with pytest.raises(BeirxError, match="queries q1 changed since the review sample was drawn"):
        apply_corrections(BeirDataset(spanish), annotator="Ben")
    assert apply_corrections(BeirDataset(spanish), annotator="Ben", force=True) == {"queries": 1, "corpus": 0}
    assert BeirDataset(spanish).queries["q1"].text == "Los antibióticos no actúan contra los virus."
    assert TranslationManifest.load(spanish / "translation.json").corrections.records == {"queries": 3, "corpus": 1}


def test_command_refusals(tmp_path, capsys):
    english, spanish = write_pair(tmp_path)
    assert main(["review", str(spanish)]) == 2
    assert "has no review yet: say how many items to draw with --sample N" in capsys.readouterr().err
    assert not (spanish / "review").exists()
    assert main(["review", "export", str(spanish)]) == 2
    assert "has no review yet" in capsys.readouterr().err
    assert main(["review", str(spanish), "--sample", "4", "--host", "0.0.0.0"]) == 2
    assert "--host 0.0.0.0 makes the review reachable from other machines" in capsys.readouterr().err
    assert not (spanish / "review").exists()
    assert main(["review", "export"]) == 2 and "name the dataset: beirx review export DATASET" in capsys.readouterr().err

    (spanish / "review").mkdir()
    damaged = spanish / "review" / "review.sqlite"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\x13" * 4000)
    assert main(["review", "export", str(spanish)]) == 2
    assert "the review database is damaged" in capsys.readouterr().err
    assert damaged.read_bytes()[:16] == b"SQLite format 3\x00" and damaged.stat().st_size == 4016  # left as it is
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(damaged).execute("SELECT * FROM sqlite_master").fetchall()
