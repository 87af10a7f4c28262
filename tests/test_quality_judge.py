"""The LLM judge through the shared LLM client: against the fake OpenAI-compatible server with a responder that
answers like a judge (valid, wrapped, malformed, refused), and once against the real llama.cpp server with Gemma
3 270M, a model too small to judge: its malformed answers must be retried, then recorded as missing."""

from __future__ import annotations

import json
import re

import pytest
from artifact_fixtures import row_flags, row_values
from conftest import translated_pair

from beirx.artifacts.quality import QualityReport, Verifies
from beirx.cli import main
from beirx.translate.quality.judge import LLMJudge
from beirx.translate.quality.mqm import Malformed, parse
from beirx.translate.quality.rule_checks import Checks
from beirx.translate.quality.run import run_quality

ENGLISH = ["Vitamin D deficiency is common in northern countries.", "Antibiotics do not work against viral infections.",
           "Smoking during pregnancy harms the baby.", "Regular exercise lowers the risk of heart disease.",
           "The library opens at nine in the morning."]
SPANISH = ["La deficiencia de vitamina D es común en los países del norte.",
           "Los antibióticos no funcionan contra las infecciones virales.", "Fumar durante el embarazo.",
           "El ejercicio regular reduce el riesgo de enfermedad cardíaca.", "La biblioteca abre a las nueve."]


def _pair(tmp_path):
    return translated_pair(tmp_path, ENGLISH, SPANISH)


def _translation(call) -> str:
    user = next(m["content"] for m in call.body["messages"] if m["role"] == "user")
    return re.search(r"<translation>\n(.*?)\n</translation>", user, re.S).group(1)


def judge_like(call) -> str:
    """q2 (a sentence dropped) gets a major omission and 40; q4 ('de la mañana' dropped) a minor one and 85, in a
    code fence after some prose; q3 answers prose first and JSON only when asked again; q1 never answers JSON."""
    text, retry = _translation(call), len(call.body["messages"]) > 2
    if text.startswith("Fumar"):
        return json.dumps({"errors": [{"span": "daña al bebé", "category": "accuracy/omission", "severity": "major"},
                                      {"span": "Fumar", "category": "style", "severity": "minor"}], "score": 40})
    if text.startswith("La biblioteca"):
        return 'Here is my annotation:\n```json\n{"errors": [{"span": "de la mañana", "category": ' \
               '"accuracy/omission", "severity": "minor"}], "score": 85}\n```'
    if text.startswith("El ejercicio") and not retry:
        return "The translation looks accurate and fluent to me."
    if text.startswith("Los antibióticos"):
        return '{"errors": [], "score": 140}' if not retry else "I cannot give a number."
    return '{"errors": [], "score": 95}'


def test_judge_answers_become_scores_flags_and_missing_rows(tmp_path, fake_llm_factory):
    source, translated = _pair(tmp_path)
    server = fake_llm_factory(responder=judge_like)
    judge = LLMJudge(server.model, base_url=server.url, sample=None, retries=1)
    report = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es", methods=[Checks(), judge],
                         fields=("queries",), show_progress=False)
    entry = report.fields["queries"]
    # q2: major (5) + minor (1) -> -6; q4: minor -> -1; q0, q3 (on the retry): no error -> 0
    assert row_values(report, "queries", "judge_mqm") == {"q0": 0.0, "q1": None, "q2": -6.0, "q3": 0.0, "q4": -1.0}
    assert row_values(report, "queries", "judge_da") == {"q0": 95.0, "q1": None, "q2": 40.0, "q3": 95.0, "q4": 85.0}
    flagged = row_flags(report, "queries")
    assert flagged["q2"] == ["judge_major_error", "judge_low_score"]
    assert "q4" not in flagged or "judge_major_error" not in flagged["q4"]
    outcome = entry.methods["judge"]
    assert (outcome.scored, outcome.missing) == (4, 1)
    summary = outcome.summary
    assert (summary["judged"], summary["malformed"], summary["request_failures"], summary["answers_asked_again"]) == \
        (4, 1, 0, 2)
    assert summary["malformed_examples"] == [{"id": "q1", "reason": "no JSON object with \"errors\" and \"score\" in "
                                                                   "the answer", "answer": "I cannot give a number."}]
    assert summary["usage"]["requests"] == 7 == len(server.calls)  # 5 rows + q1 and q3 asked again
    retry = next(c for c in server.calls if len(c.body["messages"]) > 2 and "antibióticos" in c.body["messages"][1]["content"])
    assert retry.body["messages"][2] == {"role": "assistant", "content": '{"errors": [], "score": 140}'}
    assert "(\"score\" 140 is outside 0-100)" in retry.body["messages"][3]["content"]
    assert report.scores["judge_mqm"].scale == [-25.0, 0.0] and entry.scores["judge_da"].n == 4
    described = report.methods["judge"].description
    assert described["model"] == "fake-llm" and described["prompt_version"] == "beirx-judge-1"
    assert described["prompt_sha256"].startswith("sha256:") and "key" not in json.dumps(described).lower()
    flagged = {r["id"]: r for r in map(json.loads, (tmp_path / "q" / "flagged.jsonl").read_text().splitlines())}
    assert flagged["q2"]["judge_mqm"] == -6.0 and flagged["q2"]["details"]["judge_errors"][0]["span"] == "daña al bebé"
    assert "judge_da" in (tmp_path / "q" / "quality.md").read_text()
    # quality.json records that the judge's rows verify the translation, and each method's card figures (a dataset
    # card reads them there, knowing no method)
    written = QualityReport.load(tmp_path / "q" / "quality.json")
    assert written.verifying() == {"judge": Verifies(note="an LLM judge scored {n} translations",
                                                     label="LLM-judged items")}
    assert written.methods["checks"].verifies is None and written.fields["queries"].methods["judge"].figures == {}
    share = entry.methods["checks"].summary["language"]["target_share"]
    assert written.fields["queries"].methods["checks"].figures == {"in target language": share} == Checks.card_figures(entry)

    # A rerun asks nothing already judged (the cache), only the row that had no usable answer.
    again = run_quality(source, translated, tmp_path / "q2", src_lang="en", tgt_lang="es", show_progress=False,
                        methods=[LLMJudge(server.model, base_url=server.url, sample=None, retries=1)],
                        fields=("queries",))
    assert len(server.calls) == 7 + 2
    assert all(row_values(again, "queries", s) == row_values(report, "queries", s) for s in ("judge_mqm", "judge_da"))


