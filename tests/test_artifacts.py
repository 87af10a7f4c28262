"""Typed artifacts: round trips, validation errors naming the file and the dotted field, files written by
beirx before this format (``tests/data/before_v2``: made by the previous commit's code on a tiny made-up
dataset) loading and upgrading, the JSON Schema and its documentation, and the dataset family name that a
translation's manifest gives its results."""

from __future__ import annotations

import dataclasses
import json

import pytest
from artifact_fixtures import BEFORE_V2, BEFORE_V3, translation_manifest
from conftest import write_beir

from beirx.artifacts import ARTIFACTS, QualityReport, ResultsDocument, TranslationManifest
from beirx.artifacts.docs import schema_markdown
from beirx.artifacts.efficiency import Efficiency
from beirx.artifacts.results import DatasetRef, SystemRef
from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.data.resolve import resolve_dataset
from beirx.errors import DataError
from beirx.evaluate.metrics import evaluate
from beirx.evaluate.outputs import build_results
from beirx.language_packs import get_pack
from extras import needs

REPO_DOCS = BEFORE_V2.parents[2] / "docs" / "schema.md"


def _raw(name: str) -> dict:
    return json.loads((BEFORE_V2 / name).read_text(encoding="utf-8"))


def _full_results() -> ResultsDocument:
    """A document with every optional part filled in (cross-lingual, efficiency, extra)."""
    ds = DatasetRef(name="scifact", source="/data/scifact-pl", language="pl", query_language="en", split="test",
                    checksum="sha256:" + "1" * 64, translated_from="en")
    queries = DatasetRef(name="scifact", source="/data/scifact", language="en", query_language="en", split="test",
                         checksum="sha256:" + "2" * 64)
    return ResultsDocument(
        created="2026-01-02T03:04:05+00:00", dataset=ds, query_dataset=queries,
        system=SystemRef(label="e5>ce", tag="e5-ce", kind="rerank",
                         description={"reranker": {"reranker": "cross-encoder", "model": "m", "revision": "r"},
                                      "rerank_depth": 100, "first_stage": {"retriever": "dense", "model": "e5"}}),
        language_pack={"code": "pl", "mteb_code": "pol-Latn", "stemmer": "stempel"}, language_source="flag",
        evaluation={"k_values": [1, 10], "num_queries": 2, "top_k": 1000},
        metrics={"NDCG@10": 0.5, "MRR@10": 0.25}, per_query={"q1": {"NDCG@10": 1.0}, "q2": {"NDCG@10": 0.0}},
        run_file="x.trec", versions={"beirx": "0.1.0"}, timings_seconds={"search": 0.5},
        efficiency=Efficiency(index_seconds=1.0, encode_seconds=2.0, search_seconds=0.5, num_queries=2,
                              queries_per_second=4.0, latency_ms_p50=1.5, latency_ms_p95=3.0, index_bytes=1024,
                              peak_rss_bytes=2048, device="cpu"),
        extra={"note": "anything"})


# -- round trips ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    _full_results,
    lambda: ResultsDocument.load(BEFORE_V2 / "results_bm25.json"),
    lambda: ResultsDocument.load(BEFORE_V2 / "results_es2en.json"),
    lambda: ResultsDocument.load(BEFORE_V2 / "results_rrf.json"),
    lambda: TranslationManifest.load(BEFORE_V2 / "translation.json"),
    lambda: QualityReport.load(BEFORE_V2 / "quality.json"),
], ids=["results-full", "results-bm25", "results-es2en", "results-rrf", "manifest", "quality"])
def test_round_trip(make, tmp_path):
    artifact = make()
    cls = type(artifact)
    assert cls.from_dict(artifact.to_dict()) == artifact
    assert cls.from_json(artifact.to_json()) == artifact
    artifact.save(tmp_path / "a.json")
    assert cls.load(tmp_path / "a.json") == artifact
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == artifact.to_json()
    assert not list(tmp_path.glob(".*.tmp"))  # written through a temp file, nothing left behind


