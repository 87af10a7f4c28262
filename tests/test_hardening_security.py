"""Hardening battery, classes 3-5: the dataset's language, secrets never written, names that become paths
confined, and no user string executed as code."""

from __future__ import annotations

import ast
import builtins
import json
import logging
from pathlib import Path

import pytest

from beirx.cli import main
from beirx.data.language import dataset_language
from beirx.errors import BeirxError
from beirx.evaluate.specs import SystemSpec
from beirx.redact import redact_text, redact_url
from conftest import write_beir
from extras import needs
from hardening_helpers import CLEAN, CORPUS, QRELS, QUERIES, eval_cli, metrics_of


@pytest.fixture
def ds(tmp_path):
    return write_beir(tmp_path / "tiny", CORPUS, QUERIES, QRELS)


def _translated(ds: Path, lang: str) -> Path:
    """``ds`` with a real translation.json (a beirx-written fixture) that says the dataset is in ``lang``."""
    manifest = json.loads((Path(__file__).parent / "data" / "before_v2" / "translation.json").read_text())
    manifest["target"]["lang"] = lang
    (ds / "translation.json").write_text(json.dumps(manifest), encoding="utf-8")
    return ds


# -- language from the dataset ----------------------------------------------------------------------
def test_translation_json_sets_the_language(ds, tmp_path):
    code, results = eval_cli(_translated(ds, "pl"), tmp_path / "out")
    assert code == 0
    assert results["language_source"] == "translation.json"
    assert results["dataset"]["language"] == "pl" and results["language_pack"]["code"] == "pl"


