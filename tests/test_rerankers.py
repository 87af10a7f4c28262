"""Rerankers on tiny random-weight models built here (no network): scores equal a direct computation with
the same weights, reranking only reorders the first stage's candidates, caching and layouts behave."""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import string

import pytest

from extras import needs

torch = needs("torch", "neural")
transformers = needs("transformers", "neural")
needs("sentence_transformers", "neural")

from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.data.records import Doc, Query  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.evaluate.rerankers import RERANKERS  # noqa: E402
from beirx.evaluate.rerankers.colbert_checkpoint import read_checkpoint  # noqa: E402

QUERIES = [Query("q1", "which animals hunt mice"), Query("q2", "largest ocean animal"),
           Query("q3", "loyal companion dog, really loyal!")]
DOCS = [Doc("d1", "Cats are small domestic animals that hunt mice.", "Cats"),
        Doc("d2", "Dogs are loyal animals and good companions.", "Dogs"),
        Doc("d3", "Mice are small rodents; cats hunt them at night. " * 6, "Mice"),
        Doc("d4", "Whales are the largest animals in the ocean."),
        Doc("d5", "Birds can fly and sing.", "Birds")]
LONG_QUERY = Query("q9", "which small animals hunt mice at night " * 8)
WORDS = sorted({w for t in [q.text for q in QUERIES + [LONG_QUERY]] + [d.title + " " + d.text for d in DOCS]
                + ["whale largest unjudged query"] for w in re.findall(r"[a-z]+", t.lower())})
TINY_BERT = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                 max_position_embeddings=128)


def bert_tokenizer(markers: bool = True):
    vocab = ["[PAD]"] + (["[unused0]", "[unused1]"] if markers else []) + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += list(string.punctuation) + WORDS + ["##s"]
    return transformers.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})


def pairs_of(query, docs):
    return [(query, d) for d in docs]


# -- models ------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def cross_encoder_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tiny-cross-encoder"
    torch.manual_seed(1)
    tok = bert_tokenizer()
    model = transformers.BertForSequenceClassification(
        transformers.BertConfig(vocab_size=len(tok), num_labels=1, **TINY_BERT))
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def cross_encoder_2labels_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tiny-cross-encoder-2"
    torch.manual_seed(2)
    tok = bert_tokenizer()
    model = transformers.BertForSequenceClassification(
        transformers.BertConfig(vocab_size=len(tok), num_labels=2, **TINY_BERT))
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


T5_PIECES = ["<pad>", "</s>", "<unk>", "▁", "▁Query", "▁Document", "▁Relevant", ":", ".", ",", ";", "!",
             "▁true", "▁false", "▁yes", "▁no", "▁prawda", "▁fałsz"] + [f"▁{w}" for w in WORDS] + \
    list("abcdefghijklmnopqrstuvwxyzłABCDEFGHIJKLMNOPQRSTUVWXYZ")