def test_helpers_read_what_readers_join_on():
    doc = _full_results()
    assert (doc.family, doc.corpus_language, doc.query_language, doc.language_pair, doc.split, doc.label) == \
        ("scifact", "pl", "en", "en2pl", "test", "e5>ce")
    assert doc.metric("NDCG@10") == 0.5 and doc.metric("MAP@10") is None
    assert doc.per_query_metric("NDCG@10") == {"q1": 1.0, "q2": 0.0}
    assert (doc.system.model, doc.system.revision, doc.system.retriever) == ("m", "r", None)
    assert doc.mteb_language == "pol-Latn"
    assert doc.to_dict()["metrics"] == {"NDCG@10": 0.5, "MRR@10": 0.25}  # the top-level metrics dict stays


# -- validation ----------------------------------------------------------------------------------------------

def _write(tmp_path, data) -> str:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("cls, make, path, value, message", [
    (ResultsDocument, lambda: _full_results().to_dict(), ("dataset", "split"), None, "field 'dataset.split': missing"),
    (ResultsDocument, lambda: _full_results().to_dict(), ("dataset", "split"), 3,
     "field 'dataset.split': expected str, got int"),
    (ResultsDocument, lambda: _full_results().to_dict(), ("per_query", "q1", "NDCG@10"), "high",
     "field 'per_query.q1.NDCG@10': expected float, got str"),
    (ResultsDocument, lambda: _full_results().to_dict(), ("system", "kind"), "hybrid",
     "field 'system.kind': expected one of 'retriever', 'fusion', 'rerank', 'run_file', got 'hybrid'"),
    (ResultsDocument, lambda: _full_results().to_dict(), ("efficiency", "index_bytes"), 1.5,
     "field 'efficiency.index_bytes': expected int or null, got float"),
    (ResultsDocument, lambda: _full_results().to_dict(), ("metrics",), [0.5], "field 'metrics': expected object, got list"),
    (ResultsDocument, lambda: _raw("results_bm25.json"), ("dataset", "checksum"), None,
     "field 'dataset.checksum': missing"),  # an old file is checked after its upgrade, with the same names
    (ResultsDocument, lambda: _raw("results_bm25.json"), ("evaluation",), "all", "field 'evaluation': expected object, got str"),
    (TranslationManifest, lambda: _raw("translation.json"), ("options", "batch_size"), "4000",
     "field 'options.batch_size': expected int, got str"),
    (TranslationManifest, lambda: _raw("translation.json"), ("source", "lang"), None, "field 'source.lang': missing"),
    (QualityReport, lambda: _raw("quality.json"), ("fields", "queries", "pairs"), None,
     "field 'fields.queries.pairs': missing"),
    (QualityReport, lambda: _raw("quality.json"), ("fields", "corpus", "similarity", "histogram", "counts"), [1, "2"],
     "field 'fields.corpus.similarity.histogram.counts[1]': expected int, got str"),
], ids=["missing", "mistyped", "per-query", "literal", "optional-int", "dict", "v1-missing", "v1-mistyped",
        "manifest-mistyped", "manifest-missing", "quality-missing", "quality-list-item"])
def test_bad_field_names_file_and_field(tmp_path, cls, make, path, value, message):
    data = make()
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    file = _write(tmp_path, data)
    with pytest.raises(DataError) as err:
        cls.load(file)
    assert err.value.path == file and err.value.message == message
    assert str(err.value) == f"{file}: {message}"


def test_unknown_field_wrong_kind_and_bad_json_are_refused(tmp_path):
    data = _full_results().to_dict()
    data["dataset"]["langauge"] = "pl"
    with pytest.raises(DataError, match=r"doc\.json: field 'dataset\.langauge': unknown field"):
        ResultsDocument.load(_write(tmp_path, data))
    with pytest.raises(DataError, match="not a beirx results document: field 'schema' must be 'beirx.results/2', "
                                        "got None"):
        ResultsDocument.load(_write(tmp_path, {"metrics": {}}))
    with pytest.raises(DataError, match=r"a newer or unknown version \('beirx.results/9'\)"):
        ResultsDocument.load(_write(tmp_path, {**data, "schema": "beirx.results/9"}))
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(DataError, match=r"broken\.json: not valid JSON"):
        ResultsDocument.load(tmp_path / "broken.json")
    assert ResultsDocument.load_if_any(tmp_path / "broken.json") is None
    assert ResultsDocument.load_if_any(_write(tmp_path, {"other": 1})) is None


