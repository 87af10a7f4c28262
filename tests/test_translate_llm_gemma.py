"""End to end with a real server and a real (small, weak) model: llama.cpp serving Gemma 3 270M translates a
handful of real SciFact queries to Spanish with few-shot plain completions. The model is weak, so this is a
real test of the validation: every row written is a Spanish translation, a fallback or a flagged row."""

from __future__ import annotations

import json

from beirx.data.dataset import BeirDataset
from beirx.translate.backends.openai import OpenAITranslator
from beirx.translate.pipeline import translate_dataset
from beirx.translate.quality import langid
from beirx.translate.quality import rule_checks as checks
from beirx.translate.translation_memory import TranslationMemory
from conftest import write_beir

QUERIES = 4


def scifact_sample(scifact_dir, root):
    """The first test queries of SciFact with their judged documents and qrels (documents copied, not translated)."""
    rows = (scifact_dir / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    picked = list(dict.fromkeys(r.split("\t")[0] for r in rows))[:QUERIES]
    qrels = [r.split("\t") for r in rows if r.split("\t")[0] in picked]
    docs = {d for _, d, _ in qrels}
    queries = [q for q in map(json.loads, (scifact_dir / "queries.jsonl").open(encoding="utf-8")) if q["_id"] in picked]
    corpus = [d for d in map(json.loads, (scifact_dir / "corpus.jsonl").open(encoding="utf-8")) if d["_id"] in docs]
    return BeirDataset(write_beir(root, corpus, queries, {"test": [(q, d, int(s)) for q, d, s in qrels]}),
                       name="scifact"), queries


def test_gemma_on_llama_cpp_writes_only_spanish_fallbacks_or_flags(llama_server, scifact_dir, tmp_path):
    source, queries = scifact_sample(scifact_dir, tmp_path / "scifact")
    translator = OpenAITranslator("en", "es", llama_server.model, base_url=llama_server.url, api="completions",
                                  retries=1, fallback="apertium", concurrency=1, timeout=600)
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        manifest = translate_dataset(source, tmp_path / "out", translator, tm, progress=False, fields=("queries",))
    written = [json.loads(line) for line in (tmp_path / "out" / "queries.jsonl").open(encoding="utf-8")]
    assert [q["_id"] for q in written] == [q["_id"] for q in queries]
    assert (tmp_path / "out" / "qrels" / "test.tsv").read_bytes() == (source.root / "qrels" / "test.tsv").read_bytes()
    flags = {f["id"]: f for f in map(json.loads, (tmp_path / "out" / "translation_flags.jsonl").open())}
    for original, row in zip(queries, written):
        if row["_id"] in flags:  # fell back to Apertium, or flagged with its reasons
            assert flags[row["_id"]]["outcome"] in ("fallback", "flagged") and flags[row["_id"]]["reasons"]
            continue
        lang, probability = langid.identify(row["text"])  # accepted: not the English copied, not English
        assert checks.copy_reason(original["text"], row["text"]) is None, row
        assert not (lang == "en" and probability >= langid.MIN_PROBABILITY_SOURCE), row
    counts = manifest.llm["this_run"]
    assert sum(counts["units"].values()) == QUERIES and counts["requests"] >= QUERIES
    assert counts["prompt_tokens"] > 100 * QUERIES and counts["completion_tokens"] > 0
    print("gemma:", json.dumps(counts), json.dumps(manifest.llm["output"]))  # the figures for the report