@pytest.fixture(scope="session")
def t5_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tiny-t5"
    torch.manual_seed(3)
    tok = transformers.T5Tokenizer(vocab=[(p, 0.0 if i < 3 else -float(len(p) < 3) - 1.0)
                                          for i, p in enumerate(T5_PIECES)], extra_ids=0)
    config = transformers.T5Config(vocab_size=len(T5_PIECES), d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                   num_decoder_layers=1, num_heads=2, relative_attention_num_buckets=8,
                                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    transformers.T5ForConditionalGeneration(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


COLBERT_AI_META = {"query_maxlen": 8, "doc_maxlen": 12, "dim": 8, "similarity": "cosine", "mask_punctuation": True,
                   "attend_to_mask_tokens": False, "query_token_id": "[unused0]", "doc_token_id": "[unused1]"}


@pytest.fixture(scope="session")
def colbert_ai_dir(tmp_path_factory):
    """colbert-ai layout: BertModel weights under 'bert.' + 'linear.weight' in one file, artifact.metadata."""
    from safetensors.torch import save_file

    path = tmp_path_factory.mktemp("models") / "tiny-colbert-ai"
    torch.manual_seed(4)
    tok = bert_tokenizer()
    config = transformers.BertConfig(vocab_size=len(tok), architectures=["HF_ColBERT"], **TINY_BERT)
    bert = transformers.BertModel(config, add_pooling_layer=False)
    state = {f"bert.{k}": v.contiguous() for k, v in bert.state_dict().items()}
    state["linear.weight"] = torch.randn(8, 16)
    path.mkdir()
    config.save_pretrained(path)
    save_file(state, str(path / "model.safetensors"))
    tok.save_pretrained(path)
    (path / "artifact.metadata").write_text(json.dumps(COLBERT_AI_META))
    return path


@pytest.fixture(scope="session")
def pylate_dir(tmp_path_factory):
    """PyLate layout: Transformer at the root (tokenizer with added '[Q] '/'[D] '), 1_Dense projection."""
    from safetensors.torch import save_file

    path = tmp_path_factory.mktemp("models") / "tiny-pylate"
    torch.manual_seed(5)
    tok = bert_tokenizer(markers=False)
    tok.add_tokens(["[Q] ", "[D] "])
    bert = transformers.BertModel(transformers.BertConfig(vocab_size=len(tok), **TINY_BERT), add_pooling_layer=False)
    bert.save_pretrained(path)
    tok.save_pretrained(path)
    (path / "1_Dense").mkdir()
    save_file({"linear.weight": torch.randn(8, 16), "linear.bias": torch.randn(8)},
              str(path / "1_Dense" / "model.safetensors"))
    (path / "1_Dense" / "config.json").write_text(json.dumps(
        {"in_features": 16, "out_features": 8, "bias": True,
         "activation_function": "torch.nn.modules.linear.Identity"}))
    (path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"}]))
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 11, "do_lower_case": False}))
    (path / "config_sentence_transformers.json").write_text(json.dumps(
        {"query_prefix": "[Q] ", "document_prefix": "[D] ", "query_length": 8, "document_length": 12,
         "attend_to_expansion_tokens": False, "skiplist_words": list(string.punctuation),
         "do_query_expansion": True, "similarity_fn_name": "MaxSim"}))
    return path


@pytest.fixture(scope="session")
def cross_encoder(cross_encoder_dir):
    return RERANKERS.get("cross-encoder")(str(cross_encoder_dir), max_length=24, batch_size=2,
                                          show_progress=False, use_cache=False)


@pytest.fixture(scope="session")
def monot5(t5_dir):
    return RERANKERS.get("monot5")(str(t5_dir), max_length=32, batch_size=2, show_progress=False, use_cache=False)


# -- cross-encoder -----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def direct_model(path, kind: str):
    """The tokenizer and model loaded with transformers alone, once per test session."""
    auto = {"classifier": transformers.AutoModelForSequenceClassification,
            "seq2seq": transformers.AutoModelForSeq2SeqLM, "base": transformers.AutoModel}[kind]
    return transformers.AutoTokenizer.from_pretrained(path), auto.from_pretrained(path).eval()


def direct_cross_encoder(path, query: str, doc: str, max_length: int):
    tok, model = direct_model(path, "classifier")
    with torch.no_grad():
        logits = model(**tok(query, doc, truncation="only_second", max_length=max_length,
                             return_tensors="pt")).logits[0]
    return logits


def test_cross_encoder_scores_equal_direct_logits(cross_encoder, cross_encoder_dir, caplog):
    caplog.set_level(logging.INFO)
    for query in QUERIES:
        scores = cross_encoder.score(query, DOCS)
        for doc, score in zip(DOCS, scores):
            expected = direct_cross_encoder(cross_encoder_dir, query.text, doc.joined(), 24)[0].item()
            assert score == pytest.approx(expected, abs=1e-5)
    assert re.search(r"cross-encoder: \d+ of 5 pairs had the document truncated", caplog.text)


def test_cross_encoder_two_labels_scores_log_odds(cross_encoder_2labels_dir):
    reranker = RERANKERS.get("cross-encoder")(str(cross_encoder_2labels_dir), show_progress=False, use_cache=False)
    assert reranker.describe()["score"] == "logit[1] - logit[0]"
    [score] = reranker.score(QUERIES[0], DOCS[:1])
    logits = direct_cross_encoder(cross_encoder_2labels_dir, QUERIES[0].text, DOCS[0].joined(), 128)
    assert score == pytest.approx((logits[1] - logits[0]).item(), abs=1e-5)