def test_cli_reports_a_bad_results_file(tmp_path, capsys):
    data = _raw("results_bm25.json")
    data["dataset"]["split"] = 7
    file = _write(tmp_path, data)
    assert main(["mteb", "results", file, "--task", "T", "--output", str(tmp_path / "out")]) == 2
    assert f"{file}: field 'dataset.split': expected str, got int" in capsys.readouterr().err


# -- files written before this format ------------------------------------------------------------------------

def test_old_results_load_and_upgrade():
    raw = _raw("results_bm25.json")
    assert raw["schema"] == "beirx.results/1"
    doc = ResultsDocument.load(BEFORE_V2 / "results_bm25.json")
    assert doc.schema == "beirx.results/2" and doc.created == raw["created"]
    assert (doc.family, doc.language_pair, doc.split, doc.label) == ("tiny", "en", "test", "bm25")
    assert doc.system == SystemRef(label="bm25", tag="bm25-b_0.75-fields_multifield-k1_1.2", kind="retriever",
                                   description=raw["system"])
    assert doc.metrics == raw["metrics"] and doc.per_query == raw["per_query"]  # numbers untouched
    assert doc.evaluation == {**raw["evaluation"], "top_k": 1000} and doc.extra == {}
    assert doc.dataset.checksum == raw["dataset"]["checksum"] and doc.dataset.translated_from is None
    assert doc.query_dataset is None and doc.language_source is None and doc.run_file == raw["run_file"]
    assert doc.efficiency.index_seconds == raw["timings_seconds"]["index"] and doc.efficiency.num_queries == 3
    assert doc.efficiency.queries_per_second == round(3 / raw["timings_seconds"]["search"], 3)


def test_old_cross_lingual_and_fusion_results():
    cross = ResultsDocument.load(BEFORE_V2 / "results_es2en.json")
    raw = _raw("results_es2en.json")
    assert (cross.corpus_language, cross.query_language, cross.language_pair) == ("en", "es", "es2en")
    assert cross.system.tag == "bm25-b_0.75-fields_flat-k1_1.2"
    assert cross.query_dataset == DatasetRef(name="tiny-es", source=raw["query_dataset"]["source"], language="es",
                                             query_language="es", split="test",
                                             checksum=raw["query_dataset"]["checksum"])
    fused = ResultsDocument.load(BEFORE_V2 / "results_rrf.json")
    assert (fused.system.kind, fused.label) == ("fusion", "rrf")
    assert fused.system.tag == "rrf-bm25-b_0.75-fields_multifield-k1_1.2_dense-model__tmp_beirx-fixture_e5-small"
    assert fused.metric("NDCG@10") == _raw("results_rrf.json")["metrics"]["NDCG@10"]


def test_old_manifest_and_quality_report_load():
    raw = _raw("translation.json")
    manifest = TranslationManifest.load(BEFORE_V2 / "translation.json")
    assert raw["format"] == 1 and "schema_version" not in raw
    assert (manifest.schema_version, manifest.format) == ("beirx.translation/2", 2)
    assert (manifest.family, manifest.source_language, manifest.target_language) == ("tiny", "en", "es")
    assert (manifest.backend, manifest.model, manifest.revision) == ("apertium", "eng-spa", raw["translator"]["revision"])
    assert manifest.counts == raw["counts"] and manifest.options.batch_size == 4000 and not manifest.partial

    raw = _raw("quality.json")
    report = QualityReport.load(BEFORE_V2 / "quality.json")
    assert report.schema_version == "beirx.quality/6" and report.per_query_similarity == {}
    queries = report.fields["queries"]
    assert queries.similarity.mean == raw["fields"]["queries"]["similarity"]["mean"]
    assert queries.similarity.histogram.counts == raw["fields"]["queries"]["similarity"]["histogram"]["counts"]
    assert queries.methods["roundtrip"].summary["chrF"] == raw["fields"]["queries"]["roundtrip"]["chrF"]
    assert queries.methods["checks"].summary["language"]["detected"] == raw["fields"]["queries"]["language"]["detected"]
    assert report.encoder_model == raw["encoder"]["model"] and report.translation.translator["backend"] == "apertium"


