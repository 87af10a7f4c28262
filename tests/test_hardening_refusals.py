"""Numbers and names refused before the work: every numeric flag, a system's spelled parameters (``--pool``,
``--check``), a grid file's parameters, fusion weights, suite files and backend options refuse NaN, infinity and
out-of-range values by name (exit 2, nothing written); metric names are beirx's; the same run or system given
twice is refused, whatever path names it; a grid key in the wrong place and a run file of another corpus are named
in the user's terms."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

import pytest

from beirx.cli import COMMANDS, build_parser, main
from conftest import write_beir

DOCS = [{"_id": f"d{i:02d}", "title": f"t{i}", "text": f"document number {i} about topic {i % 4}"} for i in range(40)]
QUERIES = [{"_id": f"q{i}", "text": f"topic {i % 4} number {i}"} for i in range(1, 11)]
QRELS = {"test": [(f"q{i}", f"d{i:02d}", 1) for i in range(1, 11)] + [("q2", "d05", 1), ("q4", "d08", 1)]}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A toy dataset, its subset (pooled by BM25 flat) and two run files: one of its corpus, one of another."""
    root = tmp_path_factory.mktemp("refusals")
    full = write_beir(root / "toy", DOCS, QUERIES, QRELS)
    assert main(["subset", "--dataset", str(full), "--output", str(root / "sub"), "--queries", "6", "--pool",
                 "bm25:fields=flat", "--depth", "3", "--max-docs", "20", "--seed", "1", "--no-progress"]) == 0
    ours = "".join(f"q{i} Q0 d{i:02d} 1 3.0 ext\nq{i} Q0 d30 2 2.0 ext\nq{i} Q0 d{i + 1:02d} 3 1.0 ext\n"
                   for i in range(1, 11))
    (root / "ext.trec").write_text(ours, encoding="utf-8")
    alien = "".join(f"q{i} Q0 x{i:02d} 1 3.0 alien\nq{i} Q0 y30 2 2.0 alien\n" for i in range(1, 11))
    (root / "alien.trec").write_text(alien, encoding="utf-8")
    return root


@pytest.fixture
def work(pair, tmp_path):
    """A copy of the pair (each test writes into its own subset folder)."""
    shutil.copytree(pair, tmp_path / "w")
    return tmp_path / "w"


def _check(work: Path, *extra: str) -> int:
    return main(["subset", "check", str(work / "toy"), str(work / "sub"), *extra, "--no-progress"])


def _nothing_checked(work: Path) -> bool:
    return not (work / "sub" / "ranking-check").exists()


# -- a system's spelled parameters ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec,says", [
    ("bm25:k1=nan", "option k1: expected a finite number, got 'nan'"),
    ("bm25:k1=inf", "option k1: expected a finite number, got 'inf'"),
    ("bm25:k1=-1", "option k1: must be 0 or more, got -1.0"),
    ("bm25:b=7", "option b: must be between 0 and 1, got 7.0"),
    ("bm25:tie_breaker=2", "option tie_breaker: must be between 0 and 1, got 2.0"),
    ("bm25:fields=flatt", "option fields: must be one of flat, multifield, got 'flatt'"),
    ("dense:batch_size=0", "option batch_size: must be at least 1, got 0"),
    ("dense:max_length=nan", "option max_length: expected an integer, got 'nan'"),
    ("splade:query_max_length=-5", "option query_max_length: must be at least 1, got -5"),
])
def test_a_checked_systems_parameters_are_refused_before_any_work(work, capsys, spec, says):
    assert _check(work, "--check", "bm25", spec) == 2
    assert f"beirx subset: error: system {spec!r}: {says}" in capsys.readouterr().err
    assert _nothing_checked(work)


def test_a_pooling_systems_parameters_are_refused_before_any_work(work, capsys):
    assert main(["subset", "--dataset", str(work / "toy"), "--output", str(work / "new"), "--pool", "bm25:k1=nan",
                 "--no-progress"]) == 2
    assert "system 'bm25:k1=nan': option k1: expected a finite number, got 'nan'" in capsys.readouterr().err
    assert not (work / "new").exists()


