"""LLM translation (``--translator openai``) through the fake OpenAI-compatible server (real HTTP, the real
``openai`` client, real Apertium behind it): document units, validation, retries, fallback, flags, resume,
secrets, budget; and the units/validation rules on their own."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beirx.artifacts import TranslationManifest
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.models.llm import BudgetExceeded, EndpointDown, Reply, Usage
from beirx.models.llm.engine import Unit as EngineUnit
from beirx.models.llm.engine import UnitEngine
from beirx.translate.backends.openai import OpenAITranslator
from beirx.translate.llm.glossary import Glossary
from beirx.translate.llm.validator import Validator
from beirx.translate.pipeline import dry_run, translate_dataset
from beirx.translate.planning.document_units import DOCUMENT, QUERY
from beirx.translate.planning.text_plan import Planner, Slice, Unit, render, units
from beirx.translate.translation_memory import TranslationMemory
from conftest import REPO, write_beir
from fake_openai import FakeOpenAI, on_source

KEY = "sk-llm-test-SECRET-4e1d"
CORPUS = [
    {"_id": "d1", "title": "Vaccines", "text": "Vaccines reduce the risk of severe disease. The study included 120 "
                                               "patients."},
    {"_id": "d2", "title": "", "text": "Dogs are loyal animals and good companions."},
    {"_id": "d3", "title": "Whales", "text": "Whales are the largest animals in the ocean.\n\nThey eat krill."},
    {"_id": "d4", "title": "Cats", "text": "Cats hunt mice at night."},
    {"_id": "d5", "title": "Birds", "text": "Birds can fly and sing in the morning."},
    {"_id": "d6", "title": "Sleep", "text": "Children who sleep less than 8 hours have a higher risk of obesity."},
]
QUERIES = [
    {"_id": "q1", "text": "do vaccines reduce the risk of severe disease?"},
    {"_id": "q2", "text": "which animals hunt mice at night"},
    {"_id": "q3", "text": "how long do children sleep"},
    {"_id": "q4", "text": "the largest animals in the ocean"},
]
QRELS = {"test": [("q1", "d1", 1), ("q2", "d4", 1), ("q4", "d3", 2)], "dev": [("q3", "d6", 1)]}
FALLBACK = "apertium"


@pytest.fixture
def source(tmp_path) -> BeirDataset:
    return BeirDataset(write_beir(tmp_path / "src", CORPUS, QUERIES, QRELS), name="tiny")


def unit_texts() -> list[str]:
    """Every text the fake server may be asked to translate here: units, their lines, a split unit's halves."""
    docs = ["\n".join(x for x in [d["title"], *d["text"].split("\n")] if x.strip()) for d in CORPUS]
    lines = [line for text in docs for line in text.split("\n")]
    halves = ["Whales are the largest animals in the ocean.\nThey eat krill."]
    return docs + lines + [q["text"] for q in QUERIES] + halves


@pytest.fixture
def fake_llm(fake_llm):
    """The fake server with every Apertium answer computed beforehand, so it answers at once."""
    fake_llm.translate.warm(unit_texts())
    return fake_llm


@pytest.fixture
def fake_llm_factory(fake_llm_factory, apertium_en_es):
    apertium_en_es.warm(unit_texts())
    return fake_llm_factory


def translator(server: FakeOpenAI, **options) -> OpenAITranslator:
    options.setdefault("backoff", 0.01)
    return OpenAITranslator("en", "es", server.model, base_url=server.url, **options)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run(source, out: Path, tr, memory: Path | None = None):
    with TranslationMemory(memory or out.parent / f"{out.name}.sqlite") as tm:
        return translate_dataset(source, out, tr, tm, progress=False)


# -- units -----------------------------------------------------------------------------------------------------
def words(text: str) -> int:
    return len(text.split())


