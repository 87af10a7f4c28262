"""ColBERT plumbing on a real backbone: multilingual-e5-small turned into a colbert-ai checkpoint (random
projection) reranks a slice of real SciFact. Asserts plumbing (markers, truncation, IDs), not quality.

XLM-R's tokenizer has no ``[unused0]``/``[unused1]``: colbert-ai's ``convert_tokens_to_ids`` then yields
the unknown-token id for both markers, which beirx reproduces with a warning (see rerankers/colbert.py).
"""

from __future__ import annotations

import json
import logging
import math
import shutil

import pytest

from extras import needs

torch = needs("torch", "neural")
needs("transformers", "neural")

from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.errors import BeirxError  # noqa: E402
from beirx.evaluate.rerankers import RERANKERS  # noqa: E402
from beirx.evaluate.rerankers.colbert_checkpoint import read_checkpoint  # noqa: E402


@pytest.fixture(scope="session")
def e5_colbert_ai(e5_small, tmp_path_factory):
    """A sharded colbert-ai checkpoint: e5-small's own weight file (linked, not copied: 470 MB) plus a shard
    with a seeded random projection 'linear.weight' [128, 384], an HF_ColBERT config and artifact.metadata.
    (The tiny BERT fixture in test_rerankers.py covers the single-file layout with 'bert.'-prefixed keys.)"""
    from safetensors import safe_open
    from safetensors.torch import save_file

    path = tmp_path_factory.mktemp("models") / "e5-colbert-ai"
    path.mkdir()
    (path / "backbone.safetensors").symlink_to(e5_small / "model.safetensors")
    linear = torch.randn(128, 384, generator=torch.Generator().manual_seed(0)) / 384 ** 0.5
    save_file({"linear.weight": linear}, str(path / "linear.safetensors"))
    with safe_open(str(e5_small / "model.safetensors"), framework="pt") as fh:
        weight_map = {k: "backbone.safetensors" for k in fh.keys()}
    weight_map["linear.weight"] = "linear.safetensors"
    (path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    config = json.loads((e5_small / "config.json").read_text())
    config["architectures"] = ["HF_ColBERT"]
    (path / "config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(e5_small / name, path / name)
    (path / "artifact.metadata").write_text(json.dumps({"query_maxlen": 32, "doc_maxlen": 180, "dim": 128,
                                                        "similarity": "cosine", "mask_punctuation": True}))
    return path


def test_e5_colbert_ai_reranks_a_scifact_slice(e5_colbert_ai, scifact_dir, caplog):
    caplog.set_level(logging.INFO)
    dataset = BeirDataset(scifact_dir)
    queries, qrels = dataset.queries_for_split("test")
    qids = sorted(queries)[:3]
    corpus = dataset.corpus
    others = list(corpus)[:4]
    first_stage = {qid: {did: float(len(others) - i) for i, did in enumerate(dict.fromkeys(list(qrels[qid]) + others))}
                   for qid in qids}

    reranker = RERANKERS.get("colbert")(str(e5_colbert_ai), batch_size=8, show_progress=False, use_cache=False)
    tok = reranker.tokenizer
    assert reranker.checkpoint.layout == "colbert-ai"
    assert reranker.query_marker_id == reranker.doc_marker_id == tok.unk_token_id
    assert "marker '[unused0]' is not in the tokenizer's vocabulary" in caplog.text
    assert reranker.expansion_id == tok.mask_token_id
    # colbert-ai's skiplist is each symbol's first piece: for XLM-R that includes the bare '▁' of ',' and '.'.
    assert tok.convert_tokens_to_ids("▁") in reranker.skiplist and tok.convert_tokens_to_ids("▁!") in reranker.skiplist

    run = reranker.rerank({q: queries[q] for q in qids}, corpus, first_stage, depth=100)
    assert list(run) == qids
    for qid in qids:
        assert set(run[qid]) == set(first_stage[qid])
        assert all(math.isfinite(s) and 0 < s <= 32 + 1e-4 for s in run[qid].values())  # cosine MaxSim <= 32
    assert "colbert: " in caplog.text and "had the document truncated" in caplog.text

    ids, attn, keep = reranker._tokenize([queries[qids[0]].text], is_query=True)
    assert ids.shape == (1, 32) and ids[0, 0] == tok.cls_token_id and ids[0, 1] == tok.unk_token_id
    assert ids[0, -1] == tok.mask_token_id and attn[0, -1] == 0 and bool(keep.all())
    doc_ids, _, doc_keep = reranker._tokenize([corpus[others[0]].joined()], is_query=False)
    assert doc_ids.shape[1] == 180 and doc_ids[0, 1] == tok.unk_token_id
    assert not doc_keep[0][torch.isin(doc_ids[0], torch.tensor(reranker.skiplist))].any()


def test_sentence_transformers_bi_encoder_is_not_a_colbert(e5_small):
    with pytest.raises(BeirxError, match=r"e5-small: modules.json lists \[.*Pooling.*\]"):
        read_checkpoint(e5_small)
