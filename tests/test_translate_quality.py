"""The quality stage on real text: hand-made English–Polish parallel sentences, the real PolEval Polish
questions (language ID), and real SciFact queries translated to Spanish by Apertium, scored with the real
multilingual-e5-small."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import numpy as np
import pytest

from beirx.artifacts.quality import QualityReport, TableRow
from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.translate.backends import TRANSLATORS
from beirx.translate.quality import langid
from beirx.translate.quality import rule_checks as quality_flags
from beirx.translate.quality import distribution, run_quality
from beirx.translate.quality.roundtrip import RoundTrip
from artifact_fixtures import row_values
from conftest import write_beir
from extras import needs

# Short English sentences with careful Polish translations written for this test (no parallel corpus ships here).
PARALLEL = [
    ("The weather is very cold today.", "Dzisiaj jest bardzo zimno."),
    ("My brother works as a doctor in a large hospital.", "Mój brat pracuje jako lekarz w dużym szpitalu."),
    ("Children should drink more water during the summer.", "Dzieci powinny pić latem więcej wody."),
    ("The library opens at nine in the morning.", "Biblioteka otwiera się o dziewiątej rano."),
    ("Regular exercise lowers the risk of heart disease.", "Regularne ćwiczenia zmniejszają ryzyko chorób serca."),
    ("The train to Warsaw was delayed by two hours.", "Pociąg do Warszawy miał dwie godziny opóźnienia."),
    ("She bought fresh bread and cheese at the market.", "Kupiła na targu świeży chleb i ser."),
    ("Vitamin D deficiency is common in northern countries.", "Niedobór witaminy D jest częsty w krajach północnych."),
    ("The company reported a profit of 12 million euros in 2021.",
     "Firma odnotowała w 2021 roku zysk w wysokości 12 milionów euro."),
    ("How many people live in Kraków?", "Ilu ludzi mieszka w Krakowie?"),
    ("What is the capital of Australia?", "Jaka jest stolica Australii?"),
    ("Antibiotics do not work against viral infections.", "Antybiotyki nie działają na infekcje wirusowe."),
    ("The cat is sleeping on the windowsill.", "Kot śpi na parapecie."),
    ("Smoking during pregnancy harms the baby.", "Palenie w czasie ciąży szkodzi dziecku."),
    ("Our teacher explained the theory of relativity.", "Nasz nauczyciel wyjaśnił teorię względności."),
    ("More information is available at https://example.org/help.",
     "Więcej informacji można znaleźć na https://example.org/help."),
]


def _dataset(root, queries: list[str], docs: list[str]) -> BeirDataset:
    write_beir(root, [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(docs)],
               [{"_id": f"q{i}", "text": t} for i, t in enumerate(queries)],
               {"test": [(f"q{i}", f"d{i}", 1) for i in range(len(queries))]})
    return BeirDataset(root)


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- flags without a model ----------------------------------------------------------------------------

def test_flag_helpers_on_hand_made_pairs():
    assert quality_flags.numbers("In 2019, 3.5% of 1,000 people") == {"2019", "3", "5", "1", "000"}
    assert quality_flags.numbers("W 2019 r. 3,5% z 1 000 osób") >= quality_flags.numbers("In 2019, 3.5% of 1,000 people")
    assert quality_flags.urls("see https://x.org/a?b=1). and www.y.pl.") == {"https://x.org/a?b=1", "www.y.pl"}
    assert quality_flags.copy_reason("The cat sleeps.", "the cat  sleeps.") == "untranslated"
    assert quality_flags.copy_reason("BRCA1", "BRCA1") is None  # nothing to translate
    src = "patients with systemic lupus erythematosus were treated with rituximab for ten weeks"
    assert quality_flags.copy_reason(src, src.replace("were", "fueron")) == "near_identical"
    assert quality_flags.copy_reason(src, "pacjenci z toczniem byli leczeni rytuksymabem") is None


def test_length_ratio_outliers_robust_and_fixed():
    # 30 pairs with ratio ~1.1 and one 4x blow-up: the robust z-score isolates it.
    def outliers(src, out):  # the field's ratios and their logs, as the checks record them
        ratios = np.array(out) / np.array(src)
        return quality_flags.length_outliers(ratios, np.log(ratios))

    flags, info = outliers([100] * 31, [108 + (i % 5) for i in range(30)] + [400])
    assert flags.tolist() == [False] * 30 + [True]
    assert info["method"].startswith("robust") and info["bounds"][0] < 1.1 < info["bounds"][1]
    flags, info = outliers([10, 10, 10], [11, 4, 25])
    assert flags.tolist() == [False, True, True] and info == {"method": "fixed bounds", "bounds": [0.5, 2.0]}


def test_distribution_uses_fixed_bins():
    d = distribution(np.array([0.5, 0.9, 0.95, 1.0]))
    assert d.n == 4 and d.mean == pytest.approx(0.8375) and d.p50 == pytest.approx(0.925)
    assert d.histogram.counts[10] == 1 and d.histogram.counts[18] == 1 and d.histogram.counts[19] == 2


def test_language_id_on_real_polish_questions_and_english_queries(polish_questions, scifact_dir):
    sample = random.Random(0).sample(polish_questions, 1000)
    polish = sum(langid.identify(q)[0] == "pl" for q in sample)
    assert polish >= 990
    english_queries = [json.loads(line)["text"] for line in (scifact_dir / "queries.jsonl").open(encoding="utf-8")][:300]
    wrongly_polish = [q for q in english_queries if langid.identify(q)[0] == "pl"]
    assert wrongly_polish == []
    assert langid.supported("pl") and langid.supported("pt_BR") and not langid.supported("xx")


# -- with the real multilingual-e5-small ----------------------------------------------------------------

def test_real_translation_beats_shuffled_and_defects_are_flagged(tmp_path, e5_small):
    english = [en for en, _ in PARALLEL]
    polish = [pl for _, pl in PARALLEL]
    source = _dataset(tmp_path / "en", english, english)
    good = _dataset(tmp_path / "pl", polish, polish)
    shuffled = _dataset(tmp_path / "pl-shuffled", polish[1:] + polish[:1], polish[1:] + polish[:1])
    broken = list(polish)
    broken[12] = english[12]  # untranslated copy
    broken[8] = "Firma odnotowała w 2021 roku zysk w wysokości milionów euro."  # "12" lost
    broken[15] = "Więcej informacji można znaleźć na stronie pomocy."  # URL lost
    broken_docs = list(polish)
    broken_docs[4] = ""  # empty output
    defective = _dataset(tmp_path / "pl-broken", broken, broken_docs)

    kw = dict(encoder=str(e5_small), src_lang="en", tgt_lang="pl", sample_size=len(PARALLEL), show_progress=False)
    real = run_quality(source, good, **kw)
    wrong = run_quality(source, shuffled, tmp_path / "shuffled-report", **kw)
    for field in ("queries", "corpus"):
        assert real.fields[field].similarity.mean > wrong.fields[field].similarity.mean + 0.1
        assert real.fields[field].flagged_items == 0
        assert quality_flags.Checks.card_figures(real.fields[field]) == {"in target language": 1.0}
    # Pair by pair (the review sample holds every pair here): each true translation beats the mismatched one.
    real_sims = {(r["field"], r["id"]): r["similarity"] for r in _jsonl(tmp_path / "pl" / "quality" / "review_sample.jsonl")}
    wrong_sims = {(r["field"], r["id"]): r["similarity"] for r in _jsonl(tmp_path / "shuffled-report" / "review_sample.jsonl")}
    assert len(real_sims) == 2 * len(PARALLEL) and all(real_sims[k] > wrong_sims[k] for k in real_sims)
    # Every scored query's similarity is kept by ID, the same value the pair's row shows.
    assert sorted(real.per_query_similarity) == sorted(qid for field, qid in real_sims if field == "queries")
    assert all(round(sim, 4) == real_sims[("queries", qid)] for qid, sim in real.per_query_similarity.items())
    assert np.mean(list(real.per_query_similarity.values())) == pytest.approx(real.fields["queries"].similarity.mean)

    report = run_quality(source, defective, tmp_path / "broken-report", **kw)
    flagged = {(r["field"], r["id"]): r for r in _jsonl(tmp_path / "broken-report" / "flagged.jsonl")}
    copy = flagged[("queries", "q12")]
    assert copy["reasons"] == ["untranslated", "wrong_language"] and copy["details"]["language"]["detected"] == "en"
    assert copy["similarity"] > 0.99  # similarity alone cannot see an untranslated copy
    assert flagged[("queries", "q8")]["details"]["lost_numbers"] == ["12"]
    assert flagged[("queries", "q15")]["details"]["lost_urls"] == ["https://example.org/help"]
    assert flagged[("corpus", "d4")]["reasons"][0] == "empty"
    assert set(flagged) == {("queries", "q12"), ("queries", "q8"), ("queries", "q15"), ("corpus", "d4")}
    assert report.fields["queries"].flags == {"lost_numbers": 1, "lost_urls": 1, "untranslated": 1,
                                                    "wrong_language": 1}

    # Files: the default output folder is <translated>/quality, everything written, markdown has the table.
    out = tmp_path / "pl" / "quality"
    assert sorted(p.name for p in out.iterdir()) == ["flagged.jsonl", "quality.json", "quality.md",
                                                     "review_sample.jsonl", "review_sample.md", "rows.jsonl"]
    saved = QualityReport.load(out / "quality.json")
    assert saved == real
    assert saved.table == [TableRow(dataset="pl", queries=real.fields["queries"].similarity.mean,
                                    corpus=real.fields["corpus"].similarity.mean)]
    assert saved.encoder["prompts"] == {"query": "query: ", "passage": "passage: "}
    assert saved.source.checksum == source.checksum() and saved.translated.checksum == good.checksum()
    md = (out / "quality.md").read_text(encoding="utf-8")
    assert f"| pl | {real.fields['queries'].similarity.mean:.3f} |" in md
    assert (out / "review_sample.md").read_text(encoding="utf-8").count("- [ ] adequate") == 2 * len(PARALLEL)


def _apertium(mode: str, texts: list[str]) -> list[str]:
    joined = "".join(" ".join(t.split()) + "\n" for t in texts)
    out = subprocess.run(["apertium", "-u", mode], input=joined, capture_output=True, text=True, check=True).stdout
    lines = out.split("\n")[:len(texts)]
    assert len(lines) == len(texts)
    return lines


def test_scifact_queries_translated_by_apertium(tmp_path, e5_small, scifact_dir):
    sacrebleu = needs("sacrebleu", "translate")  # the round trip's chrF
    if shutil.which("apertium") is None:
        pytest.skip("apertium is not installed")
    queries = [json.loads(line) for line in (scifact_dir / "queries.jsonl").open(encoding="utf-8")][:30]
    english = [q["text"] for q in queries]
    spanish = _apertium("eng-spa", english)
    source = _dataset(tmp_path / "en", english, english[:3])
    translated = _dataset(tmp_path / "es", spanish, spanish[:3])
    shuffled = _dataset(tmp_path / "es-shuffled", spanish[7:] + spanish[:7], spanish[:3])
    kw = dict(encoder=str(e5_small), src_lang="en", tgt_lang="es", fields=("queries",), sample_size=30,
              show_progress=False)
    back = TRANSLATORS.get("apertium")("es", "en")  # the registered backend, mode spa-eng
    report = run_quality(source, translated, methods=["checks", "translation_flags", "similarity", RoundTrip(back, 20)],
                         **kw)
    wrong = run_quality(source, shuffled, tmp_path / "shuffled-report", **kw)
    q = report.fields["queries"]
    assert q.similarity.mean > wrong.fields["queries"].similarity.mean + 0.1
    assert q.methods["checks"].summary["language"]["detected"]["es"] >= 20  # Apertium leaves unknown English terms, yet mostly Spanish

    # Round trip: chrF of 20 seeded back-translations equals sacrebleu's on the same texts.
    backs = [r for r in _jsonl(tmp_path / "es" / "quality" / "review_sample.jsonl") if "back_translation" in r]
    assert len(backs) == 20 == q.methods["roundtrip"].scored
    expected = sacrebleu.metrics.CHRF().corpus_score([r["back_translation"] for r in backs],
                                                     [[r["source"] for r in backs]]).score
    chrf_corpus = RoundTrip.card_figures(q)["round-trip chrF"]
    assert chrf_corpus == q.methods["roundtrip"].summary["chrF"] == pytest.approx(expected, abs=0.01)
    assert 30 < chrf_corpus < 100
    # Per row: each sampled query's chrF is sacrebleu's sentence chrF of its own round trip, its similarity the
    # cosine of source and back-translation; rows outside the sample have no round-trip value.
    chrf, sims = row_values(report, "queries", "roundtrip_chrf"), row_values(report, "queries", "roundtrip_similarity")
    assert sorted(chrf) == sorted(sims) == sorted(r["id"] for r in backs)
    for r in backs:
        sentence = sacrebleu.metrics.CHRF().sentence_score(r["back_translation"], [r["source"]]).score
        assert chrf[r["id"]] == pytest.approx(sentence) and r["roundtrip_chrf"] == round(sentence, 4)
        assert 0.5 < sims[r["id"]] <= 1.0 + 1e-6
    assert q.scores["roundtrip_chrf"].n == 20 and q.scores["roundtrip_chrf"].histogram.edges[-1] == 100.0


def test_cli_scores_a_pipeline_translation_from_its_manifest(tmp_path, tiny_dataset, e5_small, capsys):
    needs("sacrebleu", "translate")  # the round trip's chrF
    if shutil.which("apertium") is None:
        pytest.skip("apertium is not installed")
    out = tmp_path / "tiny-es"
    assert main(["translate", "--dataset", str(tiny_dataset), "--lang", "es", "--translator", "apertium",
                 "--fields", "queries", "--output", str(out), "--memory", str(tmp_path / "tm.sqlite"), "--no-quality",
                 "--no-progress"]) == 0
    capsys.readouterr()
    # No --source/--lang: both come from the translation manifest, which also says the corpus was only copied.
    assert main(["quality", str(out), "--encoder", str(e5_small), "--sample", "2", "--roundtrip-translator",
                 "apertium", "--output", str(tmp_path / "report"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    report = QualityReport.load(tmp_path / "report" / "quality.json")
    assert report.source.path == str(tiny_dataset) and report.translated.lang == "es"
    assert report.translation.translator["backend"] == "apertium" and not report.translation.partial
    assert list(report.fields) == ["queries"] and report.fields["queries"].pairs == 4
    assert report.fields["queries"].methods["roundtrip"].scored == 4 and len(report.per_query_similarity) == 4
    assert f"{report.fields['queries'].similarity.mean:.4f}" in printed and "round-trip chrF" in printed