def test_cross_encoder_long_query_is_cut_to_half_the_budget(cross_encoder, caplog):
    caplog.set_level(logging.INFO)
    [score] = cross_encoder.score(LONG_QUERY, DOCS[:1])
    assert math.isfinite(score)
    queries, docs = cross_encoder._truncated_texts([(LONG_QUERY, DOCS[0])])
    assert len(cross_encoder.tokenizer(queries[0], add_special_tokens=False)["input_ids"]) == (24 - 3) // 2
    assert docs == [DOCS[0].joined()]
    assert "1 of 1 pairs had the query truncated" in caplog.text


# -- monoT5 ------------------------------------------------------------------------------------------
def direct_monot5(path, prompt: str, true_piece: str, false_piece: str) -> float:
    tok, model = direct_model(path, "seq2seq")
    with torch.no_grad():
        logits = model(**tok(prompt, return_tensors="pt"), decoder_input_ids=torch.tensor([[0]])).logits[0, 0]
    t, f = tok.convert_tokens_to_ids(true_piece), tok.convert_tokens_to_ids(false_piece)
    return torch.softmax(torch.stack([logits[t], logits[f]]), dim=0)[0].item()


def test_monot5_score_is_log_softmax_of_true_false_logits(monot5, t5_dir):
    assert (monot5.true_token, monot5.false_token) == ("true", "false")
    tok = transformers.AutoTokenizer.from_pretrained(t5_dir)
    assert (monot5.true_id, monot5.false_id) == tuple(tok.convert_tokens_to_ids(["▁true", "▁false"]))
    docs = [DOCS[0], DOCS[1], DOCS[3]]  # short enough to need no truncation at 32 tokens
    scores = monot5.score(QUERIES[1], docs)
    for doc, score in zip(docs, scores):
        prompt = f"Query: {QUERIES[1].text} Document: {doc.joined()} Relevant:"
        assert len(tok(prompt)["input_ids"]) <= 32
        assert math.exp(score) == pytest.approx(direct_monot5(t5_dir, prompt, "▁true", "▁false"), rel=1e-5)


def test_monot5_polish_tokens_and_overrides(t5_dir, caplog):
    cls = RERANKERS.get("monot5")
    polish = cls(str(t5_dir), lang="pl", show_progress=False, use_cache=False)
    tok = polish.tokenizer
    assert (polish.true_token, polish.false_token) == ("prawda", "fałsz")
    assert (polish.true_id, polish.false_id) == tuple(tok.convert_tokens_to_ids(["▁prawda", "▁fałsz"]))
    prompt = f"Query: {QUERIES[0].text} Document: {DOCS[0].joined()} Relevant:"
    [score] = polish.score(QUERIES[0], DOCS[:1])
    assert math.exp(score) == pytest.approx(direct_monot5(t5_dir, prompt, "▁prawda", "▁fałsz"), rel=1e-5)

    overridden = cls(str(t5_dir), true_token="yes", false_token="▁no", show_progress=False, use_cache=False)
    assert (overridden.true_id, overridden.false_id) == tuple(tok.convert_tokens_to_ids(["▁yes", "▁no"]))

    with caplog.at_level(logging.WARNING):  # a word that splits: first piece, with a warning
        split = cls(str(t5_dir), lang="pl", false_token="fałszywy", show_progress=False, use_cache=False)
    assert split.false_id == polish.false_id
    assert "'fałszywy' splits into" in caplog.text
    with pytest.raises(BeirxError, match="'zzz' has no usable first piece"):
        cls(str(t5_dir), true_token="zzz", show_progress=False, use_cache=False)
    with pytest.raises(BeirxError, match="map to the same id"):
        cls(str(t5_dir), true_token="yes", false_token="yes", show_progress=False, use_cache=False)


def test_monot5_truncates_the_document_and_keeps_the_cue(monot5, t5_dir, caplog):
    caplog.set_level(logging.INFO)
    query, doc = QUERIES[0], DOCS[2]  # ~80 tokens of document
    [row] = monot5._encode([(query, doc)])
    text = monot5.tokenizer.decode(row, skip_special_tokens=True)
    assert 30 <= len(row) <= 32 and row[-1] == monot5.tokenizer.eos_token_id  # a 2-piece character may not fit
    assert text.startswith(f"Query: {query.text} Document: {doc.title} Mice are") and text.endswith("Relevant:")
    [score] = monot5.score(query, [doc])
    kept = text[len(f"Query: {query.text} Document: "):-len(" Relevant:")]
    prompt = f"Query: {query.text} Document: {kept} Relevant:"
    assert math.exp(score) == pytest.approx(direct_monot5(t5_dir, prompt, "▁true", "▁false"), rel=1e-5)
    assert "monot5: 1 of 1 pairs had the document truncated" in caplog.text