def test_document_units_keep_records_whole_and_split_only_at_paragraphs_then_sentences():
    whole = Planner("en", "off", (), None, words, unit_tokens=100)
    title, text = whole.plan_fields(["A title", "First paragraph. Second sentence.\n\n  Last one.\n2005\n"], DOCUMENT)
    (unit,) = {p.unit for p in title + text if isinstance(p, Slice)}
    assert unit == Unit("A title\nFirst paragraph. Second sentence.\nLast one.",
                        "⟪document⟫ A title\nFirst paragraph. Second sentence.\nLast one.")
    assert [list(units(title)), list(units(text))] == [[unit], []]  # one unit, counted once for the record
    translation = {unit.masked: "UN TÍTULO\nPRIMER PÁRRAFO. SEGUNDA FRASE.\nÚLTIMO."}
    assert render(title, translation, {}) == "UN TÍTULO"
    assert render(text, translation, {}) == "PRIMER PÁRRAFO. SEGUNDA FRASE.\n\n  ÚLTIMO.\n2005\n"

    tight = Planner("en", "off", (), None, words, unit_tokens=6)
    title, text = tight.plan_fields(["A title", "One two three four. Five six seven.\nEight nine."], DOCUMENT)
    assert [u.source for u in (*units(title), *units(text))] == [  # 2 + 7 words > 6: the title goes alone; the
        "A title", "One two three four.", "Five six seven.", "Eight nine."]  # 7-word paragraph splits at sentences
    translation = {u.masked: u.source.upper() for u in (*units(title), *units(text))}
    assert (render(title, translation, {}), render(text, translation, {})) == (
        "A TITLE", "ONE TWO THREE FOUR. FIVE SIX SEVEN.\nEIGHT NINE.")
    long_paragraph = tight.plan_fields(["One two three four five. Six seven eight. Nine ten."], QUERY)[0]
    assert [u.masked for u in units(long_paragraph)] == ["⟪query⟫ One two three four five.",
                                                          "⟪query⟫ Six seven eight. Nine ten."]
    assert [p for p in long_paragraph if isinstance(p, str)] == [" "]
    one_line = Planner("en", "off", (), None, words, unit_tokens=100, one_line_units=True)
    title, text = one_line.plan_fields(["T", "a b.\nc d."], DOCUMENT)
    assert [u.masked for u in (*units(title), *units(text))] == ["⟪document⟫ T", "⟪document⟫ a b.", "⟪document⟫ c d."]


# -- validation ------------------------------------------------------------------------------------------------
class _Validation:
    """The translation check as the unit engine's task (the engine adds truncation and the API's refusal)."""

    def __init__(self, validator: Validator):
        self.validator = validator

    def check(self, unit: EngineUnit, reply: Reply):
        return self.validator.check(unit.kind, unit.text, reply)


def verdict(source: str, answer: str, kind: str = DOCUMENT, finish: str = "stop", **kw):
    engine = UnitEngine(_Validation(Validator("en", "es", "Spanish", **kw)), retries=0)
    return engine.verdict(EngineUnit(kind, source), Reply(answer, finish, Usage()))


SOURCE = "Vaccines reduce the risk of severe disease in 2019 patients."
GOOD = "Las vacunas reducen el riesgo de enfermedad grave en 2019 pacientes."


@pytest.mark.parametrize("answer, reasons, stripped", [
    (GOOD, [], []),
    ("Sure! Here is the translation:\n\n" + GOOD, [], ["preamble"]),
    (f'Spanish: "{GOOD}"\n\nNote: the number was kept.', [], ["label", "note", "quotes"]),
    (f"<text>\n{GOOD}\n</text>", [], ["tags"]),
    (SOURCE, ["untranslated"], []),
    ("", ["empty"], []),
    ("I'm sorry, but I can't help with that request.", ["refusal", "wrong_language", "lost_numbers"], []),
    (GOOD.replace("2019 ", ""), ["lost_numbers"], []),
    ("The translation is: " + GOOD, ["meta_commentary"], []),
    ("La traducción es: " + GOOD, ["meta_commentary"], []),
])
def test_validation_strips_wrappers_and_names_what_is_wrong(answer, reasons, stripped):
    result = verdict(SOURCE, answer)
    assert (result.reasons, result.stripped) == (reasons, stripped)
    if not reasons:
        assert result.value == GOOD


