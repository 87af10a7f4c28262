"""``beirx subset``: seeded (stratified) query samples, a corpus of judged + pooled + random documents known
exactly on hand-built data, pool depth shrinking to the budget, exact copies of the source's records and
qrels, the typed manifest, translated datasets, and the CLI's errors."""

from __future__ import annotations

import heapq
import json
import random
from pathlib import Path

import pytest

from artifact_fixtures import translation_manifest
from conftest import write_beir

from beirx.artifacts import SubsetManifest
from beirx.cli import main
from beirx.data import catalogue
from beirx.data.beir_io import read_qrels
from beirx.data.dataset import BeirDataset
from beirx.data.language import dataset_language
from beirx.errors import BeirxError, DataError
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.runs import ranked
from beirx.evaluate.specs import RunFileSpec
from beirx.language_packs import get_pack
from beirx.subsets.cut import make_subset
from beirx.subsets.pool import depth_that_fits, entry_depths
from beirx.subsets.query_sample import proportional_allocation, sample_queries
from beirx.subsets.system_args import parse_pool, parse_system, parse_systems
from extras import needs

# 12 queries: q1..q10 judged in test (q9 only non-relevant, q10 without text), q11 unjudged.
DOCS = [{"_id": f"d{i:02d}", "title": f"t{i}", "text": f"document number {i} about topic {i % 4}"} for i in range(40)]
DOCS[3] = {"_id": "d03", "title": "Zażółć", "text": "gęślą jaźń \u2014 é", "metadata": {"url": "x"}, "extra": 1}
QUERIES = [{"_id": f"q{i}", "text": f"topic {i % 4} number {i}"} for i in range(1, 12)]
QUERIES[9] = {"_id": "q10", "text": "   "}
QRELS = {"test": [("q1", "d01", 1), ("q1", "d02", 0), ("q2", "d02", 2), ("q2", "d05", 1), ("q3", "d03", 1),
                  ("q4", "d04", 1), ("q4", "d08", 1), ("q4", "d12", 1), ("q5", "d05", 1), ("q6", "d06", 1),
                  ("q7", "d07", 1), ("q8", "d08", 1), ("q8", "missing-doc", 1), ("q9", "d09", 0), ("q10", "d10", 1)],
         "train": [("q11", "d11", 1)]}


@pytest.fixture
def source(tmp_path) -> BeirDataset:
    return BeirDataset(write_beir(tmp_path / "toy", DOCS, QUERIES, QRELS), name="toy")


