"""One KEY=VALUE option parser and one list parser for every command; a paid run's budget lives in translate/."""

from __future__ import annotations

import pytest

from beirx.cli import build_parser, main
from beirx.errors import BeirxError


def _args(*argv: str):
    return build_parser(list(argv)).parse_args(list(argv))


@pytest.mark.parametrize("command,flag,dest", [
    (["translate", "--dataset", "d", "--lang", "es"], "--translator-option", "translator_option"),
    (["quality", "folder", "--lang", "es"], "--roundtrip-option", "roundtrip_option"),
])
def test_every_command_reads_backend_options_alike(command, flag, dest):
    args = _args(*command, flag, "beam_size=2", flag, " mark_unknown = TRUE ", flag, "lowercase=false",
                 flag, "url=http://h/?a=b")
    assert dict(getattr(args, dest)) == {"beam_size": "2", "mark_unknown": True, "lowercase": False,
                                         "url": "http://h/?a=b"}


@pytest.mark.parametrize("command,flag", [(["translate", "--dataset", "d", "--lang", "es"], "--translator-option"),
                                          (["quality", "folder", "--lang", "es"], "--roundtrip-option")])
@pytest.mark.parametrize("bad", ["beam_size", "=2"])
def test_a_malformed_option_is_a_usage_error(command, flag, bad, capsys):
    assert main([*command, flag, bad]) == 2
    assert f"argument {flag}: expected KEY=VALUE, got {bad!r}" in capsys.readouterr().err


def test_every_command_reads_lists_alike():
    translate = _args("translate", "--dataset", "d", "--lang", "es", "--fields", " queries,,corpus ",
                      "--verbatim-kinds", "url, email")
    assert translate.fields == ["queries", "corpus"] and translate.verbatim_kinds == ["url", "email"]
    assert _args("translate", "--dataset", "d", "--lang", "es").fields == ["corpus", "queries"]
    assert _args("quality", "folder", "--fields", "corpus").fields == ["corpus"]
    assert _args("report", "r.json", "--language-metrics", "NDCG@10, MRR@10,").language_metrics == ["NDCG@10",
                                                                                                   "MRR@10"]


def test_budget_of_a_paid_run():
    from beirx.translate.backends.apertium import ApertiumTranslator
    from beirx.translate.backends.deepl import DeepLTranslator
    from beirx.translate.planning.budget import Budget, is_paid, require_cap

    deepl = DeepLTranslator("en", "pl")
    assert is_paid(deepl) and not is_paid(ApertiumTranslator)
    plan = {"cost": deepl.estimate_cost(400_000)}  # USD 25 per million characters: 10.00
    budget = Budget.of(plan, deepl, 12.5)
    assert (budget.characters, budget.estimated_usd, budget.max_cost_usd) == (400_000, 10.0, 12.5)
    assert budget.summary().startswith("estimate: 400,000 characters to send to deepl = USD 10.00 at list price (")
    budget.check()
    with pytest.raises(BeirxError, match=r"the estimate USD 10.00 exceeds --max-cost 9.99; nothing was sent"):
        Budget.of(plan, deepl, 9.99).check()
    with pytest.raises(BeirxError, match=r"deepl is a paid service: pass --max-cost USD to allow this run"):
        Budget.of(plan, deepl, None).check()
    with pytest.raises(BeirxError, match=r"pass --max-cost USD for each shard"):
        require_cap(deepl, None)
    require_cap(deepl, 1.0)


def test_a_paid_backend_is_ready_only_with_its_credential(monkeypatch):
    from beirx.translate.backends.deepl import DeepLTranslator

    for name in ("DEEPL_AUTH_KEY", "DEEPL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(BeirxError, match="no credential found; set the environment variable DEEPL_AUTH_KEY"):
        DeepLTranslator("en", "pl").check_ready()
    monkeypatch.setenv("DEEPL_AUTH_KEY", "k:fx")
    DeepLTranslator("en", "pl").check_ready()
