"""Cross-lingual similarity of a text and its translation: cosine of multilingual sentence embeddings.

BEIR-PL (Wojtasik et al., 2024, Table 2) judged its Google translations by the mean cosine similarity of
LaBSE embeddings (Feng et al., 2022) of each original text and its translation; a language-agnostic
encoder maps a sentence and its faithful translation close together, so a low score points to a
translation that lost or changed meaning. Any sentence-transformers model works (local folder or Hub id);
models trained with prefixes get them from their own config (E5: ``"query: "`` for queries and
``"passage: "`` for documents, Wang et al., 2022) — the same prefix on both sides, so the comparison
stays symmetric. The Universal Sentence Encoder Multilingual (``use-multilingual-v3``,
:mod:`beirx.models.use_encoder`) works too: a second opinion from a model of another design.

Embeddings are cached per (model, revision, prompt, max length, exact texts) with the shared
:class:`~beirx.models.embeddings_cache.EmbeddingCache`: encoding is length-sorted (little padding),
resumable, and a rerun after re-translating only the target side re-encodes only that side. Model files,
revision, prompts, device and the loaded model come from :mod:`beirx.models`, exactly as for dense
retrieval, so the same folder gets the same revision in a quality report and a results document.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import numpy as np

from beirx.checksums import cache_key
from beirx.data.cache import cache_dir
from beirx.errors import require
from beirx.models.device import choose_device
from beirx.models.embeddings_cache import EmbeddingCache, length_order
from beirx.models.checks import checked_model
from beirx.models.files import max_seq_length
from beirx.models.loaded import embedding_dimension, sentence_transformer
from beirx.models.prompts import model_prompts
from beirx.models.use_encoder import UseEncoder, use_model_files
from beirx.models.use_encoder import implementation as use_implementation

log = logging.getLogger(__name__)

DEFAULT_ENCODER = "sentence-transformers/LaBSE"
_FEATURE = "translation quality (sentence similarity)"


def texts_checksum(texts: list[str]) -> str:
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode("utf-8") + b"\0")
    return h.hexdigest()


class PairEncoder:
    """Encodes texts for similarity; ``role`` is ``query`` or ``passage`` and picks the model's prompt."""

    def __init__(self, model: str = DEFAULT_ENCODER, revision: str | None = None, batch_size: int = 32,
                 max_length: int | None = None, use_cache: bool = True, show_progress: bool = True):
        use_files = use_model_files(model)  # the Universal Sentence Encoder (whole texts, no prompts), or None
        self.use = use_files is not None
        if self.use:
            self.files, self.prompts, self.max_length = use_files, {}, None
        else:
            require("sentence_transformers", "translate", _FEATURE)
            self.files = checked_model(model, "bi-encoder", revision, "encoder", "translation similarity")
            self.prompts = model_prompts(self.files)
            self.max_length = int(max_length or max_seq_length(self.files))
        self.batch_size = int(batch_size)
        self.use_cache = use_cache
        self.show_progress = show_progress
        self._model = None

    def describe(self) -> dict[str, Any]:
        return {"model": self.files.name, "revision": self.files.revision, "prompts": self.prompts,
                "max_length": self.max_length, "similarity": "cosine"}

    def _load(self):
        if self.use:
            self._model = self._model or UseEncoder(self.files.folder)
            return self._model
        if self._model is None:
            require("torch", "translate", _FEATURE)
            self._model = sentence_transformer(self.files.folder, choose_device(None), feature=_FEATURE)
        self._model.max_seq_length = self.max_length
        return self._model

    def _encode(self, texts: list[str], prompt: str) -> np.ndarray:
        vectors = self._load().encode(texts, prompt=prompt, batch_size=self.batch_size, convert_to_numpy=True,
                                      normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def embed(self, texts: list[str], role: str, label: str = "quality") -> np.ndarray:
        """L2-normalised embeddings of ``texts`` (row ``i`` for ``texts[i]``)."""
        prompt = self.prompts.get(role, "")
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if not self.use_cache:
            return self._encode(texts, prompt)
        parts = [self.files.name, self.files.revision, prompt, self.max_length, texts_checksum(texts)]
        key = cache_key(*parts, use_implementation()) if self.use else cache_key(*parts)
        cache = EmbeddingCache(cache_dir("embeddings"), label, key)
        if cache.exists():
            log.info("similarity embeddings of %d texts from cache %s", len(texts), cache.folder)
            return np.asarray(cache.load()[0])
        model = self._load()
        dim = embedding_dimension(model)
        meta = {"model": self.files.name, "revision": self.files.revision, "prompt": prompt,
                "max_length": self.max_length, "texts": len(texts), "purpose": "translation quality"}
        order = length_order([len(t) for t in texts])
        matrix, _ = cache.build([str(i) for i in range(len(texts))], texts, lambda batch: self._encode(batch, prompt),
                                dim, self.batch_size, meta, order, show_progress=self.show_progress)
        return np.asarray(matrix)

    def similarities(self, sources: list[str], translations: list[str], role: str, label: str) -> np.ndarray:
        """Cosine similarity of ``sources[i]`` and ``translations[i]`` for every ``i``."""
        if not sources:
            return np.zeros(0, dtype=np.float32)
        a = self.embed(sources, role, f"{label}-source")
        b = self.embed(translations, role, f"{label}-translation")
        return np.einsum("ij,ij->i", a, b)
