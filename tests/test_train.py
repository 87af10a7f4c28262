"""``beirx train`` on tiny random-weight models built here (no network): the examples and negatives are what
the qrels say (worked out by hand on ``tiny_dataset``), mined negatives are never judged positives, a killed
run resumes from its checkpoint to the same weights as an uninterrupted one, and the written folders load in
``beirx eval`` (dense retrieval and cross-encoder reranking) with a card recording the training data."""

from __future__ import annotations

import json
import re
import string

import pytest

from extras import needs

torch = needs("torch", "neural")
transformers = needs("transformers", "neural")
needs("sentence_transformers", "neural")
needs("datasets", "hub")
needs("accelerate", "train")

from beirx.artifacts.results import ResultsDocument  # noqa: E402
from beirx.cli import main  # noqa: E402
from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.data.front_matter import read_front_matter  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.evaluate.rerankers import RERANKERS  # noqa: E402
from beirx.language_packs import get_pack  # noqa: E402
from beirx.train import bi_encoder, checkpoints, cross_encoder  # noqa: E402
from beirx.train.examples import Example, all_judged_positives, judged_positives, positive_pairs  # noqa: E402
from beirx.train.negatives import BM25Miner  # noqa: E402
from beirx.train.options import TrainOptions  # noqa: E402
from beirx.train.session import load_training_data  # noqa: E402

TEXT = ("Cats are small domestic animals that hunt mice. Dogs are loyal animals and good companions. Mice are "
        "small rodents; cats hunt them at night. Whales are the largest animals in the ocean. Birds can fly and "
        "sing. which animals hunt mice largest ocean animal loyal companion dog unjudged query passage")
WORDS = sorted(set(re.findall(r"[a-z]+", TEXT.lower())))
TINY_BERT = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                 max_position_embeddings=64)
E5_PROMPTS = {"query": "query: ", "passage": "passage: "}


def bert_tokenizer():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(string.punctuation) + WORDS
    return transformers.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})


@pytest.fixture(scope="module")
def tiny_bi_encoder(tmp_path_factory):
    """A random 2-layer BERT with mean pooling and E5-style prompts, as a sentence-transformers folder."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models

    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    tok = bert_tokenizer()
    transformers.BertModel(transformers.BertConfig(vocab_size=len(tok), **TINY_BERT)).save_pretrained(root / "hf")
    tok.save_pretrained(root / "hf")
    word = models.Transformer(str(root / "hf"), max_seq_length=48)
    model = SentenceTransformer(modules=[word, models.Pooling(16, "mean")], prompts=E5_PROMPTS, device="cpu")
    model.save(str(root / "st"))
    return root / "st"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tiny-ce"
    torch.manual_seed(1)
    tok = bert_tokenizer()
    transformers.BertForSequenceClassification(
        transformers.BertConfig(vocab_size=len(tok), num_labels=1, **TINY_BERT)).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def options(dataset, model, output, **kw) -> TrainOptions:
    base = dict(dataset=str(dataset), model=str(model), output=output, lang="en", split="test", batch_size=2,
                max_steps=2, save_steps=1, logging_steps=1, device="cpu")
    return TrainOptions(**{**base, **kw})


# -- data -------------------------------------------------------------------------------------------
def test_pairs_are_the_positive_judgements(tiny_dataset):
    ds = BeirDataset(tiny_dataset)
    (tiny_dataset / "qrels" / "train.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td5\t0\nq4\td5\t2\n", encoding="utf-8")
    assert positive_pairs(ds, "test") == [Example("q1", "d1"), Example("q1", "d3"), Example("q2", "d4"),
                                          Example("q3", "d2")]
    assert positive_pairs(ds, "train") == [Example("q1", "d2"), Example("q4", "d5")]  # score 0 is no positive
    assert judged_positives(ds.qrels("train")) == {"q1": {"d2"}, "q4": {"d5"}}
    assert all_judged_positives(ds) == {"q1": {"d1", "d2", "d3"}, "q2": {"d4"}, "q3": {"d2"}, "q4": {"d5"}}


def test_bm25_negatives_by_hand(tiny_dataset):
    """English analyzer: q1 -> which, anim, hunt, mice; q2 -> largest, ocean, anim; q3 -> loyal, companion, dog.
    Non-positive matches score only on 'anim' in the text field, so the shorter text ranks first: d4 (4 tokens)
    before d2 (5) before d1 (6). q3's words occur only in its positive d2: no negative."""
    ds = BeirDataset(tiny_dataset)
    miner = BM25Miner(ds, get_pack("en"), show_progress=False)
    texts = {q: ds.queries[q].text for q in ("q1", "q2", "q3")}
    positives = judged_positives(ds.qrels("test"))
    assert miner.mine(texts, positives, 2) == {"q1": ["d4", "d2"], "q2": ["d2", "d1"], "q3": []}
    assert miner.mine(texts, positives, 1) == {"q1": ["d4"], "q2": ["d2"], "q3": []}
    # a positive in another split is excluded too
    assert miner.negatives(texts["q1"], {"d1", "d3", "d4"}, 2) == ["d2"]


