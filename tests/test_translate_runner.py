"""The translation runner: one typed request in, one result out, the same path ``beirx translate`` takes."""

from __future__ import annotations

import json

import pytest

from beirx.cli import main
from beirx.errors import BeirxError
from beirx.translate.backends import TRANSLATORS
from beirx.translate.runner import TranslateRequest, run_translation


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(TRANSLATORS._entries, "toy", "toy_translator:ToyTranslator")


def request(dataset, tmp_path, **more) -> TranslateRequest:
    return TranslateRequest(**{"dataset": str(dataset), "lang": "es", "translator": "toy", "options": {"prefix": "~"},
                               "memory": tmp_path / "tm.sqlite", "quality": False, "progress": False, **more})


def test_a_request_runs_to_a_dataset_a_dry_run_or_a_shard(toy, tiny_dataset, tmp_path):
    planned = run_translation(request(tiny_dataset, tmp_path, dry_run=True))
    assert (planned.manifest, planned.shard) == (None, None)
    assert planned.dry_run["to_translate"] == planned.dry_run["segments_unique"] > 0  # nothing in the memory yet

    shard = run_translation(request(tiny_dataset, tmp_path, shard="1/2")).shard
    assert shard["shard"] == "1/2" and shard["memory"] == str(tmp_path / "tm.shard-1-of-2.sqlite")

    done = run_translation(request(tiny_dataset, tmp_path, output=tmp_path / "out"))
    assert (done.dry_run, done.shard, done.output, done.quality_report) == (None, None, tmp_path / "out", None)
    assert done.manifest.translator == {"backend": "toy", "prefix": "~"}
    assert done.manifest.counts["translated"] == planned.dry_run["to_translate"]
    first = json.loads((tmp_path / "out" / "queries.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first == {"_id": "q1", "text": "~WHICH ANIMALS HUNT MICE"}


def test_requests_that_cannot_run_fail_before_any_work(toy, tiny_dataset, tmp_path):
    with pytest.raises(BeirxError, match=r"^--lang and --src are both 'en'$"):
        run_translation(request(tiny_dataset, tmp_path, src="en", lang="en"))
    with pytest.raises(BeirxError, match=r"^--shard and --assemble are two steps: run the shards first, then "
                                         r"--assemble$"):
        run_translation(request(tiny_dataset, tmp_path, shard="1/2", assemble=2))
    with pytest.raises(BeirxError, match=r"^--batch needs --translator openai and the local executor$"):
        run_translation(request(tiny_dataset, tmp_path, batch=True, output=tmp_path / "out"))
    assert not (tmp_path / "tm.sqlite").exists() and not (tmp_path / "out").exists()


def test_the_command_reports_a_refused_request_in_one_line(toy, tiny_dataset, tmp_path, capsys):
    assert main(["translate", "--dataset", str(tiny_dataset), "--lang", "es", "--translator", "toy", "--batch",
                 "--memory", str(tmp_path / "tm.sqlite"), "--output", str(tmp_path / "out"), "--no-quality"]) == 2
    assert capsys.readouterr().err == ("beirx translate: error: --batch needs --translator openai and the local "
                                       "executor\n")


def test_replicas_share_an_endpoints_budgets_others_keep_their_options():
    from beirx.translate.backends.openai import OpenAITranslator
    from toy_translator import ToyTranslator

    assert ToyTranslator("en", "es").for_replicas({"prefix": "~"}, workers=3) == {"prefix": "~"}
    assert OpenAITranslator.supports_batch_api and not ToyTranslator.supports_batch_api
    assert not TRANSLATORS.get("hf-llm").supports_batch_api  # a local model has no Batch API


def test_llm_flags_become_options_only_when_given():
    from beirx.cli import build_parser
    from beirx.cli.translate import request_from_args

    def options(*flags):
        argv = ["translate", "--dataset", "d", "--lang", "es", "--translator", "openai", *flags]
        return request_from_args(build_parser(argv).parse_args(argv))

    assert options().options == {}
    request = options("--base-url", "http://h/v1", "--retries", "0", "--glossary", "g.tsv", "--batch")
    assert request.options == {"base_url": "http://h/v1", "retries": 0, "glossary": "g.tsv"}
    assert (request.batch, request.batch_poll) == (True, None)  # the runner's (None: the Batch executor's default)
