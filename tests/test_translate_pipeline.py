"""Translation pipeline: segmentation, verbatim tokens, dedup, memory, batching, reassembly, resume, output.

The backend here is a deterministic stand-in (word-reversing "translation") so every expected output can
be written down; real backends are tested in test_translate_backends_local.py and, end to end with
Apertium on real SciFact, in test_translate_pipeline_apertium.py.
"""

from __future__ import annotations

import json
import re
import sqlite3
from multiprocessing import get_context
from pathlib import Path

import pytest

from beirx.artifacts import TranslationManifest
from beirx.data.dataset import BeirDataset
from beirx.data.validate import validate_dataset
from beirx.errors import BeirxError
from beirx.translate.backends.base import Translator
from beirx.translate.pipeline import MANIFEST, dry_run, translate_dataset
from beirx.translate.planning.placeholders import Verbatim, unmask
from beirx.translate.planning.segment import split_long, split_sentences
from beirx.translate.translation_memory import TranslationMemory
from conftest import write_beir


class Reverser(Translator):
    """Reverses the word order: a "translation" whose result is known, that keeps ``⟦i⟧`` tokens."""

    name = "reverser"
    max_batch_size = 3
    keeps_placeholders = True

    def __init__(self, src="en", tgt="xx", model=None, *, limit=None, drop_placeholders=False, fail_after=None):
        super().__init__(src, tgt, model)
        self.calls: list[list[str]] = []
        self.limit, self.drop, self.fail_after = limit, drop_placeholders, fail_after

    def describe(self):
        return {"backend": self.name, "model": "words-reversed", "revision": "1", "drop": self.drop}

    def max_segment_tokens(self):
        return self.limit

    def translate_batch(self, segments):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt  # as a Ctrl-C or a crash in the middle of a run
        self.calls.append(list(segments))
        out = [" ".join(reversed(s.split())) for s in segments]
        return [re.sub(r"⟦\d+⟧", "", o) for o in out] if self.drop else out


def rev(text: str) -> str:
    return " ".join(reversed(text.split()))


CORPUS = [
    {"_id": "d1", "title": "Cats and mice", "text": "Cats hunt mice at night.  Dr. Smith saw it. Mice hide."},
    {"_id": "d2", "title": "", "text": "Mice hide.\nSee https://example.org/cats. Cats hunt mice at night."},
    {"_id": "d3", "title": "Empty text", "text": ""},
    {"_id": "10", "title": "Numbers", "text": "In 2005. 42 (17)"},
]
QUERIES = [{"_id": "q1", "text": "do cats hunt mice"}, {"_id": "q2", "text": "Mice hide."},
           {"_id": "q3", "text": ""}]


@pytest.fixture
def source(tmp_path) -> BeirDataset:
    root = write_beir(tmp_path / "src", CORPUS, QUERIES, {"test": [("q1", "d1", 1), ("q2", "d2", 2)],
                                                         "dev": [("q3", "10", 1)]})
    return BeirDataset(root, name="tiny")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- segmentation -------------------------------------------------------------------------------------

def test_sentences_keep_every_character_and_respect_abbreviations():
    text = "Dr. Smith et al. (2005) found it.  The cat weighs 3.5 kg! Really? Yes.\nJ. Doe agreed e.g. here. In 2005. 30 died."
    pieces = split_sentences(text, "en")
    assert "".join(p for p, _ in pieces) == text
    assert [p for p, seg in pieces if seg] == [
        "Dr. Smith et al. (2005) found it.", "The cat weighs 3.5 kg!", "Really?", "Yes.",
        "J. Doe agreed e.g. here.", "In 2005.", "30 died."]
    assert [p for p, seg in pieces if not seg] == ["  ", " ", " ", "\n", " ", " "]


def test_sentences_language_aware_and_edge_cases():
    assert [p for p, s in split_sentences("Np. kot. To jest pies. Ala ma ok. 5 kotów.", "pl") if s] == \
        ["Np. kot.", "To jest pies.", "Ala ma ok. 5 kotów."]
    assert split_sentences("", "en") == []
    assert split_sentences("  \n ", "en") == [("  \n ", False)]
    assert split_sentences("中文句子。第二句。", "zh") == [("中文句子。", True), ("第二句。", True)]


