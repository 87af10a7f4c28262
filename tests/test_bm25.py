"""Embedded BM25: Lucene's formula by hand, best_fields combination, top-k ties, on-disk index reuse."""

from __future__ import annotations

import pytest

from beirx.data.records import Query
from beirx.evaluate.retrievers.bm25 import BM25Retriever, top_k
from bm25_reference import WhitespacePack, lucene_bm25


def test_flat_scores_match_lucene_formula(fields_dataset):
    bm25 = BM25Retriever(WhitespacePack(), fields="flat", show_progress=False)
    bm25.index(fields_dataset)
    run = bm25.search({"q": Query("q", "apple pie")}, k=10)["q"]
    # flat field = title + " " + text; lengths a=5, b=6, c=3; avgdl = 14/3
    avgdl, n = 14 / 3, 3
    expected = {
        "a": lucene_bm25(3, 5, avgdl, 2, n) + lucene_bm25(1, 5, avgdl, 2, n),
        "b": lucene_bm25(1, 6, avgdl, 2, n),
        "c": lucene_bm25(2, 3, avgdl, 2, n),
    }
    assert run.keys() == expected.keys()
    for did, score in expected.items():
        assert run[did] == pytest.approx(score, rel=1e-6)


def test_multifield_is_best_fields_with_tie_breaker(fields_dataset):
    bm25 = BM25Retriever(WhitespacePack(), fields="multifield", tie_breaker=0.5, show_progress=False)
    bm25.index(fields_dataset)
    run = bm25.search({"q": Query("q", "apple pie")}, k=10)["q"]
    # title field exists in a and c only (N=2, avgdl=1.5); text field in all three (N=3, avgdl=11/3).
    t_a = lucene_bm25(1, 2, 1.5, 1, 2)                      # "apple" in "red apple"
    t_c = lucene_bm25(1, 1, 1.5, 1, 2)                      # "pie" in "pie"
    x_a = lucene_bm25(2, 3, 11 / 3, 2, 3) + lucene_bm25(1, 3, 11 / 3, 2, 3)
    x_b = lucene_bm25(1, 6, 11 / 3, 2, 3)
    x_c = lucene_bm25(1, 2, 11 / 3, 2, 3)
    expected = {"a": max(t_a, x_a) + 0.5 * min(t_a, x_a), "b": x_b, "c": max(t_c, x_c) + 0.5 * min(t_c, x_c)}
    for did, score in expected.items():
        assert run[did] == pytest.approx(score, rel=1e-6)


def test_repeated_query_token_counts_twice_and_unknown_query_is_empty(fields_dataset):
    bm25 = BM25Retriever(WhitespacePack(), fields="flat", show_progress=False)
    bm25.index(fields_dataset)
    run = bm25.search({"q1": Query("q1", "cherry"), "q2": Query("q2", "cherry cherry"), "q3": Query("q3", "zebra")}, 10)
    assert run["q2"]["c"] == pytest.approx(2 * run["q1"]["c"], rel=1e-6)
    assert run["q3"] == {}


def test_top_k_keeps_evaluation_order_on_ties():
    import numpy as np

    scores = np.array([1.0, 2.0, 1.0, 1.0, 0.0], dtype=np.float32)
    ids = ["d0", "d1", "d2", "d3", "d4"]
    assert list(top_k(scores, ids, 3)) == ["d1", "d3", "d2"]  # among ties, higher doc ID first
    assert list(top_k(scores, ids, 10)) == ["d1", "d3", "d2", "d0"]  # zero scores never returned


def test_index_is_cached_and_keyed_by_parameters(fields_dataset, beirx_home):
    first = BM25Retriever(WhitespacePack(), fields="flat", show_progress=False)
    first.index(fields_dataset)
    assert not first.loaded_from_cache and (first.index_dir / "COMPLETE").is_file()
    assert first.index_dir.is_relative_to(beirx_home)
    again = BM25Retriever(WhitespacePack(), fields="flat", show_progress=False)
    again.index(fields_dataset)
    assert again.loaded_from_cache and again.index_dir == first.index_dir
    q = {"q": Query("q", "apple pie")}
    assert again.search(q, 10) == first.search(q, 10)
    other = BM25Retriever(WhitespacePack(), fields="flat", k1=0.9, show_progress=False)
    other.index(fields_dataset)
    assert not other.loaded_from_cache and other.index_dir != first.index_dir


# -- Lucene's length norms, field combinations, presets (issue 19) ------------------------------------------------
@pytest.fixture
def long_dataset(tmp_path):
    """Documents long enough for the one-byte norm to round their lengths (worked out by hand below)."""
    from beirx.data.dataset import BeirDataset
    from conftest import write_beir

    corpus = [
        {"_id": "a", "title": "apple pie", "text": "apple" + " x" * 99},      # text 100 tokens, flat 102
        {"_id": "b", "title": "", "text": "apple tree"},                       # no title
        {"_id": "c", "title": "pie", "text": "cherry pie" + " y" * 38},        # text 40 tokens, flat 41
    ]
    return BeirDataset(write_beir(tmp_path / "long", corpus, [{"_id": "q", "text": "apple pie"}],
                                  {"test": [("q", "a", 1)]}))