# -- ColBERT -----------------------------------------------------------------------------------------
def reference_colbert_vectors(path, layout: str, texts: list[str], is_query: bool):
    """Token vectors built by hand, following colbert-ai / PyLate step by step (no beirx code)."""
    from safetensors.torch import load_file

    tok, bert = direct_model(path, "base")
    if layout == "colbert-ai":
        weight, bias = load_file(str(path / "model.safetensors"))["linear.weight"], None
        marker = tok.convert_tokens_to_ids("[unused0]" if is_query else "[unused1]")
        length = 8 if is_query else 12
        skip = {tok(s, add_special_tokens=False)["input_ids"][0] for s in string.punctuation}
    else:
        dense = load_file(str(path / "1_Dense" / "model.safetensors"))
        weight, bias = dense["linear.weight"], dense["linear.bias"]
        marker = tok.convert_tokens_to_ids("[Q] " if is_query else "[D] ")
        length = 8 if is_query else 12
        skip = {tok.convert_tokens_to_ids(s) for s in string.punctuation}
    out = []
    for text in texts:
        if layout == "colbert-ai":
            ids = tok(". " + text, truncation=True, max_length=length)["input_ids"]
            ids[1] = marker
        else:
            ids = tok(text, truncation=True, max_length=length - 1)["input_ids"]
            ids = ids[:1] + [marker] + ids[1:]
        real = len(ids)
        if is_query:  # augmentation: [MASK] up to the query length, not attended to, but scored
            ids = ids + [tok.mask_token_id] * (length - real)
        attn = [1] * real + [0] * (len(ids) - real)
        with torch.no_grad():
            hidden = bert(input_ids=torch.tensor([ids]), attention_mask=torch.tensor([attn]))[0][0]
        vectors = torch.nn.functional.normalize(torch.nn.functional.linear(hidden, weight, bias), dim=-1)
        keep = [True] * len(ids) if is_query else [i not in skip for i in ids]
        out.append(vectors[torch.tensor(keep)])
    return out


def brute_force_maxsim(q, d) -> float:
    return sum(max(float(torch.dot(qi, dj)) for dj in d) for qi in q)


@pytest.mark.parametrize("fixture,layout", [("colbert_ai_dir", "colbert-ai"), ("pylate_dir", "pylate")])
def test_colbert_maxsim_equals_brute_force(request, fixture, layout, caplog):
    caplog.set_level(logging.INFO)
    path = request.getfixturevalue(fixture)
    reranker = RERANKERS.get("colbert")(str(path), batch_size=2, show_progress=False, use_cache=False)
    assert reranker.checkpoint.layout == layout
    assert (reranker.query_maxlen, reranker.doc_maxlen, reranker.checkpoint.dim) == (8, 12, 8)
    docs_text = [d.joined() for d in DOCS]
    doc_vectors = reference_colbert_vectors(path, layout, docs_text, is_query=False)
    for query in QUERIES:
        [q_ref] = reference_colbert_vectors(path, layout, [query.text], is_query=True)
        [q_ours] = reranker.query_vectors([query.text])
        assert torch.allclose(q_ours, q_ref, atol=1e-5)
        scores = reranker.score(query, DOCS)
        for doc_ref, score in zip(doc_vectors, scores):
            assert score == pytest.approx(brute_force_maxsim(q_ref, doc_ref), abs=1e-4)
    assert re.search(r"colbert: \d+ of 5 pairs had the document truncated", caplog.text)


def test_colbert_matches_sentence_transformers_multivector_encoder(pylate_dir, colbert_ai_dir):
    """An independent implementation (sentence-transformers' MultiVectorEncoder) reads both layouts alike."""
    st = needs("sentence_transformers", "neural")
    if not hasattr(st, "MultiVectorEncoder"):
        pytest.skip("sentence-transformers without MultiVectorEncoder")
    for path in (pylate_dir, colbert_ai_dir):
        ours = RERANKERS.get("colbert")(str(path), show_progress=False, use_cache=False)
        theirs = st.MultiVectorEncoder(str(path), device="cpu")
        q = theirs.encode_query([QUERIES[0].text])
        d = theirs.encode_document([doc.joined() for doc in DOCS])
        expected = theirs.similarity(q, d)[0].tolist()
        assert ours.score(QUERIES[0], DOCS) == pytest.approx(expected, abs=1e-4)


