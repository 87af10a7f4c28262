"""Learned sparse retrieval with SPLADE: documents and queries as weighted vocabulary terms, exact search.

Weights are SPLADE's (:mod:`beirx.models.splade`: ``log(1 + ReLU(MLM logits))`` pooled over the
attention-masked tokens, max by default; Formal et al. 2021, arXiv:2109.10086); a document's score is the
dot product of its vector with the query's, computed exactly over an on-disk inverted index
(:mod:`beirx.evaluate.retrievers.sparse_index`), so results equal brute force at any corpus size.

What is encoded: documents as ``(title + " " + text).strip()`` (as the dense retriever and BEIR's SPLADE
evaluations do), truncated to ``max_length`` tokens (default 256, SPLADE's training length); queries to
``query_max_length`` (default the same).

Query side, as SPLADE variants need it:

- ``query_model``: a separate query encoder (e.g. Efficient SPLADE's ``...-query`` / ``...-doc`` pairs,
  Lassance & Clinchant 2022); it must share the document encoder's vocabulary.
- ``query_encoding="tokens"``: no query encoder at all: each query word piece counts once per occurrence,
  as inference-free ("document-only") sparse models score queries.

The index is cached under ``$BEIRX_HOME/indexes``, keyed by the corpus checksum, model, revision, maximum
length, pooling and precision; encoding is streamed from disk in token-length order and resumable. On
CUDA the model runs in fp16 (weights always in fp32), recorded as ``precision``. Only documents sharing a
term with the query (positive score) are returned, as with BM25.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from beirx.argtypes import positive_int
from beirx.checksums import cache_key, corpus_checksum
from beirx.data.cache import cache_dir
from beirx.data.dataset import BeirDataset
from beirx.data.doc_store import DocStore, DocTexts
from beirx.data.download import file_lock
from beirx.data.records import Query
from beirx.errors import BeirxError, require
from beirx.evaluate.knn import id_tie_ranks
from beirx.evaluate.retrievers.base import Retriever
from beirx.evaluate.retrievers.bm25 import top_k
from beirx.evaluate.retrievers.dense import BATCH_SIZE, ENCODER_OPTIONS, document_text
from beirx.evaluate.retrievers.sparse_index import InvertedIndex, SparseIndexCache, check_vocabulary
from beirx.evaluate.runs import Run
from beirx.language_packs import LanguagePack
from beirx.models.checks import checked_model
from beirx.models.default_models import model_or_default
from beirx.models.device import choose_device
from beirx.models.embeddings_cache import length_order
from beirx.models.splade import POOLINGS, SpladeEncoder
from beirx.options import Option

log = logging.getLogger(__name__)

QUERY_ENCODINGS = ("model", "tokens")
DEFAULT_MAX_LENGTH = 256
_INDEX_FORMAT = 1


class SpladeRetriever(Retriever):
    name = "splade"
    model_kind = "masked-lm"
    corpus_statistics = False
    OPTIONS = (
        *ENCODER_OPTIONS,  # --model, --model-revision, --max-length (default 256 here), --batch-size: the dense flags
        Option("query_model", flag="--splade-query-model",
               help="a separate SPLADE query encoder (same vocabulary); default: --model encodes queries too"),
        Option("query_encoding", choices=QUERY_ENCODINGS, default="model", flag="--splade-query-encoding",
               help="tokens: queries as their word pieces (weight = count), for document-only models"),
        Option("pooling", choices=POOLINGS, default="max", flag="--splade-pooling",
               help="pooling of token weights: max (SPLADE v2/++) or sum (SPLADE v1)"),
        Option("query_max_length", positive_int, flag="--splade-query-max-length",
               help="tokens per query (default: the document --max-length)"),
        Option("checkpoint_batches", positive_int, default=32, flag=""),
    )

    def __init__(self, pack: LanguagePack, model: str | None = None, revision: str | None = None,
                 query_model: str | None = None, query_encoding: str = "model", pooling: str = "max",
                 max_length: int | None = None, query_max_length: int | None = None, batch_size: int = BATCH_SIZE,
                 device: str | None = None, sort_by_length: bool = True, checkpoint_batches: int = 32,
                 use_cache: bool = True, show_progress: bool = True):
        model = model_or_default("splade", model, pack.code, "--retriever splade", "--model")
        if query_encoding not in QUERY_ENCODINGS:
            raise BeirxError(f"query_encoding must be one of {', '.join(QUERY_ENCODINGS)}, got {query_encoding!r}")
        if pooling not in POOLINGS:
            raise BeirxError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        if query_model and query_encoding == "tokens":
            raise BeirxError("query_encoding='tokens' uses no query encoder: drop query_model")
        require("transformers", "neural", "SPLADE sparse retrieval")  # fail before any work, naming the extra
        self.pack = pack
        self.files = checked_model(str(model), "masked-lm", revision, "--model", "SPLADE")
        self.query_files = checked_model(str(query_model), "masked-lm", None, "query model", "SPLADE") \
            if query_model else None
        self.query_encoding, self.pooling = query_encoding, pooling
        self.max_length = int(max_length or DEFAULT_MAX_LENGTH)
        self.query_max_length = int(query_max_length or self.max_length)
        self.batch_size = int(batch_size)
        self.device = None if device is None else choose_device(device)
        self.sort_by_length = sort_by_length
        self.checkpoint_batches = int(checkpoint_batches)
        self.use_cache, self.show_progress = use_cache, show_progress
        self.doc_ids: list[str] = []
        self._index: InvertedIndex | None = None
        self._id_rank = None
        self._scratch: tempfile.TemporaryDirectory | None = None  # the index when use_cache is off
        self.loaded_from_cache = False
        self.encode_seconds: float | None = None

    # -- identity ------------------------------------------------------------------------------
    @property
    def device_name(self) -> str:
        if self.device is None:
            self.device = choose_device(None)
        return self.device

    @property
    def precision(self) -> str:
        return "float16" if self.device_name.startswith("cuda") else "float32"

    def encoder(self) -> SpladeEncoder:
        return SpladeEncoder(self.files, self.device_name, self.pooling)

    def query_encoder(self) -> SpladeEncoder:
        return SpladeEncoder(self.query_files, self.device_name, self.pooling) if self.query_files else self.encoder()

    def describe(self) -> dict[str, Any]:
        return {"retriever": self.name, "model": self.files.name, "revision": self.files.revision,
                "implementation": f"transformers {importlib.metadata.version('transformers')} (MLM logits), "
                                  "beirx inverted index (exact)",
                "weights": f"log(1 + relu(logits)), {self.pooling}-pooled over attention-masked tokens",
                "pooling": self.pooling, "max_length": self.max_length, "query_max_length": self.query_max_length,
                "query_encoding": self.query_encoding,
                "query_model": self.query_files.name if self.query_files else None,
                "query_revision": self.query_files.revision if self.query_files else None,
                "precision": self.precision, "document_text": "(title + ' ' + text).strip()"}

    # -- indexing ------------------------------------------------------------------------------
    def index(self, dataset: BeirDataset) -> None:
        """Load the index from the cache, or encode the corpus into it (resuming an interrupted encoding)."""
        meta = {"format": _INDEX_FORMAT, "model": self.files.name, "revision": self.files.revision,
                "pooling": self.pooling, "max_length": self.max_length, "precision": self.precision,
                "corpus": corpus_checksum(dataset.corpus_path), "document_text": "(title + ' ' + text).strip()"}
        label = re.sub(r"[^A-Za-z0-9._-]+", "_", f"splade-{dataset.name}-{Path(self.files.name).name}")[-80:]
        if not self.use_cache:
            self._scratch = tempfile.TemporaryDirectory(prefix="beirx-splade-", dir=cache_dir("indexes"))
            cache = SparseIndexCache(Path(self._scratch.name), label, cache_key(meta))
            self.index_location = cache.folder
            self._encode_corpus(dataset, cache, meta)
            return
        cache = SparseIndexCache(cache_dir("indexes"), label, cache_key(meta))
        self.index_location = cache.folder
        with file_lock(cache.lock):  # another job encoding the same corpus finishes first; then this one loads
            if cache.exists():
                self._index, self.doc_ids = cache.load()
                self._id_rank = None
                self.loaded_from_cache = True
                log.info("loaded the SPLADE index of %d documents from %s", len(self.doc_ids), cache.folder)
                return
            self._encode_corpus(dataset, cache, meta)

    def _encode_corpus(self, dataset: BeirDataset, cache: SparseIndexCache, meta: dict[str, Any]) -> None:
        encoder = self.encoder()
        start = time.perf_counter()
        with DocStore.for_dataset(dataset) as store:  # texts are read from disk batch by batch, never all held
            doc_ids = list(store)
            texts = DocTexts(store, doc_ids, document_text)
            order = self._encoding_order(encoder, texts)
            self._index, self.doc_ids = cache.build(
                doc_ids, texts, lambda batch: encoder.encode(batch, self.max_length), encoder.vocab_size,
                self.batch_size, meta, order, self.show_progress, self.checkpoint_batches)
        self._id_rank = None
        self.encode_seconds = round(time.perf_counter() - start, 3)

    def _encoding_order(self, encoder: SpladeEncoder, texts: DocTexts):
        """Longest first by token count (similar lengths share a batch, little compute goes to padding)."""
        if not self.sort_by_length:
            return length_order([0] * len(texts))
        lengths = []
        for start in range(0, len(texts), 4096):
            lengths += encoder.token_lengths(texts[start:start + 4096], self.max_length)
        return length_order(lengths)

    # -- search --------------------------------------------------------------------------------
    def encode_queries(self, texts: list[str]):
        """The sparse vector of each query text (see ``query_encoding``)."""
        encoder = self.query_encoder()
        check_vocabulary(self._index.vocab_size, encoder.vocab_size, f"query encoder {encoder.files.name}")
        if self.query_encoding == "tokens":
            return encoder.token_vectors(texts, self.query_max_length)
        vectors = []
        for start in range(0, len(texts), self.batch_size):
            vectors += encoder.encode(texts[start:start + self.batch_size], self.query_max_length)
        return vectors

    def search(self, queries: dict[str, Query], k: int) -> Run:
        if self._index is None:
            raise BeirxError("SPLADE index is empty: call index(dataset) first")
        qids = list(queries)
        vectors = self.encode_queries([queries[q].text for q in qids])
        if self._id_rank is None:
            self._id_rank = id_tie_ranks(self.doc_ids)
        return {qid: top_k(self._index.scores(vector), self.doc_ids, k, self._id_rank)
                for qid, vector in zip(qids, vectors)}