def test_format_2_quality_report_loads_into_the_generic_layout(tmp_path):
    """A report written by beirx before quality methods (format 2, tests/data/before_v3)."""
    from beirx.translate.quality.roundtrip import RoundTrip
    from beirx.translate.quality.rule_checks import Checks

    raw = json.loads((BEFORE_V3 / "quality.json").read_text(encoding="utf-8"))
    assert raw["schema_version"] == "beirx.quality/2"
    report = QualityReport.load(BEFORE_V3 / "quality.json")
    assert report.schema_version == "beirx.quality/6"
    assert report.per_query_similarity == raw["per_query_similarity"] and len(report.per_query_similarity) == 4
    assert list(report.methods) == ["checks", "similarity", "roundtrip"]
    assert report.methods["similarity"].description == raw["encoder"] == report.encoder
    assert report.methods["roundtrip"].description == {"translator": raw["parameters"]["roundtrip_translator"]}
    assert report.methods["roundtrip"].sample == raw["parameters"]["roundtrip_sample"] == 200
    assert report.methods["checks"].description["language_identifier"]["version"] == raw["language_identifier"]["version"]
    for name in ("queries", "corpus"):
        old, new = raw["fields"][name], report.fields[name]
        assert dataclasses.asdict(new.similarity) == old["similarity"] and new.scores["similarity"] is new.similarity
        assert new.methods["checks"].summary == {"language": old["language"], "length_ratio": old["length_ratio"]}
        assert Checks.card_figures(new) == {"in target language": old["language"]["target_share"]}
        assert old["language"]["target_share"] is not None
        assert new.methods["roundtrip"].scored == old["roundtrip"]["n"]
        assert RoundTrip.card_figures(new) == {"round-trip chrF": old["roundtrip"]["chrF"]}
        assert new.figures() == {"in target language": old["language"]["target_share"],  # recorded as they gave
                                 "similarity (mean)": old["similarity"]["mean"], "round-trip chrF": old["roundtrip"]["chrF"]}
        assert (new.pairs, new.flags, new.flagged_items) == (old["pairs"], old["flags"], old["flagged_items"])
    assert list(report.rows(["corpus"])) == []
    assert {r["id"]: r["scores"] for r in report.rows()} == {q: {"similarity": v}
                                                              for q, v in raw["per_query_similarity"].items()}
    assert "rows" not in report.to_dict()["fields"]["queries"]
    assert QualityReport.from_json(report.to_json()) == report  # and it saves in the current format,
    report.save(tmp_path / "quality.json")  # its rows in the sidecar beside it
    again = QualityReport.load(tmp_path / "quality.json")
    assert again == report and again.per_query_similarity == raw["per_query_similarity"]
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 4


def test_format_3_quality_report_keeps_its_inline_rows(tmp_path):
    """Format 3 held every row inside quality.json: it loads with them, and saving moves them to rows.jsonl."""
    current = QualityReport.load(BEFORE_V3 / "quality.json").to_dict()
    old = {**current, "schema_version": "beirx.quality/3"}
    old["fields"]["queries"] = {**old["fields"]["queries"], "rows": {"similarity": {"q1": 0.9, "q2": 0.5, "q3": None}},
                                "flagged": {"q3": ["empty"], "q4": ["untranslated", "length_ratio"]}}
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "quality.json").write_text(json.dumps(old), encoding="utf-8")
    report = QualityReport.load(tmp_path / "old" / "quality.json")
    assert report.schema_version == "beirx.quality/6" and report.per_query_similarity == {"q1": 0.9, "q2": 0.5}
    assert list(report.rows()) == [
        {"field": "queries", "id": "q1", "flags": [], "rank": 1.0, "scores": {"similarity": 0.9}},
        {"field": "queries", "id": "q2", "flags": [], "rank": 0.0, "scores": {"similarity": 0.5}},
        {"field": "queries", "id": "q3", "flags": ["empty"], "rank": None, "scores": {"similarity": None}},
        {"field": "queries", "id": "q4", "flags": ["untranslated", "length_ratio"], "rank": None, "scores": {}}]
    assert [r["id"] for r in report.worst(3)] == ["q4", "q3", "q2"]  # most flags, then the lowest rank
    report.save(tmp_path / "new" / "quality.json")
    assert QualityReport.load(tmp_path / "new" / "quality.json").worst(3) == report.worst(3)
    old["fields"]["queries"]["rows"] = {"similarity": {"q1": "high"}}
    (tmp_path / "old" / "quality.json").write_text(json.dumps(old), encoding="utf-8")
    with pytest.raises(DataError, match="field 'fields.queries.rows.similarity.q1': expected float"):
        QualityReport.load(tmp_path / "old" / "quality.json")


