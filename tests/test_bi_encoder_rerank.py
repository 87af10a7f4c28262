"""The bi-encoder reranker: BM25's candidates re-ordered by the real multilingual-e5-small's similarity, the very
scores dense retrieval gives those documents, through ``beirx eval --reranker bi-encoder``."""

from __future__ import annotations

import json

import pytest

from conftest import TINY_CORPUS, TINY_QRELS, TINY_QUERIES, write_beir

from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.evaluate.rerankers import RERANKERS
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.runs import read_trec
from beirx.language_packs import get_pack


def test_bi_encoder_rerank_gives_dense_scores(tmp_path, e5_small):
    data = BeirDataset(write_beir(tmp_path / "tiny", TINY_CORPUS, TINY_QUERIES, TINY_QRELS), name="tiny")
    out = tmp_path / "out"
    assert main(["eval", "--dataset", str(data.root), "--retriever", "bm25", "--reranker", "bi-encoder",
                 "--reranker-model", str(e5_small), "--rerank-depth", "3", "--output", str(out), "-q"]) == 0
    (reranked,) = [p for p in out.glob("*.trec") if "bi-encoder" in p.name]
    run = read_trec(reranked)
    dense = RETRIEVERS.get("dense")(get_pack("en"), model=str(e5_small), show_progress=False)
    dense.index(data)
    exact = dense.search(data.queries_for_split("test")[0], len(TINY_CORPUS))
    bm25 = read_trec(next(p for p in out.glob("*.trec") if "bi-encoder" not in p.name))
    for qid, docs in run.items():
        top3 = sorted(bm25[qid], key=lambda d: (bm25[qid][d], d), reverse=True)[:3]
        assert set(docs) == set(top3)  # only the first stage's candidates, re-ordered
        assert {d: docs[d] for d in docs} == pytest.approx({d: exact[qid][d] for d in docs}, abs=1e-5)
    results = json.loads(reranked.with_suffix(".json").read_text())
    reranker = results["system"]["description"]["reranker"]
    assert reranker["reranker"] == "bi-encoder" and reranker["query_prompt"] == "query: "
    assert reranker["revision"] == dense.files.revision
    assert RERANKERS.get("bi-encoder")(str(e5_small), show_progress=False).describe()["similarity"] == "cosine"