def test_mined_negatives_are_never_judged_positives(scifact_dir):
    """On real SciFact train queries: no negative is judged > 0 for its query in any split."""
    ds = BeirDataset(scifact_dir)
    positives = all_judged_positives(ds)
    miner = BM25Miner(ds, get_pack("en"), show_progress=False)
    queries, _ = ds.queries_for_split("train")
    sample = {qid: queries[qid].text for qid in list(queries)[:40]}
    mined = miner.mine(sample, positives, 10)
    assert all(len(negs) == 10 and not set(negs) & positives[qid] for qid, negs in mined.items())
    ranked = miner.retriever.search({q: queries[q] for q in sample}, 20)
    hit = [q for q in sample if set(ranked[q]) & positives[q]]
    assert hit  # BM25 does rank positives high: excluding them is not vacuous


def test_training_data_and_columns(tiny_dataset, tiny_bi_encoder, tmp_path):
    data = load_training_data(options(tiny_dataset, tiny_bi_encoder, tmp_path / "o", hard_negatives="bm25"), False)
    assert data.examples == [Example("q1", "d1", ("d4",)), Example("q1", "d3", ("d4",)), Example("q2", "d4", ("d2",))]
    assert data.dropped == 1  # q3 has no BM25 negative
    assert bi_encoder.columns(data, 1) == {
        "query": ["which animals hunt mice", "which animals hunt mice", "largest ocean animal"],
        "passage": ["Cats Cats are small domestic animals that hunt mice.",
                    "Mice Mice are small rodents; cats hunt them at night.",
                    "Whales are the largest animals in the ocean."],
        "negative_1": ["Whales are the largest animals in the ocean.", "Whales are the largest animals in the ocean.",
                       "Dogs Dogs are loyal animals and good companions."]}
    assert cross_encoder.columns(data) == {
        "query": ["which animals hunt mice"] * 3 + ["largest ocean animal"] * 2,
        "passage": ["Cats Cats are small domestic animals that hunt mice.",
                    "Whales are the largest animals in the ocean.",
                    "Mice Mice are small rodents; cats hunt them at night.",
                    "Whales are the largest animals in the ocean.",
                    "Dogs Dogs are loyal animals and good companions."],
        "label": [1.0, 0.0, 1.0, 1.0, 0.0]}
    assert bi_encoder.column_prompts(E5_PROMPTS, ["query", "passage", "negative_1"]) == {
        "query": "query: ", "passage": "passage: ", "negative_1": "passage: "}
    assert bi_encoder.column_prompts({}, ["query", "passage"]) == {}