def test_contradicting_lang_flag_is_used_and_warned_about(ds, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        code, results = eval_cli(_translated(ds, "pl"), tmp_path / "out", "--lang", "en")
    assert code == 0 and results["language_source"] == "given" and results["dataset"]["language"] == "en"
    assert any("contradicts" in r.getMessage() and "'pl'" in r.getMessage() for r in caplog.records)
    assert metrics_of(results) == CLEAN


def test_plain_folder_defaults_to_english_and_says_so(ds, tmp_path):
    code, results = eval_cli(ds, tmp_path / "out")
    assert code == 0 and results["language_source"] == "default" and results["dataset"]["language"] == "en"
    code, results = eval_cli(ds, tmp_path / "out2", "--lang", "en")
    assert results["language_source"] == "given"


def test_broken_translation_json_is_a_clear_error(ds, tmp_path, capsys):
    (ds / "translation.json").write_text("{", encoding="utf-8")
    assert eval_cli(ds, tmp_path / "out")[0] == 2
    assert str(ds / "translation.json") in capsys.readouterr().err


def test_dataset_language_library_function(ds):
    assert dataset_language(str(ds), None) == ("en", "default")
    assert dataset_language(str(_translated(ds, "es")), None) == ("es", "translation.json")
    assert dataset_language(str(ds), "de") == ("de", "given")
    assert dataset_language("scifact", None) == ("en", "default")


# -- redaction ------------------------------------------------------------------------------------
@pytest.mark.parametrize("url,expected", [
    ("http://elastic:p4ss@host:9200/x?y=1", "http://elastic:***@host:9200/x?y=1"),
    ("https://tok3n@es.example.org", "https://***@es.example.org"),
    ("http://host:9200", "http://host:9200"),
    ("http://a:b@c@host/", "http://a:***@host/"),
])
def test_redact_url(url, expected):
    assert redact_url(url) == expected


def test_redact_text_in_messages():
    text = "cannot reach http://u:pw1@h1:9200 nor https://tok@h2/x; see http://h3"
    assert redact_text(text) == "cannot reach http://u:***@h1:9200 nor https://***@h2/x; see http://h3"


def test_system_tag_never_holds_credentials():
    tag = SystemSpec("elasticsearch", {"url": "http://elastic:Sup3rS3cret@127.0.0.1:9200"}).tag()
    assert "Sup3rS3cret" not in tag and "elastic_" in tag


# -- the secret grep: eval (Elasticsearch), translate (DeepL), publish, with credentials everywhere -----------
URL_SECRET, ENV_SECRET, KEY_SECRET, TOKEN_SECRET = "UrlPw-9f3k", "EnvPw-4ac1", "deepl-key-77aa:fx", "hf_tok3nX9"


def _grep_tree(root: Path, secrets) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits += [f"{path}: {s}" for s in secrets if s.encode() in data]
        hits += [f"{path} (name): {s}" for s in secrets if s in path.name]
    return hits


def test_secret_grep_eval_translate_publish(ds, tmp_path, beirx_home, monkeypatch, capsys, caplog):
    needs("elasticsearch", "es")
    needs("pyarrow", "hub")  # publish writes parquet
    from test_translate_api import StubApi

    secrets = (URL_SECRET, ENV_SECRET, KEY_SECRET, TOKEN_SECRET)
    monkeypatch.setenv("BEIRX_ES_USER", "elastic")
    monkeypatch.setenv("BEIRX_ES_PASSWORD", ENV_SECRET)
    monkeypatch.setenv("DEEPL_AUTH_KEY", KEY_SECRET)
    monkeypatch.setenv("HF_TOKEN", TOKEN_SECRET)
    monkeypatch.setenv("HF_ENDPOINT", f"http://user:{URL_SECRET}@127.0.0.1:9")
    caplog.set_level(logging.DEBUG)
    out = tmp_path / "work"
    codes = []
    # 1. eval against an Elasticsearch URL with credentials: the server is unreachable (refused), so the
    #    URL travels through the retriever, the error and the logs (-vv: debug logging and traceback).
    codes.append(main(["-vv", "eval", "--dataset", str(ds), "--output", str(out / "es"), "--retriever", "elasticsearch",
                       "--es-url", f"http://elastic:{URL_SECRET}@127.0.0.1:9", "--es-timeout", "2"]))
    # 2. translate with DeepL through a stub whose URL carries credentials, key in the environment.
    with StubApi() as stub:
        base = stub.url.replace("http://", f"http://user:{URL_SECRET}@")
        codes.append(main(["-vv", "translate", "--dataset", str(ds), "--lang", "pl", "--translator", "deepl",
                           "--translator-option", f"base_url={base}", "--max-cost", "1", "--no-quality",
                           "--output", str(out / "pl"), "--memory", str(out / "tm.sqlite")]))
    # 3. evaluate the translation, then publish it and the results (dry run) with a token in the environment.
    codes.append(main(["-vv", "eval", "--dataset", str(out / "pl"), "--output", str(out / "results")]))
    codes.append(main(["-vv", "publish", "dataset", str(out / "pl"), "--lang", "pl", "--repo", "org/tiny-pl",
                       "--dry-run", "--output", str(out / "export")]))
    codes.append(main(["-vv", "publish", "results", str(out / "results"), "--repo", "org/tiny-results",
                       "--dry-run"]))
    printed = capsys.readouterr()
    assert codes == [2, 0, 0, 0, 0], (codes, printed.err[-3000:])
    assert "cannot reach" in printed.err and "elastic:***@127.0.0.1:9" in printed.err
    logs = "\n".join(r.getMessage() for r in caplog.records)
    hits = [s for s in secrets if s in printed.out or s in printed.err or s in logs]
    hits += _grep_tree(tmp_path, secrets)
    assert hits == []
    assert (out / "pl" / "translation.json").is_file() and (out / "export").is_dir()
    manifest = json.loads((out / "pl" / "translation.json").read_text())
    assert manifest["cost"]["characters_sent"] > 0 and manifest["cost"]["max_cost_usd"] == 1.0


def test_secret_grep_with_a_real_elasticsearch_server(ds, tmp_path, beirx_home, capsys, caplog, monkeypatch):
    needs("elasticsearch", "es")
    from elasticsearch_server import noida_binary, noida_elasticsearch

    if noida_binary() is None:
        pytest.skip("noida-db is not installed")
    monkeypatch.setenv("BEIRX_ES_USER", "elastic")
    monkeypatch.setenv("BEIRX_ES_PASSWORD", ENV_SECRET)
    caplog.set_level(logging.DEBUG)
    with noida_elasticsearch(tmp_path / "noida") as url:
        secret_url = url.replace("http://", f"http://elastic:{URL_SECRET}@")
        code = main(["-vv", "eval", "--dataset", str(ds), "--output", str(tmp_path / "out"), "--retriever",
                     "elasticsearch", "--es-url", secret_url])
    printed = capsys.readouterr()
    assert code == 0, printed.err[-2000:]
    [results] = (tmp_path / "out").glob("*.json")
    doc = json.loads(results.read_text())
    assert metrics_of(doc) == CLEAN
    assert doc["system"]["description"]["url"] == f"http://elastic:***@{url[len('http://'):]}"
    logs = "\n".join(r.getMessage() for r in caplog.records)
    for secret in (URL_SECRET, ENV_SECRET):
        assert secret not in printed.out + printed.err + logs
        assert _grep_tree(tmp_path / "out", [secret]) == [] and _grep_tree(beirx_home, [secret]) == []


# -- names that become paths ----------------------------------------------------------------------
ESCAPES = ["../../escaped", "/tmp/abs-escape", "a/../../b", ".."]


@pytest.mark.parametrize("bad", ESCAPES)
def test_split_cannot_escape(ds, tmp_path, capsys, bad):
    assert eval_cli(ds, tmp_path / "out", "--split", bad)[0] == 2
    assert "invalid split" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("bad", ESCAPES)
def test_mteb_task_name_cannot_escape(ds, tmp_path, capsys, bad):
    code = main(["eval", "--dataset", str(ds), "--output", str(tmp_path / "out"), "--mteb-results",
                 str(tmp_path / "mteb"), "--mteb-task", bad])
    assert code == 2 and "invalid MTEB task name" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*escape*"))


@pytest.mark.parametrize("bad", ["../../evil", "org/../../evil", "/abs/x", "org/na me", "org"])
def test_publish_repo_cannot_escape(ds, tmp_path, beirx_home, capsys, bad):
    assert main(["publish", "dataset", str(ds), "--repo", bad, "--dry-run"]) == 2
    assert "invalid --repo" in capsys.readouterr().err
    assert not (beirx_home / "hub").exists() and not (tmp_path / "evil").exists()


def test_mteb_results_model_and_revision_cannot_escape(ds, tmp_path, capsys):
    code, results = eval_cli(ds, tmp_path / "out")
    [path] = (tmp_path / "out").glob("*.json")
    for option, bad in (("--revision", "../../evil"), ("--model", ".."), ("--task", "../evil")):
        extra = {"--revision": ["--model", "m"], "--model": ["--revision", "r"], "--task": []}[option]
        task = [] if option == "--task" else ["--task", "Tiny"]
        code = main(["mteb", "results", str(path), "--output", str(tmp_path / "m"), *task, option, bad, *extra])
        assert code == 2, option
        assert "invalid" in capsys.readouterr().err
    assert not (tmp_path / "evil").exists() and not list(tmp_path.rglob("evil*"))


def test_hub_repo_spec_cannot_escape(tmp_path, beirx_home, capsys):
    assert main(["eval", "--dataset", "hf:../../../etc", "--output", str(tmp_path / "out")]) == 2
    assert not (beirx_home / "hub").exists() or not list((beirx_home.parent).glob("etc"))


# -- generated code: user strings only as literals, checked, never executed ------------------------------
EVIL = [
    '"""; import os; os.system("touch PWNED"); """',
    "'); __import__('os').system('touch PWNED'); ('",
    "x\\",
    "line\nbreak\r\u2028\x00",
    "\\N{BULLET} {braces} %s",
]


def _spec(**over):
    from beirx.publish.mteb_task import TaskSpec

    base = dict(name="Tiny-PL", description="d", dataset_path="org/tiny", dataset_revision="a" * 40,
                eval_splits=["test"], eval_langs=["pol-Latn"], bibtex_citation="@article{x}")
    base.update(over)
    return TaskSpec(**base)


@pytest.mark.parametrize("field", ["description", "dataset_path", "dataset_revision", "reference",
                                   "bibtex_citation", "license"])
@pytest.mark.parametrize("evil", EVIL)
def test_task_source_embeds_user_strings_as_literals(field, evil, tmp_path, monkeypatch):
    from beirx.publish.mteb_task import task_source

    monkeypatch.chdir(tmp_path)
    spec = _spec(**{field: evil})
    source = task_source(spec)
    tree = ast.parse(source)
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    call = next(s.value for s in cls.body if isinstance(s, ast.Assign))
    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    got = kwargs["dataset"][field.split("_")[1]] if field.startswith("dataset_") else kwargs[field]
    assert got == evil
    assert [type(n).__name__ for n in tree.body] == ["Expr", "ImportFrom", "ImportFrom", "ClassDef"]
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("evil", EVIL + ["A" * 101, "ok name", "../x"])
def test_task_name_is_validated(ds, evil, tmp_path, capsys):
    needs("mteb", "mteb")
    needs("pyarrow", "hub")
    from beirx.data.dataset import BeirDataset
    from beirx.publish.mteb_task import build_spec

    with pytest.raises(BeirxError, match="invalid MTEB task name"):
        build_spec(BeirDataset(ds), dataset_path="org/tiny", dataset_revision="a" * 40, name=evil)


def test_write_task_file_never_executes_code(ds, tmp_path, monkeypatch):
    needs("mteb", "mteb")
    from beirx.data.dataset import BeirDataset
    from beirx.publish.mteb_task import build_spec, write_task_file

    spec = build_spec(BeirDataset(ds), dataset_path="org/tiny", dataset_revision="a" * 40, name="Tiny-x")
    spec.description = EVIL[0]

    def no_exec(*args, **kwargs):
        raise AssertionError("exec called")

    monkeypatch.setattr(builtins, "exec", no_exec)
    path = write_task_file(spec, tmp_path / "t.py")
    assert EVIL[0] not in path.read_text().replace(repr(EVIL[0]), "").replace(json.dumps(EVIL[0]), "")
    assert not (tmp_path / "PWNED").exists()


def test_local_hub_copy_states_its_language_in_the_card(ds, tmp_path):
    needs("pyarrow", "hub")
    from beirx.data.dataset import BeirDataset
    from beirx.publish.hub import export_dataset

    export_dataset(BeirDataset(ds, lang="pl"), tmp_path / "hub-pl")
    assert dataset_language(f"hf:{tmp_path / 'hub-pl'}", None) == ("pl", "dataset card")
    code, results = eval_cli(f"hf:{tmp_path / 'hub-pl'}", tmp_path / "out")
    assert code == 0 and results["language_source"] == "dataset card" and results["dataset"]["language"] == "pl"