# -- the family name of a translation ------------------------------------------------------------------------

def test_a_translation_keeps_its_family_name_in_results(tmp_path):
    root = write_beir(tmp_path / "scifact-es", [{"_id": "d1", "title": "", "text": "gatos y ratones"},
                                                 {"_id": "d2", "title": "", "text": "perros"}],
                      [{"_id": "q1", "text": "gatos"}], {"test": [("q1", "d1", 1)]})
    translation_manifest(name="scifact", src="en", tgt="es", translator={"backend": "apertium"}).save(
        root / "translation.json")
    dataset = resolve_dataset(str(root), lang="es")
    assert dataset.name == BeirDataset(root).name == "scifact" and dataset.translation.target_language == "es"
    evaluation = evaluate(dataset.qrels("test"), {"q1": {"d1": 2.0, "d2": 1.0}})
    doc = build_results(dataset=dataset, split="test", pack=get_pack("es"), system={"retriever": "bm25", "k1": 1.2},
                        evaluation=evaluation, k_values=[1, 10], ignore_identical_ids=False, timings={"search": 0.5},
                        run_file="x.trec", top_k=10, language_source="translation.json")
    assert (doc.family, doc.dataset.translated_from, doc.corpus_language, doc.language_pair) == \
        ("scifact", "en", "es", "es")
    assert doc.system == SystemRef(label="bm25", tag="bm25", kind="retriever",
                                   description={"retriever": "bm25", "k1": 1.2})
    assert doc.metrics["NDCG@10"] == 1.0 and doc.evaluation["top_k"] == 10 and doc.language_source == "translation.json"
    assert doc.efficiency == Efficiency(search_seconds=0.5, num_queries=1, queries_per_second=2.0)
    assert ResultsDocument.from_json(doc.to_json()) == doc


def test_build_results_records_a_cross_lingual_pair_and_given_labels(tiny_dataset, tmp_path):
    corpus = BeirDataset(tiny_dataset, name="tiny")
    queries = write_beir(tmp_path / "tiny-pl", [{"_id": "d1", "title": "", "text": "koty"}],
                         [{"_id": "q1", "text": "koty"}], {"test": [("q1", "d1", 1)]})
    translation_manifest(name="tiny", src="en", tgt="pl", translator={"backend": "apertium"}).save(
        queries / "translation.json")
    query_dataset = BeirDataset(queries, lang="pl")
    evaluation = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}})
    doc = build_results(dataset=corpus, split="test", pack=get_pack("en"), system={"fusion": "rrf", "rrf_k": 60},
                        evaluation=evaluation, k_values=[10], ignore_identical_ids=False, timings={},
                        query_lang="pl", query_dataset=query_dataset, top_k=100, extra={"note": 1},
                        system_label="hybrid", system_tag="rrf-x", system_kind="fusion",
                        efficiency=Efficiency(device="cpu"))
    assert doc.evaluation["top_k"] == 100 and doc.extra == {"note": 1} and doc.language_pair == "pl2en"
    assert doc.query_dataset == DatasetRef(name="tiny", source=str(queries), language="pl", query_language="pl",
                                           split="test", checksum=query_dataset.checksum(), translated_from="en")
    assert (doc.label, doc.system.tag, doc.system.kind, doc.efficiency) == \
        ("hybrid", "rrf-x", "fusion", Efficiency(device="cpu"))