def test_validation_of_length_lines_queries_and_glossary(tmp_path):
    assert verdict(SOURCE, GOOD[:30], finish="length").reasons == ["truncated", "lost_numbers"]
    assert verdict("Title\nBody text here.", "Título\n\nCuerpo del texto.").value == "Título\nCuerpo del texto."
    assert verdict("Title\nBody text here.", "Título Cuerpo del texto.").reasons == ["line_count"]
    answer = ("Sí. Los estudios lo confirman en la mayoría de los casos, porque los mecanismos descritos en la "
              "literatura explican este efecto de forma consistente.")
    assert verdict("vaccines reduce severe disease", answer, QUERY).reasons == ["answered"]
    assert verdict("do vaccines reduce disease?", "las vacunas reducen la enfermedad", QUERY).reasons == \
        ["question_lost"]
    assert verdict("do vaccines reduce disease?", "¿las vacunas reducen la enfermedad?", QUERY).accepted
    (tmp_path / "g.tsv").write_text("# terms\nsevere disease\tenfermedad grave\nIL-6\n", encoding="utf-8")
    glossary = Glossary.load(tmp_path / "g.tsv")
    assert glossary.entries == (("severe disease", "enfermedad grave"), ("IL-6", None))
    assert verdict(SOURCE, GOOD.replace("enfermedad grave", "enfermedad severa"), glossary=glossary).reasons == \
        ["glossary"]
    assert verdict("IL-6 levels rise in severe disease here.", "Los niveles de IL-6 suben en la enfermedad grave aquí.",
                   glossary=glossary).accepted
    (tmp_path / "bad.tsv").write_text("a\tb\tc\n", encoding="utf-8")
    with pytest.raises(BeirxError, match=r"bad.tsv:1: expected 'term TAB translation'"):
        Glossary.load(tmp_path / "bad.tsv")


# -- the pipeline through the fake server ------------------------------------------------------------------
FAULT_PLAN = {  # source text (part of the unit) -> fault per attempt
    "do vaccines reduce the risk": ["429", "answer"],  # rate limited, then answered: retried, then translated
    "Dogs are loyal": ["500", "preamble"],  # server error, then a leaked preamble (stripped, accepted)
    "which animals hunt mice": ["hang", "empty", "refusal"],  # timeout, then empty, then a refusal: 3 answers
    "Whales are the largest": ["length"],  # truncated: the unit is split and each half translated
    "Children who sleep": ["drop_number"],  # "8" dropped: retried
    "Birds can fly": ["echo", "echo", "echo"],  # English every time: falls back / flagged
    "how long do children sleep": ["answer", "answer", "answer"],  # answered every time
}


