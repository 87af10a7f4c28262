"""The dataset catalogue, the cache layout and the ``beirx datasets`` listing (no network involved)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from beirx.data import cache, catalogue
from beirx.cli import datasets as commands
from beirx.data.cache import cache_dir, dataset_dir, translated_dirs
from beirx.data.catalogue import ignore_identical_ids_for
from beirx.errors import BeirxError
from conftest import write_beir

CQA = ["android", "english", "gaming", "gis", "mathematica", "physics", "programmers", "stats", "tex", "unix",
       "webmasters", "wordpress"]


def test_catalogue_has_beirs_18_zero_shot_datasets_plus_msmarco():
    zero_shot = {info.group or info.name for info in catalogue.CATALOGUE if info.zero_shot}
    assert len(zero_shot) == 18
    assert zero_shot == {"trec-covid", "nfcorpus", "bioasq", "nq", "hotpotqa", "fiqa", "signal1m", "trec-news",
                         "robust04", "arguana", "webis-touche2020", "cqadupstack", "quora", "dbpedia-entity",
                         "scidocs", "fever", "climate-fever", "scifact"}
    msmarco = catalogue.get("msmarco")
    assert not msmarco.zero_shot and msmarco.test_split == "dev" and msmarco.num_docs == 8_841_823


def test_cqadupstack_subsets_share_one_archive_and_sum_to_beirs_counts():
    subsets = [catalogue.get(n) for n in catalogue.GROUPS["cqadupstack"]]
    assert [s.subdir for s in subsets] == CQA
    assert {s.archive for s in subsets} == {"cqadupstack"}
    assert sum(s.num_docs for s in subsets) == 457_199  # BEIR Table 1
    assert sum(s.num_queries for s in subsets) == 13_145
    assert catalogue.get("cqadupstack/android").url("http://mirror") == "http://mirror/cqadupstack.zip"
    assert catalogue.get("cqadupstack/tex").beir_pl_id == "clarin-knext/cqadupstack-tex-pl"
    with pytest.raises(BeirxError, match="group of 12 datasets.*cqadupstack/android"):
        catalogue.get("cqadupstack")


def test_non_public_datasets_are_not_downloadable_and_say_how_to_get_them():
    restricted = {i.name for i in catalogue.CATALOGUE if not i.downloadable}
    assert restricted == {"bioasq", "signal1m", "trec-news", "robust04"}
    for name in restricted:
        info = catalogue.get(name)
        assert info.url() is None and info.md5 is None and info.access
    assert "trec.nist.gov" in catalogue.get("robust04").access


def test_every_public_archive_has_beirs_published_md5():
    public = {i.archive: i.md5 for i in catalogue.CATALOGUE if i.downloadable}
    assert len(public) == 15  # the 19 rows of BEIR Table 1 minus the 4 non-public ones
    assert all(re.fullmatch(r"[0-9a-f]{32}", md5) for md5 in public.values())
    assert public["scifact"] == "5f7d1de60b170fc8027bb7898e2efca1"
    assert public["cqadupstack"] == "4e41456d7df8ee7760a7f866133bda78"


def test_urls_follow_beirs_pattern_and_the_base_can_be_overridden(monkeypatch):
    monkeypatch.delenv("BEIRX_BEIR_URL", raising=False)
    assert catalogue.get("scifact").url() == \
        "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
    monkeypatch.setenv("BEIRX_BEIR_URL", "http://127.0.0.1:9/beir/")
    assert catalogue.get("scifact").url() == "http://127.0.0.1:9/beir/scifact.zip"
    assert catalogue.get("scifact").url("http://other") == "http://other/scifact.zip"
    info = catalogue.get("nq")
    assert (info.hf_id, info.hf_qrels_id) == ("BeIR/nq", "BeIR/nq-qrels")


def test_ignore_identical_ids_follows_mteb_and_beir_convention_is_available():
    flagged = {i.name for i in catalogue.CATALOGUE if i.ignore_identical_ids}
    assert flagged == {"msmarco", "fiqa", "arguana", "quora", "fever"}
    assert ignore_identical_ids_for("arguana") and not ignore_identical_ids_for("scidocs")
    assert ignore_identical_ids_for("scidocs", convention="beir")
    assert not ignore_identical_ids_for("cqadupstack/android")
    # translation keeps IDs, so translated names and BEIR-PL Hub ids get the source's setting
    assert ignore_identical_ids_for("quora-pl") and ignore_identical_ids_for("clarin-knext/arguana-pl")
    assert not ignore_identical_ids_for("my-own-dataset")
    with pytest.raises(BeirxError, match="convention"):
        ignore_identical_ids_for("quora", convention="trec")


# catalogue.test_split_for is not imported by name: pytest would collect it as a test
def test_test_split_lookup_tolerates_case_hub_ids_and_language_suffixes():
    assert catalogue.test_split_for("msmarco") == "dev"
    assert catalogue.test_split_for("MSMARCO") == "dev"
    assert catalogue.test_split_for("msmarco-pl") == "dev"
    assert catalogue.test_split_for("hf:clarin-knext/msmarco-pl") == "dev"
    assert catalogue.test_split_for("BeIR/msmarco") == "dev"
    assert catalogue.test_split_for("scifact") == "test"
    assert catalogue.test_split_for("unknown-thing") == "test"
    assert catalogue.lookup("clarin-knext/dbpedia-pl").name == "dbpedia-entity"
    assert catalogue.lookup("cqadupstack/android-pl").name == "cqadupstack/android"


def test_unknown_name_suggests_close_matches():
    with pytest.raises(BeirxError, match=r"unknown dataset 'scifcat'; did you mean: scifact"):
        catalogue.get("scifcat")
    assert "webis-touche2020" in catalogue.close_matches("touche")
    assert "dbpedia-entity" in catalogue.close_matches("dbpedia")


def test_cache_layout_respects_beirx_home(beirx_home):
    assert cache.beirx_home() == beirx_home
    assert cache_dir("indexes") == beirx_home / "indexes" and (beirx_home / "indexes").is_dir()
    assert dataset_dir("scifact") == beirx_home / "datasets" / "scifact"
    assert dataset_dir("scifact", "en") == beirx_home / "datasets" / "scifact"
    assert dataset_dir("scifact", "pl") == beirx_home / "datasets" / "scifact-pl"
    assert dataset_dir("cqadupstack/android", "pl") == beirx_home / "datasets" / "cqadupstack" / "android-pl"
    with pytest.raises(BeirxError, match="unknown cache folder"):
        cache_dir("tmp")


def test_default_home_is_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("BEIRX_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache.beirx_home() == tmp_path / ".cache" / "beirx"


@pytest.mark.parametrize("bad", ["../etc", "/abs", "a/../b", "", "sci fact", "x/"])
def test_dataset_names_cannot_escape_the_cache(bad):
    with pytest.raises(BeirxError, match="invalid dataset name"):
        dataset_dir(bad)


def test_invalid_language_code_is_rejected():
    with pytest.raises(BeirxError, match="invalid language code"):
        dataset_dir("scifact", "../x")


def _tiny(root: Path) -> Path:
    return write_beir(root, [{"_id": "d1", "title": "", "text": "t"}], [{"_id": "q1", "text": "q"}],
                      {"test": [("q1", "d1", 1)]})


def test_translated_versions_are_found_without_confusing_similar_names(beirx_home):
    datasets = beirx_home / "datasets"
    _tiny(datasets / "fever-pl")
    _tiny(datasets / "climate-fever-de")
    _tiny(datasets / "cqadupstack" / "android-pl")
    assert set(translated_dirs("fever")) == {"pl"}
    assert set(translated_dirs("climate-fever")) == {"de"}
    assert set(translated_dirs("cqadupstack/android")) == {"pl"}
    assert translated_dirs("scifact") == {}


def _args(**kw) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    commands.add_arguments(parser)
    argv = []
    for key, value in kw.items():
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, value]
    return parser.parse_args(argv)


def test_datasets_command_lists_the_catalogue(capsys):
    assert commands.run(_args()) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["name", "domain", "docs", "queries", "split"]
    scifact = next(line for line in lines if line.startswith("scifact "))
    assert scifact.split() == ["scifact", "Scientific", "5,183", "300", "test", "cc-by-nc-4.0", "no", "yes", "-", "no"]
    assert len([line for line in lines if line.startswith("cqadupstack/")]) == 12
    assert "not downloadable: bioasq, signal1m, trec-news, robust04" in out


def test_datasets_command_cached_and_json_show_paths_and_translations(beirx_home, capsys):
    _tiny(beirx_home / "datasets" / "scifact")
    _tiny(beirx_home / "datasets" / "scifact-pl")
    _tiny(beirx_home / "datasets" / "nfcorpus-de")
    (beirx_home / "datasets" / "arguana").mkdir(parents=True)  # empty folder: not a cached dataset
    assert commands.run(_args(cached=True)) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines[1:] if line and not line.startswith("cache:")]
    assert names == ["nfcorpus", "scifact"]
    scifact = next(line for line in lines if line.startswith("scifact "))
    assert scifact.split()[-2:] == ["pl", str(beirx_home / "datasets" / "scifact")]

    assert commands.run(_args(cached=True, json=True)) == 0
    rows = json.loads(capsys.readouterr().out)
    by_name = {r["name"]: r for r in rows}
    assert set(by_name) == {"nfcorpus", "scifact"}
    assert by_name["scifact"]["path"] == str(beirx_home / "datasets" / "scifact")
    assert by_name["scifact"]["translations"] == {"pl": str(beirx_home / "datasets" / "scifact-pl")}
    assert by_name["scifact"]["md5"] == "5f7d1de60b170fc8027bb7898e2efca1"
    assert by_name["nfcorpus"]["cached"] is False and by_name["nfcorpus"]["translations"] == {
        "de": str(beirx_home / "datasets" / "nfcorpus-de")}


def test_datasets_command_through_the_cli(capsys):
    from beirx.cli import main

    assert main(["datasets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 30 and rows[0]["name"] == "msmarco"
    assert main(["datasets", "--download", "robust04"]) == 2
    err = capsys.readouterr().err
    assert "robust04 (Robust04) is not publicly downloadable" in err and "trec.nist.gov" in err