def test_split_long_never_loses_text_and_respects_the_limit():
    words = lambda s: len(s.split()) + 1  # noqa: E731 - one special token, like an EOS
    sentence = "alpha beta gamma, delta epsilon zeta eta theta; iota kappa lambda mu nu xi omicron pi rho"
    pieces = split_long(sentence, 5, words)
    assert "".join(p for p, _ in pieces) == sentence
    assert all(words(p) <= 5 for p, seg in pieces if seg)
    assert split_long("x" * 40, 8, len) == [("x" * 5, True)] * 8  # one huge token: cut between characters
    assert split_long("short one", 5, words) == [("short one", True)]


# -- verbatim tokens -----------------------------------------------------------------------------------

def test_placeholders_mask_and_restore():
    v = Verbatim(("url", "email", "number", "code"))
    text = "See https://en.wikipedia.org/wiki/Foo_(bar)). Mail a.b@x.org: p53 and IL-6 rose 3.5-fold in 2nd run."
    masked, tokens = v.mask(text)
    assert masked == "See ⟦0⟧). Mail ⟦1⟧: ⟦2⟧ and ⟦3⟧ rose ⟦4⟧-fold in 2nd run."
    assert tokens == ("https://en.wikipedia.org/wiki/Foo_(bar)", "a.b@x.org", "p53", "IL-6", "3.5")
    assert unmask(masked, tokens) == text
    assert unmask("⟦1⟧ ⟦0⟧ ⟦2⟧ ⟦3⟧ ⟦4⟧", tokens) == "a.b@x.org https://en.wikipedia.org/wiki/Foo_(bar) p53 IL-6 3.5"
    assert unmask("⟦0⟧ ⟦0⟧ ⟦1⟧ ⟦2⟧ ⟦3⟧", tokens) is None  # repeated and missing: detected
    assert Verbatim(("url",)).split_around("Go to www.x.org now") == \
        [("Go to", True), (" ", False), ("www.x.org", False), (" ", False), ("now", True)]


# -- the pipeline --------------------------------------------------------------------------------------

def test_translates_dedups_batches_and_reassembles(source, tmp_path):
    tr = Reverser()
    out = tmp_path / "out"
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        manifest = translate_dataset(source, out, tr, tm, progress=False)
    docs = read_jsonl(out / "corpus.jsonl")
    assert [d["_id"] for d in docs] == ["d1", "d2", "d3", "10"]
    assert docs[0] == {"_id": "d1", "title": "mice and Cats",
                       "text": f"{rev('Cats hunt mice at night.')}  {rev('Dr. Smith saw it.')} hide. Mice"}
    # line break kept; the URL sentence is masked as "See ⟦0⟧." and the URL restored verbatim
    assert docs[1]["text"] == "hide. Mice\nhttps://example.org/cats. See night. at mice hunt Cats"
    assert docs[2] == {"_id": "d3", "title": "text Empty", "text": ""}
    assert docs[3] == {"_id": "10", "title": "Numbers", "text": "2005. In 42 (17)"}  # "42 (17)": no letter, copied
    queries = read_jsonl(out / "queries.jsonl")
    assert queries == [{"_id": "q1", "text": "mice hunt cats do"}, {"_id": "q2", "text": "hide. Mice"},
                       {"_id": "q3", "text": ""}]
    sent = [s for call in tr.calls for s in call]
    assert len(sent) == len(set(sent))  # each distinct segment translated once across the whole dataset
    assert "Mice hide." in sent and "See ⟦0⟧." in sent and "42 (17)" not in sent
    assert all(len(call) <= Reverser.max_batch_size for call in tr.calls)
    assert [len(s) for s in sent] == sorted(len(s) for s in sent)  # length-sorted batches
    assert (out / "qrels" / "test.tsv").read_bytes() == (source.root / "qrels" / "test.tsv").read_bytes()
    assert (out / "qrels" / "dev.tsv").read_bytes() == (source.root / "qrels" / "dev.tsv").read_bytes()
    assert validate_dataset(out, against=source.root).ok
    counts = manifest.counts
    assert counts["segments_unique"] == len(sent) and counts["translated"] == len(sent)
    assert counts["from_memory"] == 0 and counts["segments_total"] > counts["segments_unique"]
    assert manifest.source.checksum == source.checksum() and manifest.family == source.name
    assert manifest.backend == "reverser" and manifest.versions["beirx"]
    assert TranslationManifest.load(out / MANIFEST) == manifest