def test_lengths_through_lucenes_one_byte_norm():
    import numpy as np

    from beirx.evaluate.retrievers.length_norms import byte4_to_int, int_to_byte4, lucene_lengths

    assert [byte4_to_int(int_to_byte4(n)) for n in range(41)] == list(range(41))  # 0-40 unchanged
    assert [int_to_byte4(n) for n in (0, 1, 23, 24, 39, 40, 41)] == [0, 1, 23, 24, 39, 40, 40]
    # larger lengths: 24 + the rest rounded down to 4 significant bits (100 = 24 + 0b1001100 -> 24 + 0b1001000)
    assert {n: byte4_to_int(int_to_byte4(n)) for n in (41, 42, 43, 57, 100, 102, 1000)} == \
        {41: 40, 42: 42, 43: 42, 57: 56, 100: 96, 102: 96, 1000: 984}
    assert (int_to_byte4(2**31 - 1), byte4_to_int(255)) == (255, 2_013_265_944)
    lengths = np.arange(50_000)  # the array form used in indexing equals the scalar port (and Java's, test_bm25_lucene)
    assert lucene_lengths(lengths).tolist() == [byte4_to_int(int_to_byte4(n)) for n in range(50_000)]


def test_flat_scores_use_lucene_norms_by_default_and_exact_lengths_on_request(long_dataset):
    q = {"q": Query("q", "apple pie")}
    avgdl, n = 145 / 3, 3  # the average stays exact: (102 + 2 + 41) / 3
    for norm, dl_a, dl_c in (("lucene", 96, 40), ("exact", 102, 41)):
        bm25 = BM25Retriever(WhitespacePack(), fields="flat", length_norm=None if norm == "lucene" else norm,
                             show_progress=False)
        bm25.index(long_dataset)
        # "apple pie apple x ...": apple twice, pie once; "pie cherry pie y ...": pie twice
        expected = {"a": lucene_bm25(2, dl_a, avgdl, 2, n) + lucene_bm25(1, dl_a, avgdl, 2, n),
                    "b": lucene_bm25(1, 2, avgdl, 2, n), "c": lucene_bm25(2, dl_c, avgdl, 2, n)}
        assert bm25.describe()["length_norm"] == norm
        assert bm25.search(q, 10)["q"] == pytest.approx(expected, rel=1e-6)


def _multifield_parts(k1, b):
    """Field scores of the long corpus: title in a and c (N 2, avgdl 1.5), text in all (N 3, avgdl 142/3,
    lengths 100 -> 96, 2, 40)."""
    t = {"a": lucene_bm25(1, 2, 1.5, 1, 2, k1, b) + lucene_bm25(1, 2, 1.5, 2, 2, k1, b),
         "c": lucene_bm25(1, 1, 1.5, 2, 2, k1, b)}
    x = {"a": lucene_bm25(1, 96, 142 / 3, 2, 3, k1, b), "b": lucene_bm25(1, 2, 142 / 3, 2, 3, k1, b),
         "c": lucene_bm25(1, 40, 142 / 3, 1, 3, k1, b)}
    return t, x


def test_multifield_sum_is_pyserinis_multifield(long_dataset):
    bm25 = BM25Retriever(WhitespacePack(), preset="pyserini-multifield", show_progress=False)
    assert (bm25.k1, bm25.b, bm25.fields, bm25.combine, bm25.length_norm) == (0.9, 0.4, "multifield", "sum", "lucene")
    bm25.index(long_dataset)
    t, x = _multifield_parts(0.9, 0.4)
    expected = {"a": t["a"] + x["a"], "b": x["b"], "c": t["c"] + x["c"]}
    assert bm25.search({"q": Query("q", "apple pie")}, 10)["q"] == pytest.approx(expected, rel=1e-6)
    assert bm25.describe() | {"implementation": None} == {
        "retriever": "bm25", "implementation": None, "k1": 0.9, "b": 0.4, "fields": "multifield",
        "length_norm": "lucene", "analyzer": "xx", "combine": "sum", "tie_breaker": None}


def test_best_fields_with_another_tie_breaker(long_dataset):
    bm25 = BM25Retriever(WhitespacePack(), fields="multifield", tie_breaker=0.3, show_progress=False)
    bm25.index(long_dataset)
    t, x = _multifield_parts(1.2, 0.75)
    expected = {d: max(t.get(d, 0), x[d]) + 0.3 * min(t.get(d, 0), x[d]) for d in "abc"}
    assert bm25.search({"q": Query("q", "apple pie")}, 10)["q"] == pytest.approx(expected, rel=1e-6)


