"""The ONNX Runtime dense backend with the real multilingual-e5-small on real SciFact passages.

fp32 ONNX embeddings equal sentence-transformers' (cosine >= 0.9999 per passage), int8 ones stay close
(cosine >= 0.95) and rank the same passages first for real queries; the export is cached by model
revision and quantization and reused; the results description records the backend; bad option
combinations and a missing onnxruntime are clear errors naming the flag or the extra.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from beirx.errors import BeirxError, MissingExtraError
from beirx.evaluate.retrievers.dense import DenseRetriever
from extras import needs

needs("onnxruntime", "onnx")
needs("sentence_transformers", "neural")


class Pack:
    code = "en"
    models = {}


def _passages(scifact_dir, n=24):
    with open(scifact_dir / "corpus.jsonl", encoding="utf-8") as fh:
        docs = [json.loads(line) for line, _ in zip(fh, range(n))]
    return [f"{d['title']} {d['text']}".strip() for d in docs]


def test_onnx_fp32_and_int8_against_torch(e5_small, scifact_dir, beirx_home):
    texts = _passages(scifact_dir)
    queries = ["query: " + t.split(".")[0] for t in texts[:8]]  # each passage's first sentence as its query
    common = dict(model=str(e5_small), device="cpu", max_length=128, use_cache=False, show_progress=False)
    torch_r = DenseRetriever(Pack(), **common)
    fp32 = DenseRetriever(Pack(), backend="onnx", **common)
    int8 = DenseRetriever(Pack(), backend="onnx", quantize="int8", **common)
    reference = torch_r.encode(texts, "passage: ")
    for retriever, floor in ((fp32, 0.9999), (int8, 0.95)):
        vectors = retriever.encode(texts, "passage: ")
        assert vectors.shape == reference.shape and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
        assert (vectors * reference).sum(axis=1).min() >= floor
        query_vectors = retriever.encode(queries, "")
        assert ((query_vectors @ vectors.T).argmax(axis=1) == (torch_r.encode(queries, "") @ reference.T).argmax(axis=1)).all()

    description = int8.describe()
    assert description["precision"] == "onnx-int8" and description["quantize"] == "int8"
    assert description["backend"].startswith("onnxruntime ")
    assert fp32.describe()["precision"] == "onnx-float32" and torch_r.describe()["precision"] == "float32"
    onnx_file = description["onnx_file"]
    assert onnx_file.startswith(str(beirx_home)) and onnx_file != fp32.describe()["onnx_file"]

    again = DenseRetriever(Pack(), backend="onnx", quantize="int8", **common)  # cached export: no re-export
    mtime = (beirx_home / onnx_file).stat().st_mtime_ns
    assert again.describe()["onnx_file"] == onnx_file and (beirx_home / onnx_file).stat().st_mtime_ns == mtime
    assert np.array_equal(again.encode(texts[:4], "passage: "), int8.encode(texts[:4], "passage: "))


def test_bad_options_and_missing_extra(e5_small, monkeypatch):
    with pytest.raises(BeirxError, match="--quantize int8 needs --dense-backend onnx"):
        DenseRetriever(Pack(), model=str(e5_small), quantize="int8")
    with pytest.raises(BeirxError, match="--dense-backend must be one of torch, onnx"):
        DenseRetriever(Pack(), model=str(e5_small), backend="tensorrt")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingExtraError, match=r"onnx"):
        DenseRetriever(Pack(), model=str(e5_small), backend="onnx")