def test_rerun_is_served_from_memory_with_identical_bytes(source, tmp_path):
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        translate_dataset(source, tmp_path / "a", Reverser(), tm, progress=False)
        again = Reverser()
        manifest = translate_dataset(source, tmp_path / "b", again, tm, progress=False)
    assert again.calls == []
    assert manifest.counts["translated"] == 0
    assert manifest.counts["from_memory"] == manifest.counts["segments_unique"]
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_memory_is_keyed_by_system(source, tmp_path):
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        translate_dataset(source, tmp_path / "a", Reverser(), tm, progress=False)
        other = Reverser(tgt="yy")  # another language pair: nothing may be reused
        assert translate_dataset(source, tmp_path / "b", other, tm, progress=False).counts["from_memory"] == 0


def test_interrupted_run_resumes_without_retranslating(source, tmp_path):
    with TranslationMemory(tmp_path / "full.sqlite") as tm:
        translate_dataset(source, tmp_path / "full", Reverser(), tm, progress=False)
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        with pytest.raises(KeyboardInterrupt):
            translate_dataset(source, tmp_path / "out", Reverser(fail_after=2), tm, progress=False)
        assert not (tmp_path / "out" / "corpus.jsonl").exists()  # nothing written before all is translated
        done = tm.count()
        assert done == 2 * Reverser.max_batch_size
        resumed = Reverser()
        manifest = translate_dataset(source, tmp_path / "out", resumed, tm, progress=False)
    assert manifest.counts["from_memory"] == done
    assert sum(len(c) for c in resumed.calls) == manifest.counts["segments_unique"] - done
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "full" / name).read_bytes()


def test_lost_placeholders_fall_back_to_splitting_around_tokens(source, tmp_path):
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        manifest = translate_dataset(source, tmp_path / "out", Reverser(drop_placeholders=True), tm, progress=False)
    d2 = read_jsonl(tmp_path / "out" / "corpus.jsonl")[1]
    assert "https://example.org/cats" in d2["text"] and d2["text"].startswith("hide. Mice\nSee https://example.org/cats.")
    assert read_jsonl(tmp_path / "out" / "corpus.jsonl")[3]["text"] == "In 2005. 42 (17)"
    assert manifest.counts["placeholder_fallbacks"] == 2


def test_long_sentences_are_split_to_the_model_limit(tmp_path):
    long = " ".join(f"w{i}" for i in range(23)) + "."
    root = write_beir(tmp_path / "src", [{"_id": "d", "title": "", "text": long}], [{"_id": "q", "text": "x y"}],
                      {"test": [("q", "d", 1)]})
    tr = Reverser(limit=5)
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        manifest = translate_dataset(BeirDataset(root), tmp_path / "out", tr, tm, progress=False, verbatim="off")
    sent = [s for call in tr.calls for s in call]
    assert all(tr.count_tokens(s) <= 5 for s in sent)
    text = read_jsonl(tmp_path / "out" / "corpus.jsonl")[0]["text"]
    assert sorted(text.split()) == sorted(long.split())  # every word kept: nothing truncated
    assert manifest.counts["split_long"] == 1