def test_every_fault_ends_in_a_correct_fallback_or_flagged_row(fake_llm, source, tmp_path):
    fake_llm.faults = on_source(FAULT_PLAN)
    fake_llm.hang_seconds = 4.0  # answers are precomputed: any other request is answered well within the timeout
    manifest = run(source, tmp_path / "out", translator(fake_llm, timeout=2.0, fallback=FALLBACK, concurrency=4))
    out = tmp_path / "out"
    corpus = {r["_id"]: r for r in rows(out / "corpus.jsonl")}
    queries = {r["_id"]: r["text"] for r in rows(out / "queries.jsonl")}
    assert list(corpus) == [d["_id"] for d in CORPUS] and list(queries) == [q["_id"] for q in QUERIES]
    for split in ("test", "dev"):
        assert (out / "qrels" / f"{split}.tsv").read_bytes() == (source.root / "qrels" / f"{split}.tsv").read_bytes()
    apertium = fake_llm.translate
    assert queries["q1"] == apertium("do vaccines reduce the risk of severe disease?")  # after 429 + answer
    assert corpus["d2"]["text"] == apertium("Dogs are loyal animals and good companions.")  # preamble stripped
    assert queries["q2"] == apertium("which animals hunt mice at night")  # after hang, empty, refusal
    whale = apertium("Whales\nWhales are the largest animals in the ocean.").split("\n")
    assert corpus["d3"]["title"] == whale[0] and corpus["d3"]["text"].startswith(whale[1] + "\n\n")
    assert "8" in corpus["d6"]["text"]
    from beirx.translate.backends.apertium import ApertiumTranslator

    fallback = ApertiumTranslator("en", "es").translate_batch(["Birds", "Birds can fly and sing in the morning."])
    assert (corpus["d5"]["title"], corpus["d5"]["text"]) == tuple(fallback)
    run_counts = manifest.llm["this_run"]
    # d2 counts as accepted: a 500 is not a rejected answer
    assert run_counts["units"] == {"accepted": 4, "retried": 4, "fallback": 2, "flagged": 0}
    assert run_counts["transport_retries"] == 3
    assert run_counts["transport_failures"] == {"rate_limited": 1, "server_error": 1, "timeout": 1}
    assert run_counts["wrappers_stripped"] == {"preamble": 1}
    assert {"answered", "empty", "refusal", "truncated", "lost_numbers", "untranslated"} <= set(run_counts["reasons"])
    flags = rows(out / "translation_flags.jsonl")
    assert [(f["field"], f["id"], f["outcome"]) for f in flags] == [("corpus", "d5", "fallback"),
                                                                    ("queries", "q3", "fallback")]
    assert flags[1]["units"][0]["reasons"] == ["answered"] and flags[1]["units"][0]["attempts"] == 3
    assert manifest.llm["output"] == {
        "corpus": {"records_fallback": 1, "records_flagged": 0, "reasons": {"untranslated": 1}},
        "queries": {"records_fallback": 1, "records_flagged": 0, "reasons": {"answered": 1}}}
    assert TranslationManifest.load(out / "translation.json").llm == manifest.llm


def test_without_a_fallback_rejected_units_are_written_flagged(fake_llm, source, tmp_path):
    fake_llm.faults = on_source({"Birds can fly": ["echo"] * 2, "Cats hunt": ["refusal"] * 2,
                                 "how long do children": ["answer"] * 2})
    manifest = run(source, tmp_path / "out", translator(fake_llm, retries=1))
    flags = {f["id"]: f for f in rows(tmp_path / "out" / "translation_flags.jsonl")}
    assert {i: (f["outcome"], f["reasons"]) for i, f in flags.items()} == {
        "d4": ("flagged", ["line_count", "refusal", "wrong_language"]), "d5": ("flagged", ["untranslated"]),
        "q3": ("flagged", ["answered"])}
    assert [u["written"] for f in flags.values() for u in f["units"]] == ["source", "llm", "llm"]
    corpus = {r["_id"]: r for r in rows(tmp_path / "out" / "corpus.jsonl")}
    assert corpus["d4"]["text"] == "Cats hunt mice at night."  # a refusal is never written: the source stays
    assert "sorry" not in (tmp_path / "out" / "corpus.jsonl").read_text()
    assert manifest.llm["this_run"]["units"]["flagged"] == 3
    # a rerun serves everything from the memory and still reports the same flags
    again = run(source, tmp_path / "again", translator(fake_llm, retries=1), tmp_path / "out.sqlite")
    assert again.counts["from_memory"] == again.counts["segments_unique"]
    assert rows(tmp_path / "again" / "translation_flags.jsonl") == list(flags.values())
    assert again.llm["output"] == manifest.llm["output"]


def test_memory_keys_units_by_prompt_and_model(fake_llm, source, tmp_path):
    base = translator(fake_llm)
    prompts = tmp_path / "prompts.toml"
    prompts.write_text('version = "mine-1"\n[chat]\nquery = "Translate the query:\\n<text>\\n{text}\\n</text>"\n')
    other_prompt = translator(fake_llm, prompt_file=str(prompts))
    assert base.describe()["prompt_version"] == "beirx-translate-1"
    assert other_prompt.describe()["prompt_sha256"] != base.describe()["prompt_sha256"]
    run(source, tmp_path / "a", base, tmp_path / "tm.sqlite")
    sent = len(fake_llm.calls)
    run(source, tmp_path / "b", translator(fake_llm), tmp_path / "tm.sqlite")
    assert len(fake_llm.calls) == sent  # same text, prompt, model, params: all from memory
    run(source, tmp_path / "c", other_prompt, tmp_path / "tm.sqlite")
    assert len(fake_llm.calls) == sent + 10  # a new prompt file: every unit sent again
    user = fake_llm.calls[-1].body["messages"][1]["content"]
    assert user.startswith("Translate the query:") or user.startswith("Translate this document")