def _run_file(path: Path, lists: dict[str, list[str]]) -> Path:
    """A TREC run whose ranking is the given order (descending scores)."""
    lines = [f"{q} Q0 {d} {r} {100 - r} sys\n" for q, docs in lists.items() for r, d in enumerate(docs, 1)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


# -- queries ---------------------------------------------------------------------------------------------------

def test_proportional_allocation_by_largest_remainder():
    assert proportional_allocation({1: 6, 2: 3, 3: 1}, 5) == {1: 3, 2: 2, 3: 0}  # 3, 1.5, 0.5: the tie goes to 2
    assert proportional_allocation({1: 6, 2: 3, 3: 1}, 10) == {1: 6, 2: 3, 3: 1}
    assert proportional_allocation({1: 1, 5: 9}, 3) == {1: 0, 5: 3}  # 0.3, 2.7


def test_query_sample_is_seeded_and_only_judged_relevant_queries_with_text(source):
    qrels = source.qrels("test")
    have_text = {q.id for q in source.queries.values() if q.text.strip()}
    a = sample_queries(qrels, have_text, 4, seed=3)
    assert a == sample_queries(qrels, have_text, 4, seed=3)
    candidates = [f"q{i}" for i in range(1, 9)]  # q9: no relevant judgement; q10: no text; q11: not in test
    assert a.candidates == 8
    assert a.kept == [q for q in candidates if q in set(random.Random("3:queries").sample(candidates, 4))]
    assert sample_queries(qrels, have_text, 50, seed=3).kept == candidates


def test_stratified_sample_keeps_the_proportions(source):
    qrels = {f"a{i}": {"x": 1} for i in range(6)} | {f"b{i}": {"x": 1, "y": 1} for i in range(3)} | {"c": {"x": 1, "y": 1, "z": 1}}
    sample = sample_queries(qrels, set(qrels), 5, seed=0, stratify=True)
    assert sample.strata == {"1": 3, "2": 2}
    assert sample.kept == [q for q in qrels if q in sample.kept]  # the source's order
    expected = set(random.Random("0:queries:1").sample([f"a{i}" for i in range(6)], 3))
    expected |= set(random.Random("0:queries:2").sample([f"b{i}" for i in range(3)], 2))
    assert set(sample.kept) == expected


# -- pool depth ------------------------------------------------------------------------------------------------

def test_depth_shrinks_evenly_and_judged_documents_stay():
    from beirx.artifacts.subset import PoolSystem
    from beirx.subsets.pool import Pooled

    system = PoolSystem(spec="s", label="s", description={})
    pooled = [Pooled(system, {"q1": ["a", "b", "c", "d"], "q2": ["e", "a", "f", "g"]}),
              Pooled(system, {"q1": ["b", "h", "i", "j"], "q2": ["k", "e", "l", "m"]})]
    entry = entry_depths(pooled)
    assert entry == {"a": 1, "b": 1, "e": 1, "k": 1, "h": 2, "c": 3, "f": 3, "i": 3, "l": 3, "d": 4, "g": 4,
                     "j": 4, "m": 4}
    judged = {"a", "z"}
    assert depth_that_fits(entry, judged, 4, None) == 4
    # entering per depth (a is judged): 1: b e k, 2: h, 3: c f i l, 4: d g j m
    assert depth_that_fits(entry, judged, 4, 14) == 4  # 2 judged + 12 pooled
    assert depth_that_fits(entry, judged, 4, 13) == 3  # 2 + 8
    assert depth_that_fits(entry, judged, 4, 10) == 3
    assert depth_that_fits(entry, judged, 4, 9) == 2  # 2 + 4
    assert depth_that_fits(entry, judged, 4, 6) == 2
    assert depth_that_fits(entry, judged, 4, 5) == 1  # 2 + 3
    assert depth_that_fits(entry, judged, 4, 4) == 0  # depth 1 would need 3 more
    assert depth_that_fits(entry, judged, 4, 2) == 0 and depth_that_fits(entry, judged, 4, 1) == 0
    assert depth_that_fits(entry, judged, 2, 100) == 2  # never deeper than asked


# -- the corpus, exactly -----------------------------------------------------------------------------------------

def _expected_fill(selected: set[str], k: int, seed: int) -> set[str]:
    """The documented rule: a priority U(0,1) per document in file order; the k smallest outside the selection."""
    rng = random.Random(f"{seed}:fill")
    priorities = [(rng.random(), d["_id"]) for d in DOCS]
    return {d for _, d in heapq.nsmallest(k, [(u, d) for u, d in priorities if d not in selected])}


def test_pooled_corpus_known_exactly(source, tmp_path):
    keep = [f"q{i}" for i in range(1, 9)]
    run_a = _run_file(tmp_path / "a.trec", {q: [f"d{20 + i:02d}", f"d{30 + i:02d}", "d39", "nope"]
                                             for i, q in enumerate(keep)} | {"q11": ["d00"]})
    run_b = _run_file(tmp_path / "b.trec", {q: ["d38", f"d{12 + i:02d}"] for i, q in enumerate(keep)})
    pool = parse_pool([str(run_a), str(run_b)])
    judged = {"d01", "d02", "d03", "d04", "d05", "d06", "d07", "d08", "d12"}  # missing-doc is not in the corpus
    rank1 = {f"d{20 + i:02d}" for i in range(8)} | {"d38"}
    rank2 = {f"d{30 + i:02d}" for i in range(8)} | {f"d{12 + i:02d}" for i in range(1, 8)}  # d12 is judged
    rank3 = {"d39"}  # "nope" is not in the corpus

    def cut(max_docs, folder):
        manifest = make_subset(source, tmp_path / folder, queries=8, pool=pool, depth=3, max_docs=max_docs, seed=7,
                               show_progress=False)
        return manifest, set(BeirDataset(tmp_path / folder).corpus)

    manifest, corpus = cut(None, "all")  # no budget: judged + the whole pool at depth 3
    assert corpus == judged | rank1 | rank2 | rank3 and len(corpus) == 9 + 25
    assert (manifest.method.depth_reached, manifest.counts.pooled, manifest.counts.random) == (3, 25, 0)
    assert (manifest.counts.judged, manifest.counts.judged_missing, manifest.counts.documents) == (9, 1, 34)
    manifest, corpus = cut(36, "fits")  # everything fits: 2 random documents on top
    assert corpus == judged | rank1 | rank2 | rank3 | _expected_fill(judged | rank1 | rank2 | rank3, 2, 7)
    assert (manifest.method.depth_reached, manifest.counts.random, len(corpus)) == (3, 2, 36)
    manifest, corpus = cut(30, "shrunk")  # depth 2 would be 9 + 24 = 33 > 30: depth 1, then 12 random
    assert manifest.method.depth_reached == 1 and manifest.counts.pooled == 9 and manifest.counts.random == 12
    assert corpus == judged | rank1 | _expected_fill(judged | rank1, 12, 7) and len(corpus) == 30
    # the characters a translator reads: kept titles + texts + kept query texts, over the whole corpus and queries
    chars = {d["_id"]: len(d.get("title", "")) + len(d["text"]) for d in DOCS}
    asked = {q["_id"]: len(q["text"]) for q in QUERIES}
    assert manifest.counts.characters == sum(chars[d] for d in corpus) + sum(asked[q] for q in keep)
    assert manifest.counts.source_characters == sum(chars.values()) + sum(asked.values())
    import hashlib

    assert [p.description["sha256"] for p in manifest.pool] == [hashlib.sha256(p.read_bytes()).hexdigest()
                                                                for p in (run_a, run_b)]
    assert [p.spec for p in manifest.pool] == [str(run_a), str(run_b)]


def test_judged_documents_are_never_dropped(source, tmp_path):
    run = _run_file(tmp_path / "a.trec", {f"q{i}": ["d30", "d31"] for i in range(1, 9)})
    manifest = make_subset(source, tmp_path / "sub", queries=8, pool=parse_pool([str(run)]), depth=2,
                           max_docs=4, seed=0, show_progress=False)
    assert manifest.counts.judged == 9 and manifest.counts.documents == 9  # over the budget: all judged kept
    assert manifest.method.depth_reached == 0 and manifest.counts.pooled == manifest.counts.random == 0


def test_records_and_qrels_are_exact_copies_and_the_seed_decides(source, tmp_path):
    pool = {"bm25": parse_system("bm25:fields=flat")}
    first = make_subset(source, tmp_path / "a", queries=5, pool=pool, depth=2, max_docs=20, seed=1,
                        show_progress=False)
    make_subset(source, tmp_path / "b", queries=5, pool=pool, depth=2, max_docs=20, seed=1, show_progress=False)
    other = make_subset(source, tmp_path / "c", queries=5, pool=pool, depth=2, max_docs=20, seed=2,
                        show_progress=False)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert first.query_ids != other.query_ids
    src_lines = {json.loads(line)["_id"]: line for line in source.corpus_path.read_text(encoding="utf-8").splitlines()}
    sub_lines = (tmp_path / "a" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(line == src_lines[json.loads(line)["_id"]] for line in sub_lines)  # byte for byte, order kept
    ids = [json.loads(line)["_id"] for line in sub_lines]
    assert ids == sorted(ids) and "d03" in ids  # the record with metadata and an extra key, untouched
    qrels, sub_qrels = source.qrels("test"), read_qrels(tmp_path / "a" / "qrels" / "test.tsv")
    assert sub_qrels == {q: qrels[q] for q in first.query_ids} and list(sub_qrels) == first.query_ids
    assert not (tmp_path / "a" / "qrels" / "train.tsv").exists()
    queries = [json.loads(line)["_id"] for line in (tmp_path / "a" / "queries.jsonl").open()]
    assert queries == first.query_ids


def test_bm25_pool_is_the_retrievers_top_documents(source, tmp_path):
    manifest = make_subset(source, tmp_path / "sub", queries=8, pool={"bm25": parse_system("bm25:fields=flat")},
                           depth=3, seed=0, show_progress=False)
    retriever = RETRIEVERS.get("bm25")(get_pack("en"), fields="flat", show_progress=False)
    retriever.index(source)
    run = retriever.search({q: source.queries[q] for q in manifest.query_ids}, 3)
    top = {d for docs in run.values() for d, _ in ranked(docs)[:3]}
    judged = {d for q in manifest.query_ids for d in source.qrels("test")[q] if d in source.corpus}
    assert set(BeirDataset(tmp_path / "sub").corpus) == judged | top
    assert manifest.pool[0].description["fields"] == "flat" and manifest.counts.random == 0


def test_manifest_names_language_and_family(source, tmp_path):
    manifest = make_subset(source, tmp_path / "out", queries=3, pool={}, depth=0, max_docs=12, seed=0,
                           show_progress=False)
    loaded = SubsetManifest.load(tmp_path / "out" / "subset.json")
    assert loaded == manifest and loaded.name == "toy-subset" and loaded.family == "toy"
    assert loaded.source.checksum == source.checksum() and loaded.split == "test" and loaded.pool == []
    assert (loaded.method.seed, loaded.method.depth_reached, loaded.counts.documents) == (0, 0, 12)
    sub = BeirDataset(tmp_path / "out")
    assert sub.name == "toy-subset" and sub.subset == loaded
    assert catalogue.lookup("scifact-subset").name == "scifact" and catalogue.lookup("scifact-subset-pl").name == "scifact"
    assert catalogue.test_split_for("msmarco-subset") == "dev" and catalogue.ignore_identical_ids_for("arguana-subset")


def test_translated_dataset_subset_keeps_its_language(tmp_path):
    root = write_beir(tmp_path / "toy-pl", DOCS, QUERIES, QRELS)
    translation_manifest(name="toy", src="en", tgt="pl", translator={"backend": "t"}).save(root / "translation.json")
    lang, _ = dataset_language(str(root), None)
    translated = BeirDataset(root, lang=lang)
    manifest = make_subset(translated, tmp_path / "sub", queries=4, pool={"bm25": parse_system("bm25")}, depth=2,
                           seed=0, show_progress=False)
    assert manifest.language == "pl" and manifest.name == "toy-subset" and manifest.pool[0].description["analyzer"] == "pl"
    assert dataset_language(str(tmp_path / "sub"), None) == ("pl", "subset.json")
    assert BeirDataset(tmp_path / "sub").name == "toy-subset"


# -- systems and errors ------------------------------------------------------------------------------------------

def test_system_spellings(tmp_path):
    assert parse_system("bm25").retriever == "bm25" and parse_system("bm25").params == {}
    assert parse_system("dense:/models/e5").params == {"model": "/models/e5"}
    assert parse_system("dense:model=m,backend=onnx,quantize=int8,batch_size=8").params == {
        "model": "m", "backend": "onnx", "quantize": "int8", "batch_size": 8}
    assert parse_system("bm25:k1=0.9,b=0.4").params == {"k1": 0.9, "b": 0.4}
    assert parse_system("dense:model=m,sort_by_length=FALSE").params == {"model": "m", "sort_by_length": False}
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\n")
    assert isinstance(parse_system(str(run)), RunFileSpec)
    both = parse_systems(["dense:m", "dense:model=m,backend=onnx"])
    assert list(both) == ["dense:m", "dense:model=m,backend=onnx"]  # equal labels: named by their spelling
    with pytest.raises(BeirxError, match="neither an existing TREC run file nor a retriever.*bm25"):
        parse_system("bm52")
    with pytest.raises(BeirxError, match="system 'bm25:fields=flat,oops': expected KEY=VALUE, got 'oops' after ':'"):
        parse_system("bm25:fields=flat,oops")


def test_errors_leave_everything_in_place(source, tmp_path, capsys):
    with pytest.raises(BeirxError, match="is the source dataset"):
        make_subset(source, source.root, queries=2, pool={}, depth=0, show_progress=False)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main(["subset", "--dataset", str(source.root), "--queries", "2", "--output", str(other)]) == 2
    assert "is not a beirx subset" in capsys.readouterr().err and (other / "keep.txt").read_text() == "mine"
    run = _run_file(tmp_path / "r.trec", {"q11": ["d01"]})
    with pytest.raises(DataError, match="r.trec: none of the 2 kept queries is in this run file"):
        make_subset(source, tmp_path / "x", queries=2, pool=parse_pool([str(run)]), depth=2, show_progress=False)
    assert not (tmp_path / "x").exists()
    assert main(["subset", "check", str(source.root)]) == 2
    assert "expected  beirx subset check FULL SUBSET" in capsys.readouterr().err


def test_cli_makes_a_subset_and_checks_it(source, tmp_path, capsys):
    run = _run_file(tmp_path / "ext.trec", {f"q{i}": [f"d{i:02d}", "d30"] for i in range(1, 9)})
    out = tmp_path / "sub"
    assert main(["subset", "--dataset", str(source.root), "--queries", "6", "--pool", "bm25:fields=flat", str(run),
                 "--depth", "2", "--max-docs", "20", "--seed", "4", "--output", str(out),
                 "--check", "bm25:fields=flat", "bm25", "--runs", str(run)]) == 0
    printed = capsys.readouterr().out
    assert "queries: 6 of 8 (seed 4); qrels" in printed and "documents: 20 of 40" in printed
    assert "Kendall's tau:" in printed and "run ext.trec" in printed and "Spearman's rho" in printed
    assert "resolution on the subset (6 queries): smallest difference separated" in printed
    assert ("paired (both sides over the same resampled subset queries: the document cut's own fidelity): tau "
            in printed)
    assert "self-ceiling (the full set's own scores on the same draws" in printed
    saved = SubsetManifest.load(out / "subset.json").ranking_check
    assert len(saved.paired_tau_interval) == len(saved.rho_interval) == len(saved.ceiling_tau_interval) == 2
    assert "\nRead: " in printed and "family: did not pool itself, but a system of its family did" in printed
    marks = {line.rsplit("  ", 1)[0].split("  ")[0]: line.rsplit("  ", 1)[1] for line in printed.splitlines()
             if line.startswith(("bm25", "run"))}
    # bm25 (multifield) did not pool, but BM25 flat of its (lexical) family did, and so did the run file
    assert marks == {"bm25 fields=flat": "yes", "bm25": "family", "run ext.trec": "yes"}
    check = SubsetManifest.load(out / "subset.json").ranking_check
    assert [s.full_rank for s in check.systems] == sorted(s.full_rank for s in check.systems)
    assert len(check.systems) == 3 and check.split == "test" and check.metric == "NDCG@10"
    assert (out / "ranking-check" / "subset" / "runs" / "ext.trec").is_file()


def test_unknown_system_key_names_it_and_the_allowed_keys(source, tmp_path, capsys):
    with pytest.raises(BeirxError) as error:
        parse_system("bm25:bm25_preset=pyserini")
    assert str(error.value) == ("system 'bm25:bm25_preset=pyserini': bm25 has no parameter 'bm25_preset'; its "
                                "keys are b, combine, fields, k1, length_norm, preset, tie_breaker")
    assert main(["subset", "--dataset", str(source.root), "--queries", "2", "--pool", "bm25:multifield_combine=sum",
                 "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "bm25 has no parameter 'multifield_combine'; its keys are b, combine, fields" in err
    assert "Traceback" not in err and not (tmp_path / "x").exists()


def test_pool_run_file_with_no_document_of_the_corpus_is_refused(source, tmp_path):
    run = _run_file(tmp_path / "other.trec", {f"q{i}": ["x1", "x2"] for i in range(1, 9)})
    with pytest.raises(DataError, match=r"other.trec: none of the 2 document IDs this run file ranks for the kept "
                                        r"queries is in .*corpus.jsonl \(e.g. 'x1'\); is it a run on another corpus\?"):
        make_subset(source, tmp_path / "x", queries=2, pool=parse_pool([str(run)]), depth=2, show_progress=False)
    assert not (tmp_path / "x").exists()


def test_default_recipe_keeps_every_judged_query_and_draws_the_rest_at_random(source, tmp_path, capsys):
    """No size options: every judged query (up to the cap), the judged documents and a seeded uniform random
    sample of the others up to the 1,500-document budget, with no pool (here the 40-document corpus fits whole;
    with --max-docs 20: the 9 judged documents and the 11 that the documented rule draws)."""
    from beirx.subsets import recipe

    assert main(["subset", "--dataset", str(source.root), "--output", str(tmp_path / "d")]) == 0
    printed = capsys.readouterr().out
    manifest = SubsetManifest.load(tmp_path / "d" / "subset.json")
    assert manifest.query_ids == [f"q{i}" for i in range(1, 9)] and manifest.method.queries_cap is True
    assert (manifest.method.queries, manifest.method.max_docs, manifest.method.depth) == (
        recipe.QUERY_CAP, recipe.MAX_DOCS, recipe.DEPTH) == (1000, 1500, 100)
    assert manifest.pool == [] and recipe.POOL == [] and manifest.method.depth_reached == 0
    assert "queries: 8 of 8 (every judged query up to 1,000); qrels" in printed
    assert "documents: 40 of 40 = 9 judged + 31 random (no pool: every system is cut alike)" in printed
    assert "characters to translate: " in printed
    assert main(["subset", "--dataset", str(source.root), "--max-docs", "20", "--seed", "3",
                 "--output", str(tmp_path / "small")]) == 0
    judged = {"d01", "d02", "d03", "d04", "d05", "d06", "d07", "d08", "d12"}
    assert set(BeirDataset(tmp_path / "small").corpus) == judged | _expected_fill(judged, 11, 3)
    assert main(["subset", "--dataset", str(source.root), "--queries", "3", "--no-max-docs", "--depth", "1", "--pool", "bm25",
                 "--output", str(tmp_path / "old")]) == 0
    old = SubsetManifest.load(tmp_path / "old" / "subset.json")
    assert old.method.max_docs is None and old.counts.random == 0 and old.counts.queries == 3
    assert old.method.queries_cap is False and [p.spec for p in old.pool] == ["bm25"]


def test_cost_records_the_dry_run_of_subset_and_full_dataset(source, tmp_path, capsys):
    """--cost deepl: the subset and its source planned as DeepL dry runs from an empty memory; the figures are
    those of beirx translate --dry-run, the money DeepL's list price, and the file still loads."""
    from beirx.translate.backends.deepl import DeepLTranslator
    from beirx.translate.pipeline import dry_run
    from beirx.translate.translation_memory import TranslationMemory

    def word(i: int) -> str:  # distinct, digit-free texts: DOCS' texts differ only by numbers, which are masked
        return "".join(chr(97 + (i * 7 + k * k) % 26) for k in range(6))

    docs = [{"_id": d["_id"], "title": word(i), "text": f"{word(i + 50)} {word(i + 90)}."} for i, d in enumerate(DOCS)]
    source = BeirDataset(write_beir(tmp_path / "words", docs, QUERIES, QRELS), name="words")
    out = tmp_path / "costed"
    assert main(["subset", "--dataset", str(source.root), "--queries", "3", "--depth", "0", "--max-docs", "10",
                 "--output", str(out), "--cost", "deepl", "--cost-lang", "pl"]) == 0
    printed = capsys.readouterr().out
    cost = SubsetManifest.load(out / "subset.json").cost
    translator = DeepLTranslator("en", "pl")
    with TranslationMemory(tmp_path / "m" / "memory.sqlite") as memory:
        mine = dry_run(BeirDataset(out), translator, memory)
    with TranslationMemory(tmp_path / "n" / "memory.sqlite") as memory:
        whole = dry_run(source, translator, memory)
    assert (cost["translator"], cost["target"]) == ("deepl", "pl")
    assert (cost["characters"], cost["tokens"], cost["segments"]) == (
        mine["characters_total"], mine["tokens_total"], mine["segments_unique"])
    assert 0 < cost["characters"] < whole["characters_total"] == cost["full_dataset"]["characters_total"]
    assert cost["share_of_full"]["characters_total"] == round(mine["characters_total"] / whole["characters_total"], 6)
    assert cost["estimated_cost_usd"] == round(mine["characters_total"] / 1e6 * 25.0, 2)
    assert (f"cost with deepl (pl): {mine['characters_total']:,} of {whole['characters_total']:,} characters = "
            f"{mine['characters_total'] / whole['characters_total']:.1%}") in printed
    assert "(dry run, nothing sent)" in printed


def test_default_recipe_needs_no_model_offline(source, tmp_path, monkeypatch):
    """Offline with an empty Hugging Face cache the default recipe still cuts: it pools from no model."""
    needs("huggingface_hub", "hub")
    from huggingface_hub import constants
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert main(["subset", "--dataset", str(source.root), "--output", str(tmp_path / "d")]) == 0
    assert SubsetManifest.load(tmp_path / "d" / "subset.json").counts.documents == 40


def test_unknown_cost_translator_fails_before_the_subset_is_cut(source, tmp_path, capsys):
    assert main(["subset", "--dataset", str(source.root), "--queries", "2", "--depth", "0", "--output",
                 str(tmp_path / "d"), "--cost", "deeepl"]) == 2
    assert "deeepl" in capsys.readouterr().err and not (tmp_path / "d").exists()