def test_fields_and_limit(source, tmp_path):
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        manifest = translate_dataset(source, tmp_path / "q", Reverser(), tm, fields=["queries"], progress=False)
        assert (tmp_path / "q" / "corpus.jsonl").read_bytes() == (source.root / "corpus.jsonl").read_bytes()
        assert manifest.untranslated_fields == ["corpus"]
        translate_dataset(source, tmp_path / "l", Reverser(), tm, limit=2, progress=False)
        assert [d["_id"] for d in read_jsonl(tmp_path / "l" / "corpus.jsonl")] == ["d1", "d2"]
        with pytest.raises(BeirxError, match="fields"):
            translate_dataset(source, tmp_path / "x", Reverser(), tm, fields=["titles"], progress=False)
        with pytest.raises(BeirxError, match="source dataset"):
            translate_dataset(source, source.root, Reverser(), tm, progress=False)


def test_dry_run_counts_what_is_left(source, tmp_path):
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        before = dry_run(source, Reverser(), tm)
        translate_dataset(source, tmp_path / "out", Reverser(), tm, fields=["queries"], progress=False)
        after = dry_run(source, Reverser(), tm)
    assert before["from_memory"] == 0 and before["to_translate"] == before["segments_unique"]
    assert after["from_memory"] == 2 and after["to_translate"] == before["to_translate"] - 2


# -- the memory under concurrency ----------------------------------------------------------------------

def _writer(path: str, worker: int, rounds: int) -> None:
    with TranslationMemory(path) as tm:
        system = tm.register({"backend": "t", "model": "m", "revision": "r"}, "en", "xx")
        for r in range(rounds):
            # overlapping batches: both workers insert segments 0..; INSERT OR IGNORE keeps the first
            tm.add(system, [(f"seg {r * 10 + i}", f"w{worker}") for i in range(10)])
            tm.lookup(system, [f"seg {i}" for i in range(r * 10)])


def test_two_processes_share_one_memory(tmp_path):
    path = str(tmp_path / "tm.sqlite")
    ctx = get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 40)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0] == 400
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# -- leases: runs sharing a memory never translate the same batch ----------------------------------------

class SlowLoggingReverser(Reverser):
    """A Reverser that takes its time and appends each finished batch to a shared log (one JSON line)."""

    def __init__(self, log_path, delay=0.05):
        super().__init__()
        self.log_path, self.delay = log_path, delay

    def translate_batch(self, segments):
        import time

        time.sleep(self.delay)
        out = super().translate_batch(segments)
        with open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(segments) + "\n")
        return out


def _run_logged(root: str, out: str, memory: str, log_path: str) -> None:
    with TranslationMemory(memory) as tm:
        translate_dataset(BeirDataset(root), out, SlowLoggingReverser(log_path), tm, batch_size=1, progress=False)


def test_two_concurrent_runs_translate_each_segment_once(source, tmp_path):
    log_path, memory = tmp_path / "calls.jsonl", str(tmp_path / "tm.sqlite")
    ctx = get_context("spawn")
    procs = [ctx.Process(target=_run_logged, args=(str(source.root), str(tmp_path / f"out{i}"), memory, str(log_path)))
             for i in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    sent = [s for line in log_path.read_text(encoding="utf-8").splitlines() for s in json.loads(line)]
    with TranslationMemory(memory) as tm:
        assert len(sent) == len(set(sent)) == tm.count()  # every unique segment translated exactly once
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "out1" / name).read_bytes() == (tmp_path / "out2" / name).read_bytes()


def _claim_and_die(memory: str, segments: list[str]) -> None:
    import os

    from beirx.translate.execution.shards import batch_key

    with TranslationMemory(memory) as tm:
        system = tm.register(Reverser().describe(), "en", "xx")
        assert tm.claim(system, batch_key(segments), segments)[0] == "claimed"
    os._exit(0)  # dies holding the lease