def test_completions_api_sends_few_shot_one_line_units(fake_llm, source, tmp_path):
    manifest = run(source, tmp_path / "out", translator(fake_llm, api="completions"))
    prompts = [c.body["prompt"] for c in fake_llm.calls]
    assert all(p.startswith("Translations from English to Spanish.\n\nEnglish: The cat sleeps on the warm roof.\n"
                            "Spanish: El gato duerme en el tejado caliente.\n\n") for p in prompts)
    assert all(c.body["stop"] == ["\n"] for c in fake_llm.calls)
    assert len(prompts) == 12 + 4  # titles and paragraphs are separate one-line units (12), and 4 queries
    corpus = {r["_id"]: r for r in rows(tmp_path / "out" / "corpus.jsonl")}
    assert corpus["d3"]["text"] == "\n\n".join(fake_llm.translate(p) for p in CORPUS[2]["text"].split("\n\n"))
    assert manifest.llm["this_run"]["units"]["accepted"] == 16


def test_glossary_goes_into_the_prompt_of_units_that_use_it(fake_llm, source, tmp_path):
    glossary = tmp_path / "glossary.tsv"
    glossary.write_text("severe disease\tenfermedad grave\nkrill\n", encoding="utf-8")
    run(source, tmp_path / "out", translator(fake_llm, glossary=str(glossary)))
    systems: dict[str, str] = {}
    for call in fake_llm.calls:  # the first request of each unit
        systems.setdefault(call.source, call.body["messages"][0]["content"])
    assert systems["do vaccines reduce the risk of severe disease?"].endswith(
        "Use this glossary (term => translation; \"keep\" means leave the term untranslated):\n"
        "- severe disease => enfermedad grave")
    assert "glossary" not in systems["which animals hunt mice at night"]
    assert "- krill => keep" in systems["Whales\nWhales are the largest animals in the ocean.\nThey eat krill."]


def test_dry_run_estimates_tokens_and_cost_close_to_the_usage_counted(fake_llm, source, tmp_path):
    tr = translator(fake_llm, price_in="2.0", price_out="8.0")
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        estimate = dry_run(source, tr, tm)["llm"]
    manifest = run(source, tmp_path / "out", tr, tmp_path / "tm.sqlite")
    counted = manifest.llm["this_run"]
    assert estimate["requests"] == counted["requests"] == 10
    assert estimate["token_counting"] == "approximation: characters / 4"
    assert abs(estimate["prompt_tokens"] - counted["prompt_tokens"]) / counted["prompt_tokens"] < 0.10
    assert abs(estimate["completion_tokens"] - counted["completion_tokens"]) / counted["completion_tokens"] < 0.35
    assert counted["cost_usd"] == round((counted["prompt_tokens"] * 2 + counted["completion_tokens"] * 8) / 1e6, 6)


def test_max_cost_stops_the_run_before_it_is_exceeded_and_keeps_the_work(fake_llm, source, tmp_path):
    tr = translator(fake_llm, price_in="1000", price_out="1000", max_cost="0.9", concurrency=1)
    with pytest.raises(BudgetExceeded, match="stopping before --max-cost USD 0.9000 would be exceeded"):
        run(source, tmp_path / "out", tr)
    assert tr.llm.meter.spent <= 0.9 and not (tmp_path / "out" / "corpus.jsonl").exists()
    with TranslationMemory(tmp_path / "out.sqlite") as tm:
        assert 0 < tm.count() == tr.llm.meter.requests < 10  # every answer paid for is committed