def test_refused_requests_are_missing_and_the_cli_runs_the_judge(tmp_path, fake_llm_factory, capsys):
    source, translated = _pair(tmp_path)
    server = fake_llm_factory(responder=lambda call: '{"errors": [], "score": 90}')
    server.faults = lambda call: "400" if "vitamina" in _translation(call) else None
    assert main(["quality", str(translated.root), "--source", str(source.root), "--lang", "es", "--no-similarity",
                 "--no-progress", "--judge", "openai", "--judge-model", server.model, "--judge-base-url", server.url,
                 "--judge-sample", "all", "--output", str(tmp_path / "q")]) == 0
    report = QualityReport.load(tmp_path / "q" / "quality.json")
    for field, first in (("queries", "q0"), ("corpus", "d0")):
        rows = row_values(report, field, "judge_da")
        assert rows[first] is None and [v for k, v in rows.items() if k != first] == [90.0] * 4
        summary = report.fields[field].methods["judge"].summary
        assert summary["request_failures"] == 1 and "maximum context length" in summary["failure_examples"][0]["error"]
    assert "judge_da 90.0000" in capsys.readouterr().out
    assert main(["quality", str(translated.root), "--source", str(source.root), "--lang", "es", "--judge", "openai",
                 "--no-progress"]) == 2
    assert "--judge openai needs --judge-model" in capsys.readouterr().err


def test_parse_accepts_judgements_only():
    judged = parse('Sure.\n{"errors": [{"span": "x", "category": "terminology", "severity": "Critical"}], '
                   '"score": "12"} thanks')
    assert (judged.mqm, judged.score, judged.worst_severity()) == (-25.0, 12.0, "critical")
    six_majors = '{"errors": [' + ", ".join(['{"severity": "major"}'] * 6) + '], "score": 3}'
    assert parse(six_majors).mqm == -25.0  # capped
    for bad, reason in [("", "empty"), ("{}", "no JSON object"), ('{"errors": []}', "missing or not a number"), ('{"score": 70, "errors": {}}', "not a list"),
                        ('{"score": 70, "errors": [{"severity": "fatal"}]}', "severity 'fatal'"),
                        ('{"score": true}', "not a number"), ("no json here", "no JSON object")]:
        with pytest.raises(Malformed, match=reason):
            parse(bad)


def test_real_llama_cpp_judge_small_model(tmp_path, llama_server):
    """Gemma 3 270M cannot follow the judge prompt reliably: whatever it answers is either a valid judgement or,
    after one retry, a missing value; the run completes and says how many."""
    source, translated = _pair(tmp_path)
    judge = LLMJudge(llama_server.model, base_url=llama_server.url, sample=2, retries=1, max_tokens=32,
                     concurrency=1, timeout=600, use_cache=False)  # llama.cpp's server answers one at a time
    report = run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es", methods=[judge],
                         fields=("queries",), show_progress=False)
    entry = report.fields["queries"]
    summary = entry.methods["judge"].summary
    rows = row_values(report, "queries", "judge_da")
    assert len(rows) == 2 and summary["judged"] + summary["malformed"] + summary["request_failures"] == 2
    assert sum(v is None for v in rows.values()) == entry.methods["judge"].missing == 2 - summary["judged"]
    assert all(v is None or 0 <= v <= 100 for v in rows.values())
    # every malformed row was asked twice; the meter counted every request the server answered
    assert summary["usage"]["requests"] == 2 + summary["answers_asked_again"]
    assert summary["answers_asked_again"] >= summary["malformed"]
    for example in summary["malformed_examples"]:
        with pytest.raises(Malformed):
            parse(example["answer"])


def test_a_fault_in_the_judge_itself_stops_the_run_and_is_never_recorded_as_missing_rows(tmp_path, fake_llm_factory,
                                                                                         monkeypatch):
    """Only the LLM's own errors (a refused request, no answer) make a row missing; a fault in beirx's code (here the
    answer check) propagates, so a bug cannot pass for request failures."""
    from beirx.translate.quality import judge as judge_module

    def broken(self, unit, reply):
        raise ZeroDivisionError("a bug in the check")

    monkeypatch.setattr(judge_module._Rows, "check", broken)
    source, translated = _pair(tmp_path)
    server = fake_llm_factory(responder=judge_like)
    judge = LLMJudge(server.model, base_url=server.url, sample=None, retries=1, use_cache=False)
    with pytest.raises(ZeroDivisionError, match="a bug in the check"):
        run_quality(source, translated, tmp_path / "q", src_lang="en", tgt_lang="es", methods=[judge],
                    fields=("queries",), show_progress=False)