def test_presets_explicit_values_and_contradictions():
    from beirx.errors import BeirxError
    from beirx.evaluate.retrievers.bm25_conventions import bm25_settings

    assert bm25_settings() == {"k1": 1.2, "b": 0.75, "fields": "multifield", "combine": "best_fields",
                               "tie_breaker": 0.5, "length_norm": "lucene"}
    assert bm25_settings("elasticsearch") == bm25_settings()
    assert bm25_settings("pyserini-flat") == {  # the combination does not apply to one field
        "k1": 0.9, "b": 0.4, "fields": "flat", "combine": "best_fields", "tie_breaker": 0.5, "length_norm": "lucene"}
    overridden = bm25_settings("pyserini-flat", k1=1.5, length_norm="exact")
    assert (overridden["k1"], overridden["b"], overridden["length_norm"]) == (1.5, 0.4, "exact")
    with pytest.raises(BeirxError, match="tie-breaker applies to --multifield-combine best_fields only"):
        bm25_settings("pyserini-multifield", tie_breaker=0.3)
    with pytest.raises(BeirxError, match="unknown BM25 preset 'lucene'; choose one of: elasticsearch"):
        bm25_settings("lucene")
    with pytest.raises(BeirxError, match="length_norm must be one of lucene, exact, got 'byte'"):
        BM25Retriever(WhitespacePack(), length_norm="byte")


def _systems(*flags):
    from beirx.cli import build_parser
    from beirx.cli.eval import systems_from_args

    argv = ["eval", "--dataset", "x", *flags]
    return list(systems_from_args(build_parser(argv).parse_args(argv)).values())


def test_command_line_presets_and_file_names():
    from beirx.evaluate.specs import SystemSpec

    [default] = _systems("--retriever", "bm25")
    assert default == SystemSpec("bm25", {"k1": 1.2, "b": 0.75, "fields": "multifield"})  # file names unchanged
    [flat] = _systems("--bm25-preset", "pyserini-flat")
    assert flat == _systems("--k1", "0.9", "--b", "0.4", "--fields", "flat")[0]
    assert flat.tag() == "bm25-b_0.4-fields_flat-k1_0.9"
    [multi] = _systems("--bm25-preset", "pyserini-multifield")
    assert multi.params == {"k1": 0.9, "b": 0.4, "fields": "multifield", "combine": "sum"}
    assert (multi.tag(), multi.label()) == ("bm25-b_0.4-combine_sum-fields_multifield-k1_0.9",
                                            "bm25 combine=sum fields=multifield")
    [exact] = _systems("--fields", "flat", "--length-norm", "exact", "--multifield-combine", "sum")
    assert exact.params == {"k1": 1.2, "b": 0.75, "fields": "flat", "length_norm": "exact"}  # no combine for flat
    [tied] = _systems("--tie-breaker", "0.3")
    assert tied.tag() == "bm25-b_0.75-fields_multifield-k1_1.2-tie_breaker_0.3"


def test_contradicting_flags_exit_2_and_elasticsearch_refuses_what_it_cannot_do(tiny_dataset, tmp_path, capsys):
    from beirx.cli import main

    base = ["eval", "--dataset", str(tiny_dataset), "--output", str(tmp_path / "out")]
    assert main([*base, "--bm25-preset", "pyserini-multifield", "--tie-breaker", "0.3"]) == 2
    assert "tie-breaker applies to --multifield-combine best_fields only" in capsys.readouterr().err
    assert main([*base, "--retriever", "elasticsearch", "--multifield-combine", "sum"]) == 2
    assert "--multifield-combine sum (pyserini-multifield) are for --retriever bm25" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_index_cache_is_keyed_by_length_norm_not_by_combination(long_dataset):
    import json

    lucene = BM25Retriever(WhitespacePack(), show_progress=False)
    lucene.index(long_dataset)
    exact = BM25Retriever(WhitespacePack(), length_norm="exact", show_progress=False)
    exact.index(long_dataset)
    assert not exact.loaded_from_cache and exact.index_dir != lucene.index_dir
    q = {"q": Query("q", "apple pie")}
    assert exact.search(q, 10) != lucene.search(q, 10)
    marker = json.loads((exact.index_dir / "COMPLETE").read_text(encoding="utf-8"))
    assert marker["length_norm"] == "exact" and "combine" not in marker
    summed = BM25Retriever(WhitespacePack(), combine="sum", show_progress=False)
    summed.index(long_dataset)  # the combination is applied at search time: same index
    assert summed.loaded_from_cache and summed.index_dir == lucene.index_dir
    again = BM25Retriever(WhitespacePack(), length_norm="exact", show_progress=False)
    again.index(long_dataset)
    assert again.loaded_from_cache and again.index_dir == exact.index_dir and again.search(q, 10) == exact.search(q, 10)