def test_a_server_that_goes_down_stops_the_run_with_a_clear_error_then_resumes(fake_llm_factory, source, tmp_path):
    server = fake_llm_factory(latency=0.05)
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    server.faults = lambda call: setattr(server, "down", True) if call.n == 4 else None  # dies after 4 answers
    tr = translator(server, concurrency=1, breaker_failures=3, breaker_seconds=0)
    with pytest.raises(EndpointDown, match="is not answering: 3 failed attempts in a row.*rerun the same command"):
        run(source, tmp_path / "out", tr)
    with TranslationMemory(tmp_path / "out.sqlite") as tm:
        done = tm.count()
    assert done == 4
    server.stop()
    back = fake_llm_factory(port=port)
    manifest = run(source, tmp_path / "out", translator(back))
    assert manifest.counts["from_memory"] == done and len(back.calls) == 10 - done


def test_the_key_never_reaches_a_file_or_a_log(fake_llm, source, tmp_path, monkeypatch, capfd):
    from beirx.cli import main

    fake_llm.require_key = KEY
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    code = main(["-vv", "translate", "--dataset", str(source.root), "--lang", "es", "--translator", "openai",
                 "--model", fake_llm.model, "--base-url", fake_llm.url, "--output", str(tmp_path / "out"),
                 "--memory", str(tmp_path / "tm.sqlite"), "--no-quality"])
    logs = capfd.readouterr()
    assert code == 0 and "LLM units this run: 10 accepted" in logs.out
    assert fake_llm.seen_headers and all(h["authorization"] == f"Bearer {KEY}" for h in fake_llm.seen_headers)
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(written) >= 5  # the dataset's files, the manifest, the memory
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in logs.out + logs.err
    manifest = TranslationManifest.load(tmp_path / "out" / "translation.json")
    assert manifest.llm["endpoint"] == {"base_url": fake_llm.url, "model": fake_llm.model}


def test_sigkill_mid_run_resumes_to_identical_bytes_without_resending_committed_units(fake_llm_factory, source,
                                                                                      tmp_path):
    server = fake_llm_factory(latency=0.3)
    run(source, tmp_path / "full", translator(server))  # the uninterrupted run, for the bytes
    server.calls.clear()
    memory = tmp_path / "tm.sqlite"
    command = [sys.executable, "-m", "beirx", "-q", "translate", "--dataset", str(source.root), "--lang", "es",
               "--translator", "openai", "--model", server.model, "--base-url", server.url, "--concurrency", "2",
               "--no-quality", "--output", str(tmp_path / "out"), "--memory", str(memory)]
    killed = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _committed(memory) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    committed = _committed_sources(memory)
    assert 4 <= len(committed) < 10 and not (tmp_path / "out" / "corpus.jsonl").exists()
    sent_before = [c.source for c in server.calls]
    server.calls.clear()
    run(source, tmp_path / "out", translator(server), memory)  # the same command again
    sent_after = [c.source for c in server.calls]
    assert not set(sent_after) & committed  # no committed unit is sent again
    assert len(sent_after) == len(set(sent_after)) == 10 - len(committed)
    assert len(set(sent_before) & set(sent_after)) <= 2  # at most the units in flight at the kill (--concurrency 2)
    for name in ("corpus.jsonl", "queries.jsonl", "translation_flags.jsonl", "qrels/test.tsv", "qrels/dev.tsv"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "full" / name).read_bytes()