def test_unsupported_colbert_layouts_fail_clearly(cross_encoder_dir, tmp_path):
    with pytest.raises(BeirxError, match=re.escape(str(cross_encoder_dir)) + ".*not a supported ColBERT checkpoint "
                                         r"\(found: config.json, model.safetensors"):
        RERANKERS.get("colbert")(str(cross_encoder_dir), show_progress=False)
    bi_encoder = tmp_path / "bi-encoder"
    bi_encoder.mkdir()
    (bi_encoder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    with pytest.raises(BeirxError, match="bi-encoder: modules.json lists .*Pooling.*a PyLate ColBERT model is"):
        read_checkpoint(bi_encoder)
    (bi_encoder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Dense", "type": "sentence_transformers.models.Dense"}]))
    (bi_encoder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {}}))
    with pytest.raises(BeirxError, match="not a PyLate ColBERT"):
        read_checkpoint(bi_encoder)
    with pytest.raises(BeirxError, match="model folder not found"):
        RERANKERS.get("colbert")(str(tmp_path / "nowhere"), show_progress=False)


# -- reranking semantics and caching -----------------------------------------------------------------
FIRST_STAGE = {"q1": {"d1": 9.0, "d2": 8.0, "d3": 7.0, "d4": 6.0, "d5": 5.0},
               "q2": {"d4": 3.0, "d2": 2.0, "d5": 2.0},
               "q3": {"d2": 1.0}}


@pytest.mark.parametrize("name", ["cross-encoder", "monot5", "colbert"])
def test_rerank_reorders_only_the_first_stage_top_k(request, name, tiny_dataset):
    model = {"cross-encoder": "cross_encoder_dir", "monot5": "t5_dir", "colbert": "colbert_ai_dir"}[name]
    reranker = RERANKERS.get(name)(str(request.getfixturevalue(model)), show_progress=False, use_cache=False)
    dataset = BeirDataset(tiny_dataset)
    run = reranker.rerank(dataset.queries, dataset.corpus, FIRST_STAGE, depth=3)
    assert set(run) == {"q1", "q2", "q3", "q4"}
    assert set(run["q1"]) == {"d1", "d2", "d3"} and set(run["q2"]) == {"d4", "d5", "d2"}
    assert set(run["q3"]) == {"d2"} and run["q4"] == {}
    for qid, docs in run.items():
        expected = reranker.score(dataset.queries[qid], [dataset.corpus[d] for d in docs])
        assert list(docs.values()) == pytest.approx(expected, abs=1e-5)


def test_rerank_rejects_unknown_documents_and_bad_depth(cross_encoder, tiny_dataset):
    dataset = BeirDataset(tiny_dataset)
    with pytest.raises(BeirxError, match="ranks document 'd99' for query 'q1'"):
        cross_encoder.rerank(dataset.queries, dataset.corpus, {"q1": {"d99": 1.0}})
    with pytest.raises(BeirxError, match="depth must be at least 1"):
        cross_encoder.rerank(dataset.queries, dataset.corpus, FIRST_STAGE, depth=0)


def test_length_sorting_does_not_change_scores(colbert_ai_dir, cross_encoder_dir):
    for name, path in (("colbert", colbert_ai_dir), ("cross-encoder", cross_encoder_dir)):
        cls = RERANKERS.get(name)
        on = cls(str(path), batch_size=2, show_progress=False, use_cache=False)
        off = cls(str(path), batch_size=2, show_progress=False, use_cache=False, sort_by_length=False)
        assert on.score(QUERIES[0], DOCS) == pytest.approx(off.score(QUERIES[0], DOCS), abs=1e-5)


