"""The ``hf`` and ``ctranslate2`` backends through the pipeline, offline, with a tiny Marian model.

The model is built once per session (random weights, a SentencePiece vocabulary trained on the fly,
``save_pretrained`` into a temp folder) and loaded through the same ``from_pretrained`` path as a Hub id.
Its translations are noise; these tests check the plumbing: order, batching, limits, IDs, memory hits,
reassembly, resume, conversion cache. Output length is fixed (min = max new tokens) to keep them fast.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from beirx.data.dataset import BeirDataset
from beirx.data.validate import validate_dataset
from beirx.errors import BeirxError
from beirx.translate.pipeline import translate_dataset
from beirx.translate.planning.segment import split_long, split_sentences
from beirx.translate.translation_memory import TranslationMemory
from conftest import write_beir
from extras import needs

needs("transformers", "neural")
needs("sentencepiece", "translate")

WORDS = ("cat dog mouse the a hunts sleeps at night small big animal ocean whale bird sings and of in gene "
         "protein cell cells study results patients").split()
LIMIT = 24  # the tiny model's input limit in tokens: long sentences must be split
FIXED = {"beam_size": 1, "max_new_tokens": 4, "min_new_tokens": 4}


@pytest.fixture(scope="session")
def tiny_marian(tmp_path_factory) -> Path:
    from tiny_models import build_tiny_marian

    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + rng.choice(".!? ") for _ in range(1500)]
    # large initial weights: outputs depend on the input
    return build_tiny_marian(tmp_path_factory.mktemp("tiny_marian"), lines, vocab_size=48, max_length=LIMIT, d_model=16,
                             encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                             decoder_ffn_dim=32, forced_eos_token_id=0, init_std=1.0)


LONG = "the big whale sings in the ocean at night and the small bird sings in the cell of the study."
CORPUS = [
    {"_id": "d1", "title": "cats and dogs", "text": "the cat hunts a mouse. the dog sleeps at night."},
    {"_id": "d2", "title": "", "text": f"the dog sleeps at night.\n{LONG}"},
    {"_id": "d3", "title": "whale", "text": ""},
]
QUERIES = [{"_id": "q1", "text": "cat hunts mouse"}, {"_id": "q2", "text": "the dog sleeps at night."}]


@pytest.fixture
def dataset(tmp_path) -> BeirDataset:
    return BeirDataset(write_beir(tmp_path / "src", CORPUS, QUERIES, {"test": [("q1", "d1", 1), ("q2", "d2", 1)]}))


@pytest.fixture(scope="session")
def hf_translator(tiny_marian):
    from beirx.translate.backends.hf import HFTranslator

    return HFTranslator("en", "es", str(tiny_marian), **FIXED)


class Recording:
    """Wraps a translator: records batches, optionally stops (as a kill would) after ``stop_after`` batches."""

    def __init__(self, inner, stop_after=None):
        self.inner, self.stop_after, self.calls = inner, stop_after, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def translate_batch(self, segments):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt
        self.calls.append(list(segments))
        return self.inner.translate_batch(segments)


def expected_text(text: str, translator) -> str:
    """The oracle: sentences, split to the limit, each translated alone, joined with the original gaps."""
    out = []
    for piece, is_segment in split_sentences(text, "en"):
        if not is_segment:
            out.append(piece)
            continue
        for sub, sub_is_segment in split_long(piece, translator.max_segment_tokens(), translator.count_tokens):
            out.append(translator.translate_batch([sub])[0] if sub_is_segment else sub)
    return "".join(out)


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_hf_translates_in_order_within_the_limit_and_reuses_memory(hf_translator, dataset, tmp_path):
    rec = Recording(hf_translator)
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        manifest = translate_dataset(dataset, tmp_path / "out", rec, tm, batch_size=3, progress=False)
        again = Recording(hf_translator)
        rerun = translate_dataset(dataset, tmp_path / "again", again, tm, batch_size=3, progress=False)
    assert validate_dataset(tmp_path / "out", against=dataset.root).ok
    sent = [s for call in rec.calls for s in call]
    assert len(sent) == len(set(sent)) and all(len(c) <= 3 for c in rec.calls)
    assert max(hf_translator.count_tokens(s) for s in sent) <= LIMIT < hf_translator.count_tokens(LONG)
    assert manifest.counts["split_long"] == 1
    docs = read(tmp_path / "out" / "corpus.jsonl")
    assert [d["_id"] for d in docs] == ["d1", "d2", "d3"]
    for doc, src in zip(docs, CORPUS):
        assert doc["text"] == expected_text(src["text"], hf_translator)
        assert doc["title"] == expected_text(src["title"], hf_translator)
    assert docs[2]["text"] == "" and docs[1]["title"] == ""
    assert [q["text"] for q in read(tmp_path / "out" / "queries.jsonl")] == \
        [expected_text(q["text"], hf_translator) for q in QUERIES]
    assert again.calls == [] and rerun.counts["translated"] == 0
    assert (tmp_path / "again" / "corpus.jsonl").read_bytes() == (tmp_path / "out" / "corpus.jsonl").read_bytes()
    description = manifest.translator
    assert description["backend"] == "hf" and description["revision"].startswith("sha256:")
    assert description["family"] == "single-pair" and description["beam_size"] == 1


def test_hf_resume_after_interruption_is_byte_identical(hf_translator, dataset, tmp_path):
    with TranslationMemory(tmp_path / "full.sqlite") as tm:
        translate_dataset(dataset, tmp_path / "full", hf_translator, tm, batch_size=2, progress=False)
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        with pytest.raises(KeyboardInterrupt):
            translate_dataset(dataset, tmp_path / "out", Recording(hf_translator, stop_after=2), tm, batch_size=2,
                              progress=False)
        assert tm.count() == 4
        resumed = Recording(hf_translator)
        counts = translate_dataset(dataset, tmp_path / "out", resumed, tm, batch_size=2, progress=False).counts
    assert counts["from_memory"] == 4 and sum(map(len, resumed.calls)) == counts["segments_unique"] - 4
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "full" / name).read_bytes()


def test_hf_refuses_to_truncate(hf_translator):
    with pytest.raises(BeirxError, match="limit"):
        hf_translator.translate_batch([LONG])


def test_ctranslate2_converts_into_the_cache_once_and_translates(tiny_marian, dataset, tmp_path, beirx_home):
    needs("ctranslate2", "translate")
    from beirx.translate.backends.ctranslate2 import CT2Translator

    opts = {"beam_size": 1, "max_decoding_length": 4, "min_decoding_length": 4}
    ct2 = CT2Translator("en", "es", str(tiny_marian), **opts)
    converted = list((beirx_home / "ct2").iterdir())
    assert len(converted) == 1 and (converted[0] / "model.bin").is_file()
    stamp = (converted[0] / "model.bin").stat().st_mtime_ns
    rec = Recording(ct2)
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        manifest = translate_dataset(dataset, tmp_path / "out", rec, tm, batch_size=4, progress=False)
        again = CT2Translator("en", "es", str(tiny_marian), **opts)  # cached conversion, memory hits
        assert (converted[0] / "model.bin").stat().st_mtime_ns == stamp
        assert translate_dataset(dataset, tmp_path / "again", again, tm, progress=False).counts["translated"] == 0
    assert validate_dataset(tmp_path / "out", against=dataset.root).ok
    assert max(ct2.count_tokens(s) for call in rec.calls for s in call) <= LIMIT
    docs = read(tmp_path / "out" / "corpus.jsonl")
    assert [d["text"] for d in docs] == [expected_text(d["text"], ct2) for d in CORPUS]
    assert manifest.translator["quantization"] == "int8" and manifest.translator["compute_type"] == "int8"
    assert manifest.revision == CT2Translator("en", "es", str(tiny_marian), **opts).describe()["revision"]
    direct = CT2Translator("en", "es", str(converted[0]), **opts)  # an already converted folder
    assert direct.translate_batch(["the cat hunts."]) == ct2.translate_batch(["the cat hunts."])


class StubTokenizer:
    def __init__(self, tokens):
        self.vocab = {t: i for i, t in enumerate(tokens)}
        self.src_lang = None
        self.model_max_length = 512

    def get_vocab(self):
        return self.vocab

    def convert_tokens_to_ids(self, token):
        return self.vocab[token]


def test_language_conventions_of_each_model_family():
    from beirx.translate.backends.seq2seq import ModelTokenizer

    nllb = ModelTokenizer(StubTokenizer(["</s>", "eng_Latn", "pol_Latn", "spa_Latn"]), "en", "pl",
                          src_code="eng_Latn", tgt_code="pol_Latn")
    assert (nllb.family, nllb.prefix, nllb.target_token, nllb.target_token_id) == ("nllb", "", "pol_Latn", 2)
    assert nllb.tokenizer.src_lang == "eng_Latn"
    m2m = ModelTokenizer(StubTokenizer(["</s>", "__en__", "__pl__"]), "en", "pl")
    assert (m2m.family, m2m.target_token, m2m.tokenizer.src_lang) == ("m2m100", "__pl__", "en")
    marian = ModelTokenizer(StubTokenizer(["</s>", ">>es<<", ">>fr<<"]), "en", "es")
    assert (marian.family, marian.prefix, marian.target_token) == ("marian-multi", ">>es<< ", None)
    marian3 = ModelTokenizer(StubTokenizer(["</s>", ">>pol<<", ">>ces<<"]), "en", "pl", tgt_code="pol")
    assert marian3.prefix == ">>pol<< "
    with pytest.raises(BeirxError, match="M2M100"):
        ModelTokenizer(StubTokenizer(["__en__", "__de__"]), "en", "xx")
    assert ModelTokenizer(StubTokenizer(["</s>", "a"]), "en", "es").family == "single-pair"


def test_legacy_revision_is_the_snapshot_commit_or_a_short_content_hash(tmp_path):
    from beirx.translate.backends.seq2seq import legacy_revision

    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "models--org--m" / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    assert legacy_revision(str(snapshot)) == commit
    local = tmp_path / "local"
    local.mkdir()
    (local / "config.json").write_text("{}")
    first = legacy_revision(str(local))
    (local / "model.safetensors").write_bytes(b"weights")
    assert len(first) == len("sha256:") + 16 and legacy_revision(str(local)) != first
    assert legacy_revision("Helsinki-NLP/opus-mt-en-es") is None  # Hub ids kept their commit


class OldBeirx:
    """``translator`` as beirx described it before the revision rule was shared (what old memories hold)."""

    def __init__(self, translator, revision):
        self.inner, self.revision = translator, revision

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def describe(self):
        return {**self.inner.describe(), "revision": self.revision}

    def earlier_descriptions(self):
        return []


def test_revision_is_shared_and_memories_of_the_old_rule_are_adopted(hf_translator, tiny_marian, dataset, tmp_path):
    from beirx.models.files import resolve_model
    from beirx.translate.backends.seq2seq import legacy_revision

    revision = hf_translator.describe()["revision"]
    assert revision == resolve_model(str(tiny_marian)).revision  # what a results document records
    old = legacy_revision(str(tiny_marian))
    assert old != revision and hf_translator.earlier_descriptions() == [{**hf_translator.describe(), "revision": old}]
    with TranslationMemory(tmp_path / "tm.sqlite") as tm:
        before = translate_dataset(dataset, tmp_path / "old", OldBeirx(hf_translator, old), tm, progress=False)
        rec = Recording(hf_translator)
        after = translate_dataset(dataset, tmp_path / "new", rec, tm, progress=False)
        assert tm.count() == 2 * before.counts["translated"]  # copied once, under the new key
        again = translate_dataset(dataset, tmp_path / "again", hf_translator, tm, progress=False)
        assert tm.count() == 2 * before.counts["translated"]  # adopted only at the first registration
    assert rec.calls == [] and after.counts["translated"] == 0 and again.counts["translated"] == 0
    assert after.revision == revision and before.revision == old
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes()


def test_a_missing_apertium_pair_names_a_package_debian_has_or_says_there_is_none(tmp_path, monkeypatch):
    """The install line names a package apt-cache lists (the current name, not the transitional one); for a
    pair Debian lacks (en->pl) it says so instead of naming a package that does not exist."""
    from beirx.translate.backends.apertium import find_mode

    fake = tmp_path / "bin" / "apt-cache"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nprintf '%s\\n' 'apertium-en-es - Transitional dummy package for apertium-eng-spa' "
                    "'apertium-eng-spa - Apertium translation data for the English-Spanish pair' "
                    "'apertium-pol-szl - Apertium translation data for the Polish-Silesian pair'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(BeirxError) as spanish:
        find_mode("en", "es", ("eng-cat", "en-gl"))
    assert "installed: eng-cat, en-gl); on Debian/Ubuntu: sudo apt-get install apertium-eng-spa, or name" \
        in str(spanish.value)
    with pytest.raises(BeirxError) as polish:
        find_mode("en", "pl", ("eng-spa",))
    assert "Debian/Ubuntu have no Apertium package for en->pl" in str(polish.value)
    assert "apertium-eng-pol" not in str(polish.value) and "apt-get install" not in str(polish.value)