# -- schema and documentation --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ARTIFACTS))
def test_schema_command_prints_a_valid_json_schema(name, capsys):
    jsonschema = needs("jsonschema", "dev")
    assert main(["schema", name]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == ARTIFACTS[name].json_schema() and schema["$id"] == ARTIFACTS[name].SCHEMA
    examples = {"results": [_full_results()] + [ResultsDocument.load(p) for p in sorted(BEFORE_V2.glob("results_*"))],
                "manifest": [TranslationManifest.load(BEFORE_V2 / "translation.json")],
                "quality": [QualityReport.load(BEFORE_V2 / "quality.json")],
                "generation": [_generation_manifest()], "review": [_review_document()],
                "subset": [_subset_manifest()], "suite": [_suite_state()], "damage": [_damage_report()]}[name]
    for example in examples:
        jsonschema.validate(example.to_dict(), schema)
    bad = examples[0].to_dict()
    bad[ARTIFACTS[name].SCHEMA_FIELD] = "beirx.other/1"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def _damage_report():
    from beirx.artifacts.damage import Choice, DamageAnalysis, DamageReport, Relation, RowSignal, SignalEvidence
    from beirx.artifacts.manifest import DatasetSide

    relation = Relation(queries=10, spearman=0.5, p_value=0.1, ci_low=0.1, ci_high=0.8, k=1, damaged=1, precision=1.0,
                        recall=1.0)
    signal = RowSignal(name="similarity", method="similarity", kind="score", score="similarity")
    return DamageReport(analyses=[DamageAnalysis(
        family="toy", split="test", metric="NDCG@10", source_pair="en", target_pair="es",
        translated=DatasetSide(path="x", name="toy", lang="es", checksum="sha256:00"), quality_report="q.json",
        documents=True, systems=["bm25"], queries=10, k=1, damaged=["q1"], rule="r", resamples=100, seed=0,
        signals=[SignalEvidence(signal=signal, view="query", damage=relation, systems={"bm25": relation})],
        chosen=Choice(signal="similarity", view="query", reason="the only one"))])


def _review_document():
    from beirx.artifacts.manifest import DatasetSide
    from beirx.artifacts.review import (Acceptability, Agreement, Correction, Correlation, Rating, ReviewDocument,
                                        ReviewItem, SampleInfo, Share)

    share = Share(items=1, acceptable=1, share=1.0, ci_low=0.2, ci_high=1.0)
    rating = Rating(annotator="Ana", adequacy=4, fluency=5, errors={"omission": "minor"},
                    correction=Correction(text="corregido", title=None), updated="2026-01-01T00:00:00+00:00")
    return ReviewDocument(
        dataset=DatasetSide(path="x", name="toy", lang="es", checksum="sha256:00"), source_lang="en",
        sample=SampleInfo(size=1, seed=0, strata={"random": 1}, quality_report=None), annotators=["Ana"],
        items=[ReviewItem(field="queries", id="q1", stratum="random", ratings=[rating], adequacy=4.0, fluency=5.0,
                          acceptable=True, scores={"similarity": 0.9, "judge_da": None})],
        agreement={"adequacy": Agreement(alpha=None, level="ordinal", items=0, ratings=0)},
        acceptable=Acceptability(rule="r", interval="wilson", confidence=0.95, estimate=share,
                                 per_stratum={"random": share}),
        correlations={"similarity": Correlation(spearman=None, p_value=None, n=1)})


def _generation_manifest():
    from beirx.artifacts.generation import GeneratedSplit, GenerationManifest, SourceCorpus

    return GenerationManifest(
        source=SourceCorpus(path="scifact", name="scifact", lang="en", corpus_checksum="sha256:00"),
        output=GeneratedSplit(path="genq", split="train", query_ids="genq-<doc id>-<n>",
                              files={"queries.jsonl": "generated", "corpus.jsonl": "linked"}),
        generator={"model": "t5", "per_doc": 3, "seed": 42}, cache={"path": "q.sqlite", "generator": "abc"},
        counts={"documents": 2, "queries": 6}, timings={"total": 1.5})


def _subset_manifest():
    from beirx.artifacts.manifest import DatasetSide
    from beirx.artifacts.subset import (PoolSystem, RankingCheck, SubsetCounts, SubsetManifest, SubsetMethod,
                                        SystemAgreement)

    check = RankingCheck(metric="NDCG@10", split="test", tau=1.0, p_value=None, threshold=0.9, warning=None,
                         swapped=[], full_checksum="sha256:00", subset_checksum="sha256:11",
                         systems=[SystemAgreement(label="bm25", full=0.7, subset=0.6, full_rank=1, subset_rank=1)])
    return SubsetManifest(
        name="scifact-subset", language="en", split="test",
        source=DatasetSide(path="scifact", name="scifact", lang="en", checksum="sha256:00"),
        method=SubsetMethod(queries=50, stratify=False, seed=0, depth=100, depth_reached=40, max_docs=1500),
        pool=[PoolSystem(spec="bm25", label="bm25", description={"retriever": "bm25"})],
        counts=SubsetCounts(candidate_queries=300, queries=50, strata={"1": 45, "2": 5}, qrels=55,
                            source_documents=5183, judged=55, judged_missing=0, pooled=1400, random=45,
                            documents=1500),
        query_ids=["1", "3"], ranking_check=check)


def _suite_state():
    from beirx.artifacts.suite import SuiteState, SuiteStep

    return SuiteState(name="suite", config="suite.toml", steps=[
        SuiteStep(step="subset", dataset="scifact", language=None, inputs="abc", output="out/subsets/scifact",
                  output_checksum="sha256:11", seconds=1.5, details={"queries": 50})])


def test_subset_and_suite_round_trip(tmp_path):
    from beirx.artifacts import SubsetManifest, SuiteState

    for example, cls in ((_subset_manifest(), SubsetManifest), (_suite_state(), SuiteState)):
        example.save(tmp_path / "x.json")
        assert cls.load(tmp_path / "x.json") == example
    bad = _subset_manifest().to_dict()
    bad["counts"]["queries"] = "50"
    with pytest.raises(DataError, match="field 'counts.queries': expected int, got str"):
        SubsetManifest.from_dict(bad, "subset.json")


def test_schema_doc_is_current(capsys):
    assert main(["schema", "--markdown"]) == 0
    assert capsys.readouterr().out == schema_markdown() == REPO_DOCS.read_text(encoding="utf-8")
    assert "| `dataset.translated_from` | str \\| null | no |" in schema_markdown()
    # format 4 keeps per-query similarity (and every other per-row score) in the sidecar rows.jsonl
    assert "`fields.rows`" not in schema_markdown() and "sidecar `rows.jsonl`" in schema_markdown()


def test_integers_in_float_fields_load_as_floats():
    changed = dataclasses.replace(_full_results(), metrics={"NDCG@10": 1})
    assert type(ResultsDocument.from_dict(changed.to_dict()).metrics["NDCG@10"]) is float


def test_reading_one_field_of_the_sidecar_stops_after_its_rows(tmp_path):
    """The sidecar holds each field's rows together, so the queries' rows (written first) are read without the
    corpus lines after them: a damaged corpus line is never reached, and asking for the corpus finds it."""
    from beirx.artifacts import quality_rows, quality_sidecar

    path = tmp_path / quality_sidecar.FILENAME
    rows = [quality_rows.record("queries", f"q{i}", [], None, {"similarity": 0.5}) for i in range(3)]
    rows += [quality_rows.record("corpus", f"d{i}", [], None, {"similarity": 0.9}) for i in range(2)]
    digest = quality_sidecar.write(path, rows)
    assert (digest.rows, digest.fields["queries"].rows, digest.fields["corpus"].rows) == (5, 3, 2)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    assert [r["id"] for r in quality_sidecar.read(path, digest, ["queries"])] == ["q0", "q1", "q2"]
    with pytest.raises(DataError, match=r":6: not valid JSON"):
        list(quality_sidecar.read(path, digest, ["corpus"]))