def test_a_dead_holders_lease_is_taken_over(source, tmp_path):
    memory = str(tmp_path / "tm.sqlite")
    with TranslationMemory(memory) as tm:
        first = translate_dataset(source, tmp_path / "ref", Reverser(), tm, progress=False)
    tr = Reverser()
    with TranslationMemory(tmp_path / "probe.sqlite") as tm:
        translate_dataset(source, tmp_path / "probe", tr, tm, progress=False)
    batch = tr.calls[0]  # the first batch a run plans
    fresh = str(tmp_path / "fresh.sqlite")
    proc = get_context("spawn").Process(target=_claim_and_die, args=(fresh, batch))
    proc.start()
    proc.join(60)
    with sqlite3.connect(fresh) as conn:
        assert conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 1
    again = Reverser()
    with TranslationMemory(fresh, lease_seconds=3600) as tm:  # not expired: the holder's PID is gone
        manifest = translate_dataset(source, tmp_path / "out", again, tm, progress=False)
        assert tm._conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
    assert again.calls[0] == batch and manifest.counts["translated"] == first.counts["translated"]
    assert (tmp_path / "out" / "corpus.jsonl").read_bytes() == (tmp_path / "ref" / "corpus.jsonl").read_bytes()


def test_a_live_holders_batch_is_left_to_it(source, tmp_path, monkeypatch):
    """A batch leased by a live holder is skipped, and picked up from the memory once the holder commits it."""
    import threading

    from beirx.translate.execution import driver as batches
    from beirx.translate.execution.shards import batch_key

    monkeypatch.setattr(batches, "POLL_SECONDS", 0.05)
    probe = Reverser()
    with TranslationMemory(tmp_path / "probe.sqlite") as tm:
        translate_dataset(source, tmp_path / "probe", probe, tm, progress=False)
    batch = probe.calls[1]
    memory = tmp_path / "tm.sqlite"
    other = TranslationMemory(memory)  # another holder (as another process would be)
    system = other.register(Reverser().describe(), "en", "xx")
    assert other.claim(system, batch_key(batch), batch)[0] == "claimed"

    def commit():  # the other holder finishes its batch (its own connection: SQLite's are per thread)
        with TranslationMemory(memory) as same:
            same.holder = other.holder
            same.add(system, [(s, rev(s)) for s in batch], lease=batch_key(batch))

    timer = threading.Timer(0.5, commit)
    timer.start()
    tr = Reverser()
    with TranslationMemory(memory) as tm:
        manifest = translate_dataset(source, tmp_path / "out", tr, tm, progress=False)
    timer.join()
    other.close()
    sent = [s for call in tr.calls for s in call]
    assert not set(sent) & set(batch)  # the other holder's batch was never translated here
    assert manifest.counts["from_memory"] == len(batch)
    assert manifest.counts["translated"] + len(batch) == manifest.counts["segments_unique"]
    assert (tmp_path / "out" / "corpus.jsonl").read_bytes() == (tmp_path / "probe" / "corpus.jsonl").read_bytes()


# -- shards and executors: arguments and errors --------------------------------------------------------

def test_shard_arguments_and_memory_names(tmp_path):
    from beirx.translate.execution.shards import Shard, batch_key, shard_count, shard_of

    assert Shard.parse(" 2/3 ") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"
    for bad in ("0/3", "4/3", "2", "a/b", "1/0"):
        with pytest.raises(BeirxError, match="--shard expects I/N"):
            Shard.parse(bad)
    assert Shard(2, 3).memory_path(tmp_path / "tm.sqlite") == tmp_path / "tm.shard-2-of-3.sqlite"
    keys = [batch_key([f"segment {i}"]) for i in range(300)]
    owners = [shard_of(k, 3) for k in keys]
    assert set(owners) == {1, 2, 3} and all(Shard(o, 3).owns(k) for k, o in zip(keys, owners))
    with pytest.raises(BeirxError, match="no shard memories"):
        shard_count(tmp_path / "tm.sqlite")
    (tmp_path / "tm.shard-1-of-3.sqlite").touch()
    assert shard_count(tmp_path / "tm.sqlite") == 3
    (tmp_path / "tm.shard-1-of-2.sqlite").touch()
    with pytest.raises(BeirxError, match="--assemble N"):
        shard_count(tmp_path / "tm.sqlite")


def test_ray_executor_without_ray_names_the_extra(monkeypatch):
    import sys

    from beirx.translate.execution.executors import make_executor

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(BeirxError, match=r"pip install 'beirx\[ray\]'"):
        make_executor("ray", Reverser(), Reverser)
