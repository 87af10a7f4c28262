"""Hardening battery, class 10: links as input. A symbolic link that loops or leads nowhere, wherever beirx
reads or writes a path, is exit code 2 with a message naming the link and what is wrong with it: never a
traceback, never a bare "not found", and a link is never replaced by a file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from beirx.cli import main
from beirx.path_problems import link_problem
from conftest import write_beir
from hardening_helpers import CORPUS, QRELS, QUERIES

LOOP = "is a symbolic link that loops back to itself"
NOWHERE = "which does not exist"


@pytest.fixture
def ds(tmp_path):
    return write_beir(tmp_path / "tiny", CORPUS, QUERIES, QRELS)


def loop(path: Path) -> Path:
    """``path`` -> ``path.b`` -> ``path``."""
    os.symlink(path.name + ".b", path)
    os.symlink(path.name, path.with_name(path.name + ".b"))
    return path


def dangling(path: Path) -> Path:
    """A chain ``path`` -> ``path.b`` -> a file that does not exist."""
    os.symlink(path.name + ".b", path)
    os.symlink(path.parent / "gone" / "nothing", path.with_name(path.name + ".b"))
    return path


def test_link_problem_names_the_first_link_that_cannot_be_followed(tmp_path):
    assert link_problem(loop(tmp_path / "a")) == f"{tmp_path / 'a'} {LOOP}"
    assert link_problem(tmp_path / "a" / "deeper" / "file") == f"{tmp_path / 'a'} {LOOP}"
    assert link_problem(dangling(tmp_path / "d")) == \
        f"{tmp_path / 'd'} is a symbolic link to {tmp_path / 'gone' / 'nothing'}, {NOWHERE}"
    os.symlink(tmp_path, tmp_path / "fine")
    assert link_problem(tmp_path / "fine") is None and link_problem(tmp_path / "missing") is None


def _dataset_folder(ds, tmp, make):
    return ["eval", "--dataset", str(make(tmp / "link")), "--output", str(tmp / "out")], tmp / "link"


def _corpus_file(ds, tmp, make):
    (ds / "corpus.jsonl").rename(tmp / "corpus.jsonl")
    make(ds / "corpus.jsonl")
    return ["eval", "--dataset", str(ds), "--output", str(tmp / "out")], ds / "corpus.jsonl"


def _qrels_folder(ds, tmp, make):
    (ds / "qrels").rename(tmp / "qrels")
    make(ds / "qrels")
    return ["eval", "--dataset", str(ds), "--output", str(tmp / "out")], ds / "qrels"


def _output_folder(ds, tmp, make):
    return ["eval", "--dataset", str(ds), "--output", str(make(tmp / "out"))], tmp / "out"


def _translation_memory(ds, tmp, make):
    return ["translate", "--dataset", str(ds), "--lang", "es", "--translator", "apertium", "--no-quality",
            "--memory", str(make(tmp / "memory.sqlite")), "--output", str(tmp / "es")], tmp / "memory.sqlite"


def _model_folder(ds, tmp, make):
    return ["eval", "--dataset", str(ds), "--retriever", "dense", "--model", str(make(tmp / "model")),
            "--output", str(tmp / "out")], tmp / "model"


def _run_file(ds, tmp, make):
    return ["eval", "--dataset", str(ds), "--first-stage", str(make(tmp / "run.trec")), "--reranker", "cross-encoder",
            "--output", str(tmp / "out")], tmp / "run.trec"


def _grid_config(ds, tmp, make):
    return ["eval", "--config", str(make(tmp / "grid.toml"))], tmp / "grid.toml"


CASES = [_dataset_folder, _corpus_file, _qrels_folder, _output_folder, _translation_memory, _model_folder, _run_file,
         _grid_config]


@pytest.mark.parametrize("make,says", [(loop, LOOP), (dangling, NOWHERE)], ids=["loop", "dangling"])
@pytest.mark.parametrize("case", CASES, ids=[c.__name__.strip("_") for c in CASES])
def test_unresolvable_links_are_named_with_exit_2(ds, tmp_path, capsys, case, make, says):
    argv, link = case(ds, tmp_path, make)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(link) in err and says in err, err
    assert link.is_symlink()  # still the user's link


@pytest.mark.parametrize("make,says", [(loop, LOOP), (dangling, NOWHERE)], ids=["loop", "dangling"])
def test_an_atomic_write_through_a_broken_link_names_it_and_keeps_it(tmp_path, make, says):
    from beirx.atomic import write_json
    from beirx.cli.errors import describe

    link = make(tmp_path / "results.json")
    with pytest.raises(OSError) as caught:
        write_json(link, {"x": 1})
    assert f"{link} " in describe(caught.value) and says in describe(caught.value)
    assert link.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["results.json", "results.json.b"])  # no temp file left, the link not replaced


def test_beirx_home_that_loops(ds, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BEIRX_HOME", str(loop(tmp_path / "home")))
    assert main(["eval", "--dataset", str(ds), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{tmp_path / 'home'} {LOOP}; fix or remove the link" in err


def test_a_link_to_a_folder_is_followed_and_kept(ds, tmp_path, capsys):
    """Links that resolve are ordinary input and output: the output link stays a link to the written folder."""
    (tmp_path / "real-out").mkdir()
    os.symlink(tmp_path / "real-out", tmp_path / "out")
    os.symlink(ds, tmp_path / "ds-link")
    assert main(["eval", "--dataset", str(tmp_path / "ds-link"), "--output", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out").is_symlink() and list((tmp_path / "real-out").glob("*.json"))