def _committed(memory: Path) -> int:
    try:
        with sqlite3.connect(memory, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _committed_sources(memory: Path) -> set[str]:
    with sqlite3.connect(memory) as conn:
        return {s.split(" ", 1)[1] for (s,) in conn.execute("SELECT source FROM segments")}


def test_shards_and_ray_replicas_share_one_endpoint_budget(fake_llm, source, tmp_path):
    from beirx.translate.execution.shards import Shard
    from beirx.translate.pipeline import translate_shard

    tr = translator(fake_llm, concurrency=8, max_cost="3", price_in="1")
    assert tr.for_replicas({"concurrency": 8, "max_cost": 3.0}, workers=3) == {"concurrency": 2, "max_cost": 1.0}
    memory = tmp_path / "tm.sqlite"
    for index in (1, 2):
        shard = Shard(index, 2)
        with TranslationMemory(shard.memory_path(memory)) as tm:
            done = translate_shard(source, translator(fake_llm), tm, shard, progress=False, batch_size=3)
            assert 0 < done["llm"]["units"]["accepted"] == done["counts"]["translated"] < 10
    with TranslationMemory(memory) as tm:
        manifest = translate_dataset(source, tmp_path / "out", translator(fake_llm), tm, progress=False, assemble=2,
                                     batch_size=3)
    assert manifest.counts["translated"] == 0 and len(fake_llm.calls) == 10
    assert [r["_id"] for r in rows(tmp_path / "out" / "corpus.jsonl")] == [d["_id"] for d in CORPUS]


def test_a_checked_translation_crosses_processes_with_its_note_usage_and_wrappers():
    import pickle

    from beirx.translate.output.outcome import Checked

    sent = Checked("Hola.", {"outcome": "retried", "reasons": ["empty"], "attempts": 2, "written": "llm"},
                   (120, 9, 2), ("quotes",))
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):  # Ray replicas send their results pickled
        got = pickle.loads(pickle.dumps(sent, protocol))
        assert (type(got), got, got.note, got.usage, got.stripped) == \
            (Checked, "Hola.", {"outcome": "retried", "reasons": ["empty"], "attempts": 2, "written": "llm"},
             (120, 9, 2), ("quotes",))


def test_hf_llm_generates_in_process_in_batches_and_validates_the_same_way(tiny_causal_lm, source, tmp_path):
    from beirx.models.files import folder_checksum
    from beirx.translate.backends.hf_llm import HFLLMTranslator

    tr = HFLLMTranslator("en", "es", str(tiny_causal_lm), device="cpu", batch_size=4, retries=0)
    assert tr.describe()["revision"] == folder_checksum(tiny_causal_lm)
    assert tr.counter.method == "tokenizer of tiny-chat-lm"
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        manifest = translate_dataset(source, tmp_path / "out", tr, tm, progress=False, fields=("queries",))
    run_counts = manifest.llm["this_run"]
    # random weights answer noise, never ending their turn: each query is rejected (truncated) and written flagged
    assert run_counts["units"] == {"accepted": 0, "retried": 0, "fallback": 0, "flagged": 4}
    assert run_counts["requests"] == 4 and run_counts["reasons"]["truncated"] == 4
    assert run_counts["prompt_tokens"] > 0 and run_counts["completion_tokens"] > 0
    flags = rows(tmp_path / "out" / "translation_flags.jsonl")
    assert [(f["id"], f["units"][0]["written"]) for f in flags] == [(q["_id"], "source") for q in QUERIES]
    assert rows(tmp_path / "out" / "queries.jsonl") == QUERIES  # a truncated answer is never written


def test_batch_mode_validates_on_ingest_and_resumes_the_batch_in_flight_after_a_kill(fake_llm, source, tmp_path):
    fake_llm.faults = on_source({"Birds can fly": ["echo"]})  # rejected in round 1, sent again in round 2
    fake_llm.batch_polls = 10_000  # the first batch never finishes until the test says so
    command = [sys.executable, "-m", "beirx", "-q", "translate", "--dataset", str(source.root), "--lang", "es",
               "--translator", "openai", "--model", fake_llm.model, "--base-url", fake_llm.url, "--batch",
               "--batch-poll", "0.1", "--no-quality", "--output", str(tmp_path / "out"),
               "--memory", str(tmp_path / "tm.sqlite")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    killed = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = tmp_path / "batches"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any('"batch": "batch_1"' in p.read_text() for p in state.glob("*.json")):
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert len(fake_llm._batches) == 1 and len(fake_llm._files) == 1 and not fake_llm.calls  # submitted, not run
    fake_llm.batch_polls = 1
    from beirx.cli import main

    assert main(command[command.index("translate"):]) == 0  # the same command again
    assert len(fake_llm._batches) == 2  # the batch in flight was polled, not sent again; round 2: one unit
    assert [c.source for c in fake_llm.calls].count("Birds\nBirds can fly and sing in the morning.") == 2
    strict = fake_llm.calls[-1].body["messages"][0]["content"]
    assert "Your previous answer was rejected (untranslated)" in strict
    live = run(source, tmp_path / "live", translator(fake_llm))
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "live" / name).read_bytes()
    manifest = TranslationManifest.load(tmp_path / "out" / "translation.json")
    assert manifest.llm["this_run"]["units"] == {"accepted": 9, "retried": 1, "fallback": 0, "flagged": 0}
    assert manifest.llm["this_run"]["requests"] == 11 and live.llm["this_run"]["requests"] == 10