# -- the same system twice ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["symlink", "copy", "relative"])
def test_the_same_run_file_twice_is_refused_whatever_path_names_it(work, capsys, how):
    first = work / "ext.trec"
    if how == "symlink":
        second = work / "link.trec"
        os.symlink(first, second)
    elif how == "copy":
        second = work / "copy.trec"
        shutil.copy(first, second)
    else:
        second = Path(os.path.relpath(first))
    assert _check(work, "--check", "bm25", "--runs", str(first), str(second)) == 2
    err = capsys.readouterr().err
    assert f"{second} is the same run as {first} (identical content): a system counted twice" in err, err
    assert _nothing_checked(work)


def test_the_same_retriever_spelled_twice_is_refused(work, capsys):
    assert _check(work, "--check", "bm25:k1=1.2", "bm25:k1=1.20") == 2
    assert "system 'bm25:k1=1.20' is the same system as 'bm25:k1=1.2'" in capsys.readouterr().err
    assert _nothing_checked(work)


def test_a_run_in_runs_and_in_the_grid_is_refused(work, capsys):
    (work / "grid.toml").write_text('[[systems]]\nname = "external"\nrun_file = "ext.trec"\n', encoding="utf-8")
    assert _check(work, "--check", "bm25", "--runs", str(work / "ext.trec"), "--check-config",
                  str(work / "grid.toml")) == 2
    assert "is the same run as" in capsys.readouterr().err and _nothing_checked(work)


# -- metric names ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["BOGUS@10", "NDCG@7", "NDCG", "NDCG@x"])
def test_an_unknown_metric_is_refused_with_the_valid_names(work, capsys, metric):
    assert _check(work, "--check", "bm25", "bm25:fields=flat", "--metric", metric) == 2
    err = capsys.readouterr().err
    assert f"argument --metric: unknown metric {metric!r}: choose MEASURE@k, MEASURE one of NDCG, MAP, Recall, P, " \
           "MRR, R_cap, Hole and k one of 1, 3, 5, 10, 100, 1000 (e.g. NDCG@10)" in err, err
    assert _nothing_checked(work)


def test_metric_names_in_other_spellings_are_read_as_beirxs(work, capsys):
    assert _check(work, "--check", "bm25", "bm25:fields=flat", "--metric", "nDCG@10") == 0
    assert "NDCG@10 full" in capsys.readouterr().out