def test_pair_scores_are_cached_and_resumable(cross_encoder_dir, tiny_dataset, beirx_home, monkeypatch):
    dataset = BeirDataset(tiny_dataset)
    cls = RERANKERS.get("cross-encoder")
    reranker = cls(str(cross_encoder_dir), show_progress=False)
    monkeypatch.setattr(reranker, "chunk_size", 2)
    calls = []
    original = reranker.score_pairs

    def failing(pairs, progress):
        calls.append(len(pairs))
        if len(calls) == 3:
            raise KeyboardInterrupt  # killed in the third chunk
        return original(pairs, progress)

    monkeypatch.setattr(reranker, "score_pairs", failing)
    with pytest.raises(KeyboardInterrupt):
        reranker.rerank(dataset.queries, dataset.corpus, FIRST_STAGE, depth=5)
    [cache_file] = (beirx_home / "runs" / "rerank").glob("cross-encoder-*.sqlite")
    stored = __import__("sqlite3").connect(cache_file).execute("SELECT COUNT(*) FROM scores").fetchone()[0]
    assert stored == 4  # the two finished chunks survived, in the file

    resumed = cls(str(cross_encoder_dir), show_progress=False)
    seen = []
    monkeypatch.setattr(resumed, "score_pairs", lambda pairs, progress: seen.append(len(pairs)) or
                        resumed.__class__.score_pairs(resumed, pairs, progress))
    run = resumed.rerank(dataset.queries, dataset.corpus, FIRST_STAGE, depth=5)
    assert sum(seen) == 9 - 4  # 9 distinct pairs, 4 already cached
    fresh = cls(str(cross_encoder_dir), show_progress=False, use_cache=False).rerank(
        dataset.queries, dataset.corpus, FIRST_STAGE, depth=5)
    assert run.keys() == fresh.keys()
    for qid in run:
        assert run[qid] == pytest.approx(fresh[qid], abs=1e-6)

    again = cls(str(cross_encoder_dir), show_progress=False, batch_size=7)  # batch size: same cache
    monkeypatch.setattr(again, "score_pairs", lambda *a: pytest.fail("cached pairs were rescored"))
    assert again.rerank(dataset.queries, dataset.corpus, FIRST_STAGE, depth=5) == run
    identity = json.loads(__import__("sqlite3").connect(cache_file).execute(
        "SELECT value FROM meta WHERE key='identity'").fetchone()[0])
    assert identity["model"] == str(cross_encoder_dir) and "batch_size" not in identity


def test_registry_and_descriptions(cross_encoder, monot5):
    assert RERANKERS.names() == ["bi-encoder", "colbert", "cross-encoder", "llm-listwise", "llm-pointwise", "monot5"]
    for reranker in (cross_encoder, monot5):
        described = reranker.describe()
        assert described["reranker"] == reranker.name
        assert described["revision"].startswith("sha256:") and described["dtype"] == "float32"


def test_rerankers_of_one_model_share_its_loaded_weights(cross_encoder_dir, t5_dir, colbert_ai_dir):
    """One copy of each reranker model per process, kept by the models layer's cache (not by the runner)."""
    for name, path, weights in (("cross-encoder", cross_encoder_dir, "model"), ("monot5", t5_dir, "model"),
                                ("colbert", colbert_ai_dir, "backbone")):
        cls = RERANKERS.get(name)
        first = cls(str(path), show_progress=False, use_cache=False)
        second = cls(str(path), batch_size=3, lang="pl", show_progress=True)
        assert getattr(first, weights) is getattr(second, weights) and first is not second
        assert second.batch_size == 3 and second.use_cache and not first.use_cache


def test_a_pylate_projection_saved_as_a_torch_pickle_is_read_once_and_missing_tensors_are_named(pylate_dir, tmp_path,
                                                                                                 monkeypatch):
    import shutil

    from beirx.evaluate.rerankers import colbert_checkpoint

    folder = tmp_path / "pickled"
    shutil.copytree(pylate_dir, folder)
    dense = folder / "1_Dense"
    weight = torch.randn(8, 16)
    (dense / "model.safetensors").unlink()
    torch.save({"linear.weight": weight, "linear.bias": torch.zeros(8)}, dense / "pytorch_model.bin")
    loads = []
    real_load = colbert_checkpoint._torch_load
    monkeypatch.setattr(colbert_checkpoint, "_torch_load", lambda path: loads.append(path.name) or real_load(path))
    checkpoint = read_checkpoint(folder)
    assert loads == ["pytorch_model.bin"]  # one read of the pickle for the whole projection
    assert torch.equal(checkpoint.projection[0].weight, weight) and checkpoint.dim == 8
    torch.save({"linear.weight": weight}, dense / "pytorch_model.bin")  # config.json says bias: true
    with pytest.raises(BeirxError, match=r"pytorch_model\.bin: tensor\(s\) linear\.bias not found"):
        read_checkpoint(folder)