def test_batch_mode_splits_a_truncated_unit_as_a_live_run_does(fake_llm_factory, source, tmp_path):
    """A unit cut at max_tokens goes into the next round as its two halves (the one unit engine of the live path),
    never whole again with more tokens: a Batch run writes what a live run writes, byte for byte."""
    from beirx.cli import main

    plan = {"Whales are the largest": ["length"]}  # every new text holding it is cut once, then answered
    batch_server, live_server = fake_llm_factory(), fake_llm_factory()
    batch_server.faults = live_server.faults = on_source(plan)
    batch_server.batch_polls = 1
    assert main(["-q", "translate", "--dataset", str(source.root), "--lang", "es", "--translator", "openai",
                 "--model", batch_server.model, "--base-url", batch_server.url, "--batch", "--batch-poll", "0.01",
                 "--no-quality", "--no-progress", "--output", str(tmp_path / "out"),
                 "--memory", str(tmp_path / "tm.sqlite")]) == 0
    whale = [c for c in batch_server.calls if "Whales" in c.source or "krill" in c.source]
    assert [(c.source, c.attempt) for c in whale] == [
        ("Whales\nWhales are the largest animals in the ocean.\nThey eat krill.", 1),  # round 1: cut
        ("Whales", 1), ("Whales are the largest animals in the ocean.\nThey eat krill.", 1),  # round 2: halves, cut
        ("Whales are the largest animals in the ocean.", 1), ("They eat krill.", 1),  # round 3: cut (one sentence)
        ("Whales are the largest animals in the ocean.", 2)]  # round 4: twice the max_tokens, answered
    assert whale[5].body["max_tokens"] == 2 * whale[3].body["max_tokens"]
    assert len(batch_server._batches) == 4
    with translator(live_server) as tr:
        live = run(source, tmp_path / "live", tr)
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "live" / name).read_bytes()
    batch = TranslationManifest.load(tmp_path / "out" / "translation.json").llm["this_run"]
    assert batch["units"] == live.llm["this_run"]["units"] and batch["reasons"] == live.llm["this_run"]["reasons"]
    assert batch["reasons"]["resplit"] == 1 and batch["requests"] == live.llm["this_run"]["requests"]


def test_quality_report_lists_the_records_the_llm_did_not_translate_cleanly(fake_llm, source, tmp_path, e5_small):
    from beirx.artifacts.quality import QualityReport
    from beirx.translate.quality import run_quality

    fake_llm.faults = on_source({"Birds can fly": ["echo"] * 3})
    run(source, tmp_path / "out", translator(fake_llm, fallback=FALLBACK))
    translated = BeirDataset(tmp_path / "out", name="tiny", lang="es")
    report = run_quality(source, translated, encoder=str(e5_small), src_lang="en", tgt_lang="es",
                         fields=("corpus",), show_progress=False)
    assert report.fields["corpus"].flags["llm_fallback"] == 1
    flagged = rows(tmp_path / "out" / "quality" / "flagged.jsonl")
    (bird,) = [r for r in flagged if r["id"] == "d5"]
    assert "llm_fallback" in bird["reasons"] and bird["details"]["llm"] == {"outcome": "fallback",
                                                                              "reasons": ["untranslated"]}
    assert QualityReport.load(tmp_path / "out" / "quality" / "quality.json").fields["corpus"].flags == \
        report.fields["corpus"].flags
    legend = (tmp_path / "out" / "quality" / "quality.md").read_text()
    assert "`llm_fallback` (translation_flags): the LLM's answers were rejected" in legend