# -- bi-encoder ---------------------------------------------------------------------------------------
def test_bi_encoder_trains_writes_card_and_loads_in_eval(tiny_dataset, tiny_bi_encoder, tmp_path, capsys):
    out = tmp_path / "bi"
    record = bi_encoder.train_bi_encoder(options(tiny_dataset, tiny_bi_encoder, out), show_progress=False)
    assert not (out / "checkpoints").exists()
    card = read_front_matter(out / "README.md")
    assert card["beirx"] == json.loads(json.dumps(record))
    data = card["beirx"]["training_data"]
    assert (data["checksum"], data["language"], data["split"], data["num_pairs"]) == (
        BeirDataset(tiny_dataset).checksum(), "en", "test", 4)
    assert card["beirx"]["seed"] == 42 and card["beirx"]["training"]["steps"] == 2
    assert card["beirx"]["prompts"] == E5_PROMPTS and card["beirx"]["loss"]["name"] == "MultipleNegativesRankingLoss"
    assert card["beirx"]["beirx_version"] and card["language"] == ["en"]
    assert card["beirx"]["base_model"]["local"] is True and "base_model" not in card  # a folder, not a Hub id
    saved = json.loads((out / "config_sentence_transformers.json").read_text())
    assert saved["prompts"]["query"] == "query: " and saved["prompts"]["passage"] == "passage: "
    prose = (out / "README.md").read_text()
    loss = card["beirx"]["loss"]
    assert f"- training length: {loss['max_seq_length']} tokens, from data (99th percentile" in prose
    assert "- similarity scale: 20.0 (default: sentence-transformers' 20 (temperature 0.05)" in prose
    # evaluated like the base: dense retrieval reads the same length from both folders
    from beirx.models.files import max_seq_length, resolve_model
    assert max_seq_length(resolve_model(str(out))) == max_seq_length(resolve_model(str(tiny_bi_encoder)))
    from safetensors.torch import load_file
    before = load_file(tiny_bi_encoder / "model.safetensors")
    after = load_file(out / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the weights moved

    assert main(["eval", "--dataset", str(tiny_dataset), "--retriever", "dense", "--model", str(out),
                 "--output", str(tmp_path / "res"), "--device", "cpu", "--no-progress"]) == 0
    (path,) = (tmp_path / "res").glob("*.json")
    doc = ResultsDocument.load(path)
    assert doc.system.description["model"] == str(out) and "NDCG@10" in doc.metrics
    assert doc.system.description["query_prompt"] == "query: "
    # a finished model is not trained over without --overwrite
    assert main(["train", "bi-encoder", "--dataset", str(tiny_dataset), "--split", "test", "--model",
                 str(tiny_bi_encoder), "--output", str(out), "--device", "cpu"]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_killed_run_resumes_to_the_same_weights(tiny_dataset, tiny_bi_encoder, tmp_path):
    from safetensors.torch import load_file
    from transformers import TrainerCallback

    class Kill(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise KeyboardInterrupt  # after checkpoint-2 is on disk, as a kill would leave it

    kw = dict(max_steps=4, save_steps=2, hard_negatives="bm25")
    killed = tmp_path / "killed"
    with pytest.raises(KeyboardInterrupt):
        bi_encoder.train_bi_encoder(options(tiny_dataset, tiny_bi_encoder, killed, **kw), False, callbacks=(Kill(),))
    assert checkpoints.last_checkpoint(killed).endswith("checkpoint-2")
    assert not (killed / "model.safetensors").exists()
    resumed = bi_encoder.train_bi_encoder(options(tiny_dataset, tiny_bi_encoder, killed, **kw), False)
    assert resumed["training"]["resumed_from"] == "checkpoint-2" and resumed["training"]["steps"] == 4
    straight = bi_encoder.train_bi_encoder(options(tiny_dataset, tiny_bi_encoder, tmp_path / "straight", **kw), False)
    assert straight["training"]["resumed_from"] is None
    a, b = load_file(killed / "model.safetensors"), load_file(tmp_path / "straight" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_checkpoints_of_another_run_are_refused(tmp_path):
    checkpoints.claim(tmp_path, {"base_model": "m", "learning_rate": 2e-5})
    checkpoints.claim(tmp_path, {"base_model": "m", "learning_rate": 2e-5})  # the same run: fine
    (checkpoints.checkpoint_dir(tmp_path) / "checkpoint-1").mkdir()
    with pytest.raises(BeirxError, match="learning_rate"):
        checkpoints.claim(tmp_path, {"base_model": "m", "learning_rate": 1e-4})


def test_a_record_without_checkpoints_binds_nothing(tmp_path):
    """A run stopped before its first checkpoint (a refused value, a kill in the first step) left only its record:
    the corrected rerun replaces it."""
    checkpoints.claim(tmp_path, {"base_model": "m", "learning_rate": 2e-5})
    checkpoints.claim(tmp_path, {"base_model": "m", "learning_rate": 1e-4})
    assert json.loads((checkpoints.checkpoint_dir(tmp_path) / "run.json").read_text())["learning_rate"] == 1e-4


# -- cross-encoder ------------------------------------------------------------------------------------
def test_cross_encoder_trains_and_reranks_in_eval(tiny_dataset, tiny_cross_encoder, tmp_path):
    out = tmp_path / "ce"
    assert main(["train", "cross-encoder", "--dataset", str(tiny_dataset), "--lang", "en", "--split", "test",
                 "--model", str(tiny_cross_encoder), "--output", str(out), "--negatives", "1", "--max-steps", "2",
                 "--batch-size", "2", "--device", "cpu", "--no-progress"]) == 0
    record = read_front_matter(out / "README.md")["beirx"]
    assert record["kind"] == "cross-encoder" and record["training_data"]["num_pairs"] == 3
    assert record["loss"] == {"name": "BinaryCrossEntropyLoss", "head": "classifier",
                              "pos_weight": pytest.approx(2 / 3, abs=1e-6),
                              "positives": 3, "negatives": 2, "max_length": record["loss"]["max_length"]}
    negatives = record["training_data"]["hard_negatives"]
    assert (negatives["miner"], negatives["analyzer"], negatives["per_pair"]) == ("bm25", "en", 1)
    assert main(["eval", "--dataset", str(tiny_dataset), "--retriever", "bm25", "--reranker", "cross-encoder",
                 "--reranker-model", str(out), "--output", str(tmp_path / "res"), "--device", "cpu",
                 "--no-progress"]) == 0
    docs = [ResultsDocument.load(p) for p in (tmp_path / "res").glob("*.json")]
    reranked = [d for d in docs if d.system.kind == "rerank"]
    assert reranked and reranked[0].system.description["reranker"]["model"] == str(out)


def test_cross_encoder_head_follows_the_base_model(tiny_bi_encoder, tiny_cross_encoder):
    assert cross_encoder.head_for(tiny_bi_encoder) == "mean"  # its 1_Pooling says mean
    assert cross_encoder.head_for(tiny_cross_encoder) == "classifier"
    assert cross_encoder.head_for(tiny_bi_encoder.parent / "hf") == "cls"  # a plain encoder, no pooling config


def test_cross_encoder_from_a_mean_pooling_bi_encoder_reranks_with_mean_pool_and_linear(tiny_dataset,
                                                                                        tiny_bi_encoder, tmp_path):
    from safetensors.torch import load_file
    from sentence_transformers.cross_encoder import CrossEncoder

    from beirx.data.records import Doc, Query
    from beirx.evaluate.rerankers import RERANKERS

    out = tmp_path / "ce"
    assert main(["train", "cross-encoder", "--dataset", str(tiny_dataset), "--lang", "en", "--split", "test",
                 "--model", str(tiny_bi_encoder), "--output", str(out), "--negatives", "1", "--max-steps", "2",
                 "--batch-size", "2", "--device", "cpu", "--no-progress"]) == 0
    assert read_front_matter(out / "README.md")["beirx"]["loss"]["head"] == "mean"
    assert [type(m).__name__ for m in CrossEncoder(str(out), local_files_only=True)] == ["Transformer", "Pooling",
                                                                                          "Dense"]
    reranker = RERANKERS.get("cross-encoder")(str(out), max_length=16, show_progress=False, use_cache=False)
    assert reranker.describe()["head"] == "mean-pooled token states + linear"
    query, docs = Query("q", "cats hunt mice"), [Doc("a", "Cats hunt mice at night.", "Cats"), Doc("b", "Dogs.")]
    scores = reranker.score(query, docs)
    # by hand: the encoder's token states (plain transformers), their mean over the attention mask, the linear layer
    tok, encoder = transformers.AutoTokenizer.from_pretrained(out), transformers.AutoModel.from_pretrained(out).eval()
    dense = load_file(out / "2_Dense" / "model.safetensors")
    for doc, score in zip(docs, scores):
        inputs = tok(query.text, doc.joined(), truncation="only_second", max_length=16, return_tensors="pt")
        with torch.no_grad():
            states = encoder(**inputs).last_hidden_state[0]
        pooled = states.sum(0) / len(states)  # one unpadded pair: every token counts
        expected = (dense["linear.weight"][0] @ pooled + dense["linear.bias"][0]).item()
        assert score == pytest.approx(expected, abs=1e-5)


def test_cross_encoder_needs_negatives(tiny_dataset, tiny_cross_encoder, tmp_path, capsys):
    assert main(["train", "cross-encoder", "--dataset", str(tiny_dataset), "--split", "test", "--model",
                 str(tiny_cross_encoder), "--output", str(tmp_path / "x"), "--hard-negatives", "none"]) == 2
    assert "--hard-negatives bm25" in capsys.readouterr().err


def test_listwise_loss_by_hand(tiny_cross_encoder):
    """One row: -log(e^s+ / (e^s+ + e^s1 + e^s2)) over the raw logits. Two rows: each row's softmax also holds
    one document of the OTHER row (random which), never its own again."""
    from sentence_transformers.cross_encoder import CrossEncoder

    model = CrossEncoder(str(tiny_cross_encoder), local_files_only=True, device="cpu").eval()
    loss_fn = cross_encoder.listwise_loss(model)
    tok = transformers.AutoTokenizer.from_pretrained(tiny_cross_encoder)
    bert = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()

    def logit(query, doc):
        with torch.no_grad():
            return bert(**tok(query, doc, return_tensors="pt")).logits[0, 0].item()

    def nll(query, positive, others):
        scores = torch.tensor([logit(query, positive)] + [logit(query, d) for d in others])
        return (torch.logsumexp(scores, 0) - scores[0]).item()

    q, pos, n1, n2 = "which animals hunt mice", "Cats hunt mice.", "Whales are large.", "Birds can fly."
    with torch.no_grad():
        one = loss_fn([[q], [pos], [n1], [n2]], None).item()
    assert one == pytest.approx(nll(q, pos, [n1, n2]), abs=1e-5)

    q2, pos2, neg2 = "loyal companion dog", "Dogs are loyal companions.", "Mice are small rodents."
    with torch.no_grad():
        two = loss_fn([[q, q2], [pos, pos2], [n1, neg2]], None).item()
    possible = {(a, b): (nll(q, pos, [n1, a]) + nll(q2, pos2, [neg2, b])) / 2
                for a in (pos2, neg2) for b in (pos, n1)}
    assert any(two == pytest.approx(value, abs=1e-5) for value in possible.values())
    assert two != pytest.approx(nll(q, pos, [n1]) / 2 + nll(q2, pos2, [neg2]) / 2, abs=1e-4)  # not BM25's only


def test_cross_encoder_listwise_trains_records_its_loss_and_reranks(tiny_dataset, tiny_bi_encoder, tmp_path):
    out = tmp_path / "ce"
    assert main(["train", "cross-encoder", "--dataset", str(tiny_dataset), "--lang", "en", "--split", "test",
                 "--model", str(tiny_bi_encoder), "--output", str(out), "--loss", "listwise", "--negatives", "1",
                 "--max-steps", "2", "--batch-size", "2", "--device", "cpu", "--no-progress"]) == 0
    record = read_front_matter(out / "README.md")["beirx"]
    assert record["parameters"]["loss"] == "listwise"
    assert record["loss"] == {"name": "MultipleNegativesRankingLoss", "head": "mean", "bm25_negatives": 1,
                              "in_batch_negatives": 1, "logits": "raw (no sigmoid, scale 1)",
                              "batch_sampler": "no_duplicates", "rows": 3,
                              "max_length": record["loss"]["max_length"]}
    assert main(["eval", "--dataset", str(tiny_dataset), "--retriever", "bm25", "--reranker", "cross-encoder",
                 "--reranker-model", str(out), "--output", str(tmp_path / "res"), "--device", "cpu",
                 "--no-progress"]) == 0
    reranked = [d for d in map(ResultsDocument.load, (tmp_path / "res").glob("*.json")) if d.system.kind == "rerank"]
    assert reranked and reranked[0].system.description["reranker"]["head"] == "mean-pooled token states + linear"


def test_cross_encoder_loss_is_checked(tiny_dataset, tiny_cross_encoder, tmp_path, capsys):
    with pytest.raises(BeirxError, match="--loss must be one of bce, listwise, got 'pairwise'"):
        options(tiny_dataset, tiny_cross_encoder, tmp_path / "x", loss="pairwise")
    assert main(["train", "cross-encoder", "--dataset", str(tiny_dataset), "--model", str(tiny_cross_encoder),
                 "--output", str(tmp_path / "x"), "--loss", "pairwise"]) == 2
    assert "invalid choice: 'pairwise'" in capsys.readouterr().err
    assert "loss" not in options(tiny_dataset, tiny_cross_encoder, tmp_path / "x").training_parameters()


def test_empty_document_prompt_saved_by_sentence_transformers_6_does_not_hide_the_passage_prompt(tmp_path):
    from beirx.models.files import resolve_model
    from beirx.models.prompts import model_prompts

    (tmp_path / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"document": "", "passage": "passage: ", "query": "query: "}}))
    assert model_prompts(resolve_model(str(tmp_path))) == E5_PROMPTS


def test_nothing_imports_the_train_stage():
    """train/ comes last in the data flow: only its own modules and its two CLI commands import it."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    allowed = {"beirx/cli/train.py", "beirx/cli/generate_queries.py"}
    offenders = []
    for path in sorted((root / "beirx").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("beirx/train/") or rel in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            offenders += [f"{rel}: {n}" for n in names if n == "beirx.train" or n.startswith("beirx.train.")]
    assert offenders == []


# -- validation (--eval-split) -------------------------------------------------------------------------
def with_train_split(tiny_dataset):
    """q4 -> d5 judged in a train split, so the test split can validate (its pools are worked out by hand in
    test_bm25_negatives_by_hand: q1 -> d4, d2; q2 -> d2, d1; q3 -> none)."""
    (tiny_dataset / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq4\td5\t1\n", encoding="utf-8")
    return tiny_dataset


def pytrec_ndcg10(run: dict[str, dict[str, float]], positives: dict[str, set[str]]) -> float:
    import pytrec_eval

    qrels = {q: {d: 1 for d in docs} for q, docs in positives.items()}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    return sum(m["ndcg_cut_10"] for m in per_query.values()) / len(qrels)


POOL_POSITIVES = {"q1": {"d1", "d3"}, "q2": {"d4"}, "q3": {"d2"}}
POOL_CANDIDATES = {"q1": ["d4", "d2"], "q2": ["d2", "d1"], "q3": []}


def test_validation_pool_and_bi_encoder_score_equal_pytrec_eval(tiny_dataset, tiny_bi_encoder, tmp_path, capsys):
    from sentence_transformers import SentenceTransformer

    with_train_split(tiny_dataset)
    opts = options(tiny_dataset, tiny_bi_encoder, tmp_path / "bi", split="train", eval_split="test",
                   eval_candidates=2, batch_size=1, max_steps=3, save_steps=2)
    data = load_training_data(opts, False)
    pool = data.validation
    assert (pool.positives, pool.candidates) == (POOL_POSITIVES, POOL_CANDIDATES)
    assert sorted(pool.docs) == ["d1", "d2", "d3", "d4"]  # the union of the pools, never d5 (a train positive)

    record = bi_encoder.train_bi_encoder(opts, show_progress=False)
    scores = record["training"]["validation"]
    assert [e["step"] for e in scores] == [2, 3]  # at the checkpoint, and at the end
    assert record["training_data"]["validation"] == {
        "split": "test", "num_queries": 3, "pool_documents": 4, "bm25_candidates_per_query": 2,
        "main_score": "nDCG@10 on the pool"}
    # the last score is the trained model's nDCG@10 on the pool, ranked by cosine with E5 prompts
    model = SentenceTransformer(str(opts.output), device="cpu")
    ids = sorted(pool.docs)
    docs = model.encode([pool.docs[d] for d in ids], prompt="passage: ", convert_to_tensor=True,
                        normalize_embeddings=True)
    run = {}
    for qid, text in pool.queries.items():
        query = model.encode(text, prompt="query: ", convert_to_tensor=True, normalize_embeddings=True)
        run[qid] = {d: float(s) for d, s in zip(ids, docs @ query)}
    assert scores[-1]["ndcg@10"] == pytest.approx(pytrec_ndcg10(run, POOL_POSITIVES), abs=1e-5)
    assert "validation on split `test`" in (opts.output / "README.md").read_text()


def test_cross_encoder_validation_score_equals_pytrec_eval(tiny_dataset, tiny_cross_encoder, tmp_path, capsys):
    """Reranks each pool; q3 (no candidate: a perfect score whatever the model) is left out."""
    from sentence_transformers.cross_encoder import CrossEncoder

    (tiny_dataset / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq4\td5\t1\n",
                                                      encoding="utf-8")
    out = tmp_path / "ce"
    assert main(["train", "cross-encoder", "--dataset", str(tiny_dataset), "--lang", "en", "--model",
                 str(tiny_cross_encoder), "--output", str(out), "--negatives", "1", "--max-steps", "2",
                 "--batch-size", "2", "--device", "cpu", "--no-progress", "--eval-split", "test",
                 "--eval-candidates", "2", "--eval-steps", "1"]) == 0
    printed = capsys.readouterr().out
    assert "validation [test] step 1: nDCG@10" in printed and "step 2: nDCG@10" in printed
    scores = read_front_matter(out / "README.md")["beirx"]["training"]["validation"]
    assert [e["step"] for e in scores] == [1, 2]
    pool = load_training_data(options(tiny_dataset, tiny_cross_encoder, tmp_path / "unused", split="train",
                                      eval_split="test", eval_candidates=2), False).validation
    assert (pool.positives, pool.candidates) == (POOL_POSITIVES, POOL_CANDIDATES)
    model = CrossEncoder(str(out), device="cpu")
    reranked = {"q1": POOL_POSITIVES["q1"], "q2": POOL_POSITIVES["q2"]}
    run = {}
    for qid, positives in reranked.items():
        ids = sorted(positives) + POOL_CANDIDATES[qid]
        run[qid] = {d: float(s) for d, s in zip(ids, model.predict([(pool.queries[qid], pool.docs[d]) for d in ids]))}
    assert scores[-1]["ndcg@10"] == pytest.approx(pytrec_ndcg10(run, reranked), abs=1e-5)


def test_validating_on_the_training_split_is_refused(tiny_dataset, tiny_bi_encoder, tmp_path, capsys):
    with pytest.raises(BeirxError, match="--eval-split test is the training split"):
        options(tiny_dataset, tiny_bi_encoder, tmp_path / "x", eval_split="test")
    assert main(["train", "bi-encoder", "--dataset", str(tiny_dataset), "--split", "test", "--model",
                 str(tiny_bi_encoder), "--output", str(tmp_path / "x"), "--eval-split", "test"]) == 2
    assert "training split" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_language_comes_from_the_dataset_when_lang_is_absent(tiny_dataset, tiny_bi_encoder, tmp_path):
    """The same rule as ``beirx eval``: a dataset card (or translation.json) states the language."""
    (tiny_dataset / "README.md").write_text("---\nlanguage:\n- es\n---\n# tiny\n", encoding="utf-8")
    data = load_training_data(options(tiny_dataset, tiny_bi_encoder, tmp_path / "o", lang=None), False)
    assert data.lang == "es"
    assert load_training_data(options(tiny_dataset, tiny_bi_encoder, tmp_path / "o", lang="en"), False).lang == "en"


# -- GradCache ----------------------------------------------------------------------------------------
GRADCACHE_ROWS = {  # query, positive, hard negative
    "query": ["which animals hunt mice", "largest ocean animal", "loyal companion dog", "birds can fly"],
    "passage": ["Cats are small domestic animals that hunt mice.", "Whales are the largest animals in the ocean.",
                "Dogs are loyal animals and good companions.", "Birds can fly and sing."],
    "negative_1": ["Mice are small rodents.", "Birds can fly and sing.", "Cats hunt them at night.",
                   "Whales are the largest animals."],
}


def _loss_gradient(model_dir, loss_class, dropout: bool, **loss_kw) -> tuple[float, dict]:
    """The loss on :data:`GRADCACHE_ROWS` and the encoder's gradient, seed 0 before the forward pass; one forward
    per column (sentence-transformers would otherwise merge the document columns into one forward, which draws
    other dropout masks)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.losses.merged_forward import column_merging_disabled

    model = SentenceTransformer(str(model_dir), device="cpu")
    model.train(dropout)
    features = [model.tokenize(texts) for texts in GRADCACHE_ROWS.values()]
    loss_fn = loss_class(model, scale=bi_encoder.SCALE, **loss_kw)
    torch.manual_seed(0)
    with column_merging_disabled():
        loss = loss_fn(features, None)
    loss.backward()
    return loss.item(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("mini_batch_size,dropout", [(1, False), (3, False), (4, True)])
def test_gradcache_gradient_equals_the_plain_in_batch_loss(tiny_bi_encoder, mini_batch_size, dropout):
    """GradCache (Gao et al., 2021) is exact: the loss and the encoder's gradient equal those of the plain
    in-batch loss over the same batch (3 columns: query, positive, hard negative), whatever the mini-batch size
    without dropout, and with dropout when a mini-batch holds a whole column (its masks are drawn in the same
    order and replayed from the same random state in GradCache's second pass)."""
    from sentence_transformers.sentence_transformer.losses import (CachedMultipleNegativesRankingLoss,
                                                                   MultipleNegativesRankingLoss)

    plain_loss, plain = _loss_gradient(tiny_bi_encoder, MultipleNegativesRankingLoss, dropout)
    cached_loss, cached = _loss_gradient(tiny_bi_encoder, CachedMultipleNegativesRankingLoss, dropout,
                                         mini_batch_size=mini_batch_size)
    assert cached_loss == pytest.approx(plain_loss, rel=1e-6)
    assert plain_loss > 0.5  # a random encoder: far from a solved batch, so the gradient is not ~0
    assert cached.keys() == plain.keys() and len(plain) > 10
    largest = max(grad.abs().max().item() for grad in plain.values())
    for name, grad in plain.items():  # float32 sums in another order: 1e-4 relative, 1e-6 of the largest entry
        torch.testing.assert_close(cached[name], grad, rtol=1e-4, atol=1e-6 * largest, msg=name)


# -- --evaluate ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["bi-encoder", "cross-encoder"])
def test_evaluate_compares_base_and_trained_as_beirx_eval_does(kind, tiny_dataset, tiny_bi_encoder,
                                                                tiny_cross_encoder, tmp_path, capsys):
    import shutil

    from scipy import stats

    shutil.copy(tiny_dataset / "qrels" / "test.tsv", tiny_dataset / "qrels" / "dev.tsv")  # a held-out split
    base = tiny_bi_encoder if kind == "bi-encoder" else tiny_cross_encoder
    out = tmp_path / "model"
    common = ["train", kind, "--dataset", str(tiny_dataset), "--split", "test", "--model", str(base), "--device",
              "cpu", "--batch-size", "2", "--max-steps", "2", "--negatives", "1", "--no-progress"]
    # a split without qrels, or the training split, is refused before any training
    assert main([*common, "--output", str(out), "--evaluate", "val"]) == 2
    assert f"--evaluate val: {tiny_dataset / 'qrels' / 'val.tsv'} does not exist (splits of tiny: dev, test)" \
        in capsys.readouterr().err
    assert main([*common, "--output", str(out), "--evaluate", "test"]) == 2
    assert "--evaluate test is the training split" in capsys.readouterr().err
    assert not out.exists()

    assert main([*common, "--output", str(out), "--evaluate", "dev"]) == 0
    printed = capsys.readouterr().out
    folder = tmp_path / "model-evaluation"
    summary = json.loads((folder / "evaluation.json").read_text())
    assert read_front_matter(out / "README.md")["beirx"]["evaluation"] == summary
    assert sorted(p.name for p in out.iterdir() if p.is_dir() and "evaluation" in p.name) == []  # not in the model

    # the same figures as beirx eval run on each model by hand
    by_hand = {}
    for name, model in (("base", base), ("trained", out)):
        flags = (["--retriever", "dense", "--model", str(model)] if kind == "bi-encoder" else
                 ["--retriever", "bm25", "--reranker", "cross-encoder", "--reranker-model", str(model)])
        assert main(["eval", "--dataset", str(tiny_dataset), "--split", "dev", *flags, "--device", "cpu",
                     "--output", str(tmp_path / name), "--no-progress"]) == 0
        [path] = [p for p in (tmp_path / name).glob("*.json") if kind == "bi-encoder" or "rerank" in p.name]
        by_hand[name] = ResultsDocument.load(path)
    for name in ("base", "trained"):
        saved = ResultsDocument.load(folder / summary[name]["results_file"])
        assert saved.per_query == by_hand[name].per_query
        assert summary[name]["NDCG@10"] == round(by_hand[name].metrics["NDCG@10"], 6)
        assert summary[name]["Recall@100"] == round(by_hand[name].metrics["Recall@100"], 6)
    qids = sorted(by_hand["base"].per_query)
    a, b = ([by_hand[n].per_query[q]["NDCG@10"] for q in qids] for n in ("base", "trained"))
    diff = summary["difference"]["NDCG@10"]
    assert diff["trained_minus_base"] == round(sum(b) / 3 - sum(a) / 3, 6) and diff["queries"] == 3
    expected_t = stats.ttest_rel(b, a).pvalue
    assert diff["paired_t_p"] == (1.0 if a == b else round(float(expected_t), 6))
    assert 0 < diff["randomization_p"] <= 1  # 3 queries: the exact test over all 8 sign flips
    assert (f"NDCG@10: base {summary['base']['NDCG@10']:.4f}, trained {summary['trained']['NDCG@10']:.4f}"
            in printed and "evaluation on tiny [en/dev]" in printed)


def test_the_reranker_refuses_a_bi_encoder(tiny_bi_encoder):
    """sentence-transformers loads a bi-encoder folder as a cross-encoder with a new, random classification head;
    reranking with it would rank by noise, so it is refused, naming what the folder was saved as."""
    with pytest.raises(BeirxError, match=r"--reranker-model .*st: a sentence-transformers bi-encoder \(BertModel\), "
                                         r"not a cross-encoder"):
        RERANKERS.get("cross-encoder")(str(tiny_bi_encoder), show_progress=False, use_cache=False)