def test_the_report_refuses_an_unknown_metric_by_name(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--metric", "BOGUS@10"]) == 2
    assert "argument --metric: unknown metric 'BOGUS@10'" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--language-metrics", "NDCG@10,Recall@7"]) == 2
    assert "argument --language-metrics: unknown metric 'Recall@7'" in capsys.readouterr().err


def test_beirxs_measures_are_pytrec_evals():
    """The names offered are measures pytrec_eval computes (and beirx's own two, defined in evaluate.metrics)."""
    import pytrec_eval

    from beirx.artifacts.results import MEASURES
    from beirx.evaluate.metrics import _PYTREC_FAMILIES

    assert set(_PYTREC_FAMILIES) | {"recip_rank"} <= pytrec_eval.supported_measures
    assert set(MEASURES) == set(_PYTREC_FAMILIES.values()) | {"MRR", "R_cap", "Hole"}


# -- grid files --------------------------------------------------------------------------------------------------
GRID_SYSTEMS = {
    "interpolation": ('[[systems]]\nname = "a"\nretriever = "bm25"\ninterpolation = 0.5\n',
                      "system 'a': 'interpolation' is a reranker's weight (in a system with 'reranker'), not a "
                      "parameter of the retriever 'bm25'"),
    "nan": ('[[systems]]\nname = "a"\nretriever = "bm25"\nk1 = nan\n',
            "system 'a': option k1: expected a finite number, got 'nan'"),
    "b": ('[[systems]]\nname = "a"\nretriever = "bm25"\nb = 7\n', "system 'a': option b: must be between 0 and 1, got 7.0"),
    "unknown-key": ('[[systems]]\nname = "a"\nretriever = "bm25"\nk_1 = 1.0\n', "system 'a': bm25 has no parameter 'k_1'"),
    "reranker-key": ('[[systems]]\nname = "a"\nretriever = "bm25"\n[[systems]]\nname = "r"\nreranker = "cross-encoder"\n'
                     'first_stage = "a"\nwindw = 3\n', "system 'r': cross-encoder has no parameter 'windw'"),
    "reranker-value": ('[[systems]]\nname = "a"\nretriever = "bm25"\n[[systems]]\nname = "r"\nreranker = "cross-encoder"\n'
                       'first_stage = "a"\nbatch_size = 0\n', "system 'r': option batch_size: must be at least 1, got 0"),
    "depth": ('[[systems]]\nname = "a"\nretriever = "bm25"\n[[systems]]\nname = "r"\nreranker = "cross-encoder"\n'
              'first_stage = "a"\ndepth = nan\n', "system 'r': option depth: expected an integer, got 'nan'"),
    "weights": ('[[systems]]\nname = "a"\nretriever = "bm25"\n[[systems]]\nname = "b"\nretriever = "bm25"\n'
                'fields = "flat"\n[[systems]]\nname = "f"\nfusion = "linear"\ninputs = ["a", "b"]\nweights = [nan, 1]\n',
                "system 'f': fusion weights: expected a finite number, got 'nan'"),
    "rrf_k": ('[[systems]]\nname = "a"\nretriever = "bm25"\n[[systems]]\nname = "b"\nretriever = "bm25"\n'
              'fields = "flat"\n[[systems]]\nname = "f"\nfusion = "rrf"\ninputs = ["a", "b"]\nrrf_k = -1\n',
              "system 'f': option rrf_k: must be 0 or more, got -1"),
}


@pytest.mark.parametrize("case", sorted(GRID_SYSTEMS))
def test_grid_parameters_are_refused_naming_the_file_before_any_work(work, capsys, case):
    text, says = GRID_SYSTEMS[case]
    grid = work / "grid.toml"
    grid.write_text(text, encoding="utf-8")
    assert _check(work, "--check", "bm25:fields=flat", "--check-config", str(grid)) == 2
    assert f"{grid}: {says}" in capsys.readouterr().err
    assert _nothing_checked(work)
    eval_grid = work / "eval.toml"
    eval_grid.write_text(f'datasets = ["{work / "toy"}"]\noutput = "out"\n' + text, encoding="utf-8")
    assert main(["eval", "--config", str(eval_grid), "--no-progress"]) == 2
    assert f"{eval_grid}: {says}" in capsys.readouterr().err and not (work / "out").exists()


@pytest.mark.parametrize("value,says", [("0", "must be at least 1, got 0"), ("nan", "expected an integer")])
def test_a_grids_top_k_is_checked(work, capsys, value, says):
    grid = work / "eval.toml"
    grid.write_text(f'datasets = ["{work / "toy"}"]\ntop_k = {value}\n[[systems]]\nname = "a"\nretriever = "bm25"\n',
                    encoding="utf-8")
    assert main(["eval", "--config", str(grid), "--output", str(work / "out"), "--no-progress"]) == 2
    assert f"{grid}: option top_k: {says}" in capsys.readouterr().err and not (work / "out").exists()


def test_fusion_weights_on_the_command_line(work, capsys):
    assert main(["eval", "--dataset", str(work / "toy"), "--retriever", "bm25", "--retriever", "dense", "--fusion",
                 "linear", "--weights", "nan,1", "--output", str(work / "out"), "--no-progress"]) == 2
    assert "fusion weights: expected a finite number, got 'nan'" in capsys.readouterr().err
    assert not (work / "out").exists()


# -- run files of another corpus ---------------------------------------------------------------------------------
def test_a_run_of_another_corpus_names_the_users_file_before_any_work(work, capsys):
    assert _check(work, "--check", "bm25", "--runs", str(work / "alien.trec")) == 2
    err = capsys.readouterr().err
    assert f"{work / 'alien.trec'}: none of its document IDs is in the corpus of toy (e.g. 'x01')" in err, err
    assert "run file is empty" not in err and _nothing_checked(work)


def test_eval_names_a_run_of_another_corpus(work, capsys):
    assert main(["eval", "--dataset", str(work / "toy"), "--first-stage", str(work / "alien.trec"), "--output",
                 str(work / "out"), "--no-progress"]) == 2
    assert f"{work / 'alien.trec'}: none of its document IDs is in the corpus of toy (e.g. 'x01')" in \
        capsys.readouterr().err


def test_a_grids_run_file_of_another_corpus_stops_before_any_retrieval(work, capsys):
    grid = work / "eval.toml"
    grid.write_text(f'datasets = ["{work / "toy"}"]\noutput = "out"\n[[systems]]\nname = "a"\nretriever = "bm25"\n'
                    '[[systems]]\nname = "x"\nrun_file = "alien.trec"\n', encoding="utf-8")
    assert main(["eval", "--config", str(grid), "--no-progress"]) == 2
    assert "alien.trec: none of its document IDs is in the corpus" in capsys.readouterr().err
    assert list((work / "out").glob("*.json")) == []  # no system was evaluated


# -- flags of every command --------------------------------------------------------------------------------------
def _numeric_flags():
    """``(command, option, type)`` of every flag that reads a number, in every command (train's flags are checked
    by its own tests)."""
    found = []

    def walk(parser, name):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(child, f"{name} {sub}")
            elif action.type in (int, float) or getattr(action.type, "__module__", "") == "beirx.argtypes" and \
                    action.type.__name__ not in ("output_dir", "comma_list", "key_value", "metric_name",
                                                 "metric_names"):
                found.append((name, action.option_strings[0], action.type))

    for command in COMMANDS:
        if command != "train":
            walk(build_parser([command]), command)
    return found


def test_every_numeric_flag_uses_a_checked_type():
    bare = [(command, option) for command, option, kind in _numeric_flags() if kind in (int, float)]
    assert bare == []


@pytest.mark.parametrize("command,option,kind", _numeric_flags(), ids=[f"{c} {o}" for c, o, _ in _numeric_flags()])
def test_every_numeric_flag_refuses_nan_and_infinity(command, option, kind):
    for text in ("nan", "inf", "-inf"):
        with pytest.raises((argparse.ArgumentTypeError, ValueError)):
            kind(text)


@pytest.mark.parametrize("argv,says", [
    (["report", ".", "--alpha", "nan"], "argument --alpha: expected a finite number"),
    (["report", ".", "--alpha", "1.5"], "argument --alpha: must be more than 0 and less than 1, got 1.5"),
    (["report", ".", "--permutations", "0"], "argument --permutations: must be at least 1, got 0"),
    (["report", ".", "--bootstrap", "-1"], "argument --bootstrap: must be 0 or more, got -1"),
    (["report", ".", "--seed", "-1"], "argument --seed: must be between 0 and 2**32 - 1, got -1"),
    (["subset", "--seed", "-1"], "argument --seed: must be between 0 and 2**32 - 1, got -1"),
    (["generate-queries", "--top-p", "nan"], "argument --top-p: expected a finite number"),
    (["generate-queries", "--per-doc", "0"], "argument --per-doc: must be at least 1, got 0"),
    (["translate", "--gpus-per-worker", "nan"], "argument --gpus-per-worker: expected a finite number"),
    (["translate", "--assemble", "-2"], "argument --assemble: must be 0 or more, got -2"),
    (["publish", "dataset", "x", "--repo", "o/n", "--min-review-alpha", "nan"],
     "argument --min-review-alpha: expected a finite number"),
    (["publish", "dataset", "x", "--repo", "o/n", "--min-review-items", "-1"],
     "argument --min-review-items: must be 0 or more, got -1"),
])
def test_numeric_flags_refuse_by_name(capsys, monkeypatch, tmp_path, argv, says):
    monkeypatch.chdir(tmp_path)  # a command that wrongly ran would write here
    assert main(argv) == 2
    assert says in capsys.readouterr().err


# -- suite files and backend options -----------------------------------------------------------------------------
@pytest.mark.parametrize("section,says", [
    ("[subset]\ntau_threshold = nan\n", "[subset] option tau_threshold: expected a finite number, got 'nan'"),
    ("[subset]\npool = [\"bm25:k1=nan\"]\n", "[subset] system 'bm25:k1=nan': option k1: expected a finite number"),
    ("[subset]\ncheck = [\"bm25\", \"bm25:b=7\"]\n", "[subset] system 'bm25:b=7': option b: must be between 0 and 1"),
    ("[subset]\ndepth = -1\n", "[subset] option depth: must be 0 or more, got -1"),
    ("[translate]\ntranslator = \"apertium\"\nmax_cost = -1.0\n", "[translate] option max_cost: must be 0 or more"),
    ("[quality]\nmax_items = 0\n", "[quality] option max_items: must be at least 1, got 0"),
    ("[mteb]\nbatch_size = 0\n", "[mteb] option batch_size: must be at least 1, got 0"),
])
def test_suite_files_refuse_numbers_by_name(tmp_path, section, says):
    from beirx.errors import DataError
    from beirx.suites.config import load_suite

    translate = "" if section.startswith("[translate]") else "[translate]\ntranslator = \"apertium\"\n"
    path = tmp_path / "suite.toml"
    path.write_text(f'name = "x"\nlanguages = ["es"]\ndatasets = ["scifact"]\n{translate}{section}', encoding="utf-8")
    with pytest.raises(DataError) as found:
        load_suite(path)
    assert f"{path}: {says}" in str(found.value)


@pytest.mark.parametrize("backend,option,says", [
    ("deepl", "timeout=nan", "deepl: option timeout: expected a finite number, got 'nan'"),
    ("deepl", "retries=0", "deepl: option retries: must be at least 1, got 0"),
    ("google", "backoff=inf", "google: option backoff: expected a finite number, got 'inf'"),
    ("google", "max_request_chars=0", "google: option max_request_chars: must be at least 1, got 0"),
])
def test_translator_options_are_read_as_numbers(pair, tmp_path, capsys, backend, option, says):
    assert main(["translate", "--dataset", str(pair / "toy"), "--lang", "es", "--translator", backend,
                 "--translator-option", option, "--output", str(tmp_path / "out"), "--dry-run", "--no-progress"]) == 2
    assert says in capsys.readouterr().err


def test_every_numeric_parameter_of_every_retriever_and_reranker_has_a_declared_type():
    """A new backend's number cannot slip past the check: each int or float constructor parameter is declared
    (an option of its OPTIONS) with a checked type, so its spelling and grid value are read as its flag."""
    import inspect

    from beirx.evaluate.rerankers import RERANKERS
    from beirx.evaluate.retrievers import RETRIEVERS

    undeclared = []
    for registry in (RETRIEVERS, RERANKERS):
        for name in registry.names():
            cls = registry.get(name)
            types = {option.name: option.type or option.choices for option in cls.OPTIONS}
            for param in inspect.signature(cls.__init__).parameters.values():
                annotation = str(param.annotation)
                numeric = any(word in annotation.replace("|", " ").split() for word in ("int", "float"))
                if numeric and param.name not in cls.INTERNAL and not types.get(param.name):
                    undeclared.append(f"{name}.{param.name}")
    assert undeclared == []


def test_a_results_file_with_a_metric_that_is_no_finite_number_is_refused_by_name(work, capsys):
    """JSON has no NaN: a results file holding one was written or edited wrongly, and a report would show a dash."""
    import json

    assert main(["eval", "--dataset", str(work / "toy"), "--output", str(work / "res"), "--no-progress"]) == 0
    [path] = list((work / "res").glob("*.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["metrics"]["NDCG@10"] = float("nan")
    path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(work / "res"), "--output", str(work / "report"), "--no-plots"]) == 2
    assert f"{path}: field 'metrics.NDCG@10': expected a finite number, got nan" in capsys.readouterr().err
    assert not (work / "report").exists()
    assert main(["publish", "results", str(work / "res"), "--repo", "org/res", "--dry-run"]) == 2
    assert f"{path}: field 'metrics.NDCG@10': expected a finite number, got nan" in capsys.readouterr().err
