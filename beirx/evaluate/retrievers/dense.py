"""Dense (bi-encoder) retrieval with any sentence-transformers model, exact search, cached embeddings.

What is encoded, and why:

- Documents are ``(title + " " + text).strip()``, exactly what BEIR's ``SentenceBERT.encode_corpus``
  feeds the model (Thakur et al. 2021), so numbers are comparable with BEIR's dense baselines.
- Prompts: the model's own (E5: ``"query: "`` and ``"passage: "``, Wang et al. 2022), found by
  :func:`beirx.models.prompts.model_prompts`; ``query_prompt``/``passage_prompt`` override (``""`` = none).
- Similarity: ``cosine`` (embeddings L2-normalised, then inner product) or ``dot`` (raw inner product);
  default the model's ``similarity_fn_name``, else cosine.

Search is exact (no approximate index): :func:`beirx.evaluate.knn.exact_search` walks the memory-mapped
embeddings in chunks, so memory stays bounded at any corpus size and results equal brute force.
Document embeddings are cached by :mod:`beirx.models.embeddings_cache`, keyed by model, revision,
passage prompt, max length, similarity, precision and the corpus file's checksum.

Device: :func:`beirx.models.device.choose_device` (CUDA when available, fp16 weights there, recorded as
``precision``; else CPU in fp32). The model is loaded once per process (:mod:`beirx.models.loaded`). Without
``--model`` the language's default dense model is used (:func:`beirx.models.default_models.default_model`).
With ``backend="onnx"`` (``--dense-backend onnx [--quantize int8]``) the model runs on ONNX Runtime on the
CPU (:mod:`beirx.models.onnx_encoder`; precision ``onnx-int8`` / ``onnx-float32``); GPUs keep torch fp16.

The Universal Sentence Encoder Multilingual (``--model use-multilingual-v3``, or a folder with its
``weights.npz`` and ``sp.model``) is not a sentence-transformers model: it runs in numpy on the CPU
(:mod:`beirx.models.use_encoder`), on whole texts (no ``--max-length``), without prompts unless given, with
cosine similarity, in corpus order (its batches are not padded, so sorting by length saves nothing).
Everything else (cache, resume, exact search, ties, progress) is the same.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from beirx.argtypes import positive_int
from beirx.checksums import cache_key, corpus_checksum
from beirx.data.cache import cache_dir
from beirx.data.dataset import BeirDataset
from beirx.data.doc_store import DocStore, DocTexts
from beirx.data.download import file_lock
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError, require
from beirx.evaluate.knn import exact_search, faiss_search, id_tie_ranks
from beirx.evaluate.retrievers.base import Retriever
from beirx.evaluate.runs import Run
from beirx.language_packs import LanguagePack
from beirx.models.checks import checked_model
from beirx.models.default_models import default_model
from beirx.models.device import choose_device
from beirx.models.embeddings_cache import EmbeddingCache, encode_into, length_order
from beirx.models.files import max_seq_length
from beirx.models.loaded import embedding_dimension, sentence_transformer
from beirx.models.prompts import model_prompts
from beirx.models.use_encoder import implementation as use_implementation
from beirx.models.use_encoder import use_model_files
from beirx.options import Option

log = logging.getLogger(__name__)

SIMILARITIES = ("cosine", "dot")
SEARCH_BACKENDS = ("exact", "faiss")
BACKENDS = ("torch", "onnx")
_CACHE_FORMAT = 1


#: Texts encoded per batch unless ``--batch-size`` says otherwise (dense and SPLADE retrievers).
BATCH_SIZE = 32


#: The encoder options the dense retriever declares and the SPLADE retriever shares: one flag each.
ENCODER_OPTIONS: tuple[Option, ...] = (
    Option("model", help="sentence-transformers model folder or Hub id (default: the language's); use-multilingual-v3: "
                         "the Universal Sentence Encoder Multilingual (needs beirx[use]); with --retriever splade, "
                         "the SPLADE model"),
    Option("revision", flag="--model-revision", help="Hub commit/branch/tag of --model"),
    Option("max_length", positive_int, help="tokens per text (default: the model's max_seq_length)"),
    Option("batch_size", positive_int, default=BATCH_SIZE, help="encoding batch size"),
    Option("device", help="cpu, cuda, cuda:1 ... for dense encoders and rerankers (default: cuda when available)"),
    Option("sort_by_length", default=True, flag=""),
)


def document_text(doc: Doc) -> str:
    """What the model encodes for a document: BEIR's ``(title + " " + text).strip()``."""
    return f"{doc.title} {doc.text}".strip()


class DenseRetriever(Retriever):
    name = "dense"
    model_kind = "bi-encoder"
    corpus_statistics = False
    OPTIONS = (
        *ENCODER_OPTIONS,
        Option("query_prompt", help="text put before each query (default: the model's 'query' prompt; '' = none)"),
        Option("passage_prompt", help="text put before each document (default: the model's; '' = none)"),
        Option("similarity", choices=SIMILARITIES, help="default: the model's similarity function"),
        Option("search", choices=SEARCH_BACKENDS, default="exact",
               help="exact: chunked numpy search in bounded memory; faiss: IndexFlatIP in RAM"),
        Option("backend", choices=BACKENDS, default="torch", flag="--dense-backend",
               help="onnx: ONNX Runtime on CPU (needs beirx[onnx]; GPUs keep torch fp16)"),
        Option("quantize", choices=("int8",), help="with --dense-backend onnx: dynamic int8 quantization"),
        Option("chunk_rows", positive_int, flag=""),
    )

    @classmethod
    def flag_params(cls, given) -> dict[str, Any]:
        """The options given, except at their defaults; the backend and quantization together when either is."""
        params = super().flag_params({k: v for k, v in given.items() if k not in ("backend", "quantize")})
        if given.get("backend", "torch") != "torch" or given.get("quantize"):
            params.update(backend=given.get("backend", "torch"), quantize=given.get("quantize"))
        return params

    @property
    def device_name(self) -> str:
        return "cpu" if self.use_folder is not None else self._device()

    def __init__(self, pack: LanguagePack, model: str | None = None, revision: str | None = None, query_prompt: str | None = None,
                 passage_prompt: str | None = None, similarity: str | None = None, max_length: int | None = None,
                 batch_size: int = BATCH_SIZE, device: str | None = None, sort_by_length: bool = True,
                 chunk_rows: int | None = None, search: str = "exact", backend: str = "torch",
                 quantize: str | None = None, use_cache: bool = True, show_progress: bool = True):
        model = model or default_model("dense", pack.code)  # every language has one
        if similarity is not None and similarity not in SIMILARITIES:
            raise BeirxError(f"similarity must be one of {', '.join(SIMILARITIES)}, got {similarity!r}")
        self.pack = pack
        use_files = use_model_files(str(model))  # the Universal Sentence Encoder, or None
        self.use_folder = use_files.folder if use_files else None
        if use_files is None:
            require("sentence_transformers", "neural", "dense retrieval")  # fail before any work, naming the extra
            self.files = checked_model(str(model), "bi-encoder", revision, "--model", "dense retrieval")
            prompts = model_prompts(self.files)
            model_similarity = self.files.read_json("config_sentence_transformers.json").get("similarity_fn_name")
        else:
            self._check_use_options(revision, max_length, backend, quantize, device)
            self.files, prompts, model_similarity = use_files, {}, "cosine"
        self.query_prompt = prompts.get("query", "") if query_prompt is None else query_prompt
        self.passage_prompt = prompts.get("passage", "") if passage_prompt is None else passage_prompt
        self.similarity = similarity or model_similarity or "cosine"
        if self.similarity not in SIMILARITIES:
            raise BeirxError(f"model {model} uses {self.similarity!r} similarity; pass --similarity cosine or dot")
        self.max_length = None if self.use_folder else int(max_length or max_seq_length(self.files))
        self.batch_size = int(batch_size)
        self.device = None if device is None else choose_device(device)
        self.sort_by_length = sort_by_length
        self.chunk_rows = chunk_rows
        if search not in SEARCH_BACKENDS:
            raise BeirxError(f"search must be one of {', '.join(SEARCH_BACKENDS)}, got {search!r}")
        self.search_backend = search
        if backend not in BACKENDS:
            raise BeirxError(f"--dense-backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if quantize is not None and backend != "onnx":
            raise BeirxError("--quantize int8 needs --dense-backend onnx")
        self.backend, self.quantize = backend, quantize
        if backend == "onnx":
            require("onnxruntime", "onnx", "the ONNX Runtime dense backend (--dense-backend onnx)")
        self._onnx = self._use = None
        self._tie_ranks: tuple[list[str], np.ndarray] | None = None  # (doc_ids, their ranks)
        self.use_cache = use_cache
        self.show_progress = show_progress
        self.doc_ids: list[str] = []
        self.embeddings: np.ndarray | None = None
        self.loaded_from_cache = False
        self.encode_seconds: float | None = None

    @staticmethod
    def _check_use_options(revision, max_length, backend, quantize, device) -> None:
        """Options that do not apply to the Universal Sentence Encoder: refused, or noted in the log."""
        if max_length is not None:
            raise BeirxError("--max-length does not apply to the Universal Sentence Encoder: it reads whole texts")
        if backend != "torch" or quantize is not None:
            raise BeirxError("--dense-backend and --quantize do not apply to the Universal Sentence Encoder: "
                             "it runs in numpy")
        if revision:
            log.warning("the Universal Sentence Encoder is a local folder: --model-revision %s is ignored", revision)
        if device is not None and device != "cpu":
            log.warning("the Universal Sentence Encoder runs on the CPU (numpy); --device %s is ignored", device)

    # -- identity ------------------------------------------------------------------------------
    def _device(self) -> str:
        if self.device is None:
            self.device = choose_device(None)
        return self.device

    def _uses_onnx(self) -> bool:
        if self.use_folder is not None:  # numpy (see model()), never an export of a transformer
            return False
        if self.backend == "onnx" and self._device().startswith("cuda"):
            log.warning("--dense-backend onnx is for CPUs; on %s the torch backend runs (fp16)", self._device())
            self.backend, self.quantize = "torch", None
        return self.backend == "onnx"

    @property
    def precision(self) -> str:
        if self.use_folder is not None:
            return "float32"
        if self._uses_onnx():
            return f"onnx-{self.quantize or 'float32'}"
        return "float16" if self._device().startswith("cuda") else "float32"

    def describe(self) -> dict[str, Any]:
        if self.use_folder is not None:
            from beirx.models.use_encoder import model_identity

            return {"retriever": self.name, **model_identity(self.files),
                    "query_prompt": self.query_prompt, "passage_prompt": self.passage_prompt,
                    "similarity": self.similarity, "max_length": None, "precision": self.precision,
                    "document_text": "(title + ' ' + text).strip()", "search": self.search_backend,
                    **self.model().describe()}
        return {"retriever": self.name, "model": self.files.name, "revision": self.files.revision,
                "implementation": f"sentence-transformers {importlib.metadata.version('sentence-transformers')}",
                "query_prompt": self.query_prompt, "passage_prompt": self.passage_prompt,
                "similarity": self.similarity, "max_length": self.max_length, "precision": self.precision,
                "document_text": "(title + ' ' + text).strip()", "search": self.search_backend,
                **(self.model().describe() if self._uses_onnx() else {})}

    def model(self):
        if self.use_folder is not None:
            if self._use is None:
                from beirx.models.use_encoder import UseEncoder

                self._use = UseEncoder(self.use_folder)
            return self._use
        if self._uses_onnx():
            if self._onnx is None:
                from beirx.models.onnx_encoder import OnnxEncoder

                self._onnx = OnnxEncoder(self.files.folder, self.files.name, self.files.revision, self.quantize)
            self._onnx.max_seq_length = self.max_length
            return self._onnx
        model = sentence_transformer(self.files.folder, self._device(), self.precision == "float16")
        model.max_seq_length = self.max_length
        return model

    # -- encoding ------------------------------------------------------------------------------
    def encode(self, texts: list[str], prompt: str) -> np.ndarray:
        """Embeddings of ``texts`` with ``prompt`` prepended (L2-normalised for cosine), float32."""
        vectors = self.model().encode(texts, prompt=prompt, batch_size=self.batch_size, convert_to_numpy=True,
                                      normalize_embeddings=self.similarity == "cosine", show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def encoding_order(self, texts: list[str]) -> np.ndarray:
        """Longest first by token count (with the passage prompt, capped at ``max_length``), or corpus order.

        Tokens, not characters: they are what a batch is padded to, and characters are a poor proxy for
        them (numbers, formulas and non-Latin scripts); on SciFact, sorting by characters leaves a third of
        the padding saving on the table.
        """
        if not self.sort_by_length or self.use_folder is not None:  # USE: no padding to save
            return np.arange(len(texts), dtype=np.int64)
        tokenizer = self.model().tokenizer
        lengths = np.zeros(len(texts), dtype=np.int64)
        for start in range(0, len(texts), 4096):
            encoded = tokenizer([self.passage_prompt + t for t in texts[start:start + 4096]], truncation=True,
                                max_length=self.max_length)["input_ids"]
            lengths[start:start + len(encoded)] = [len(ids) for ids in encoded]
        return length_order(lengths)

    def index(self, dataset: BeirDataset) -> None:
        """Load the corpus embeddings from the cache, or encode them (resuming an interrupted encoding)."""
        meta = {"model": self.files.name, "revision": self.files.revision, "passage_prompt": self.passage_prompt,
                "max_length": self.max_length, "similarity": self.similarity, "precision": self.precision,
                "corpus": corpus_checksum(dataset.corpus_path), "document_text": "(title + ' ' + text).strip()",
                "format": _CACHE_FORMAT}
        if self._uses_onnx():  # the export (its folder name carries its key) decides the embeddings too
            meta["onnx_export"] = self.model().path.parent.name
        if self.use_folder is not None:
            meta["encoder"] = use_implementation()
        label = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{dataset.name}-{Path(self.files.name).name}")[-80:]
        cache = EmbeddingCache(cache_dir("embeddings"), label, cache_key(meta))
        self.index_location = cache.folder
        if not self.use_cache:
            self._encode_corpus(dataset, None, meta)
            return
        with file_lock(cache.lock):  # another job encoding the same corpus finishes first; then this one loads
            if cache.exists():
                self.embeddings, self.doc_ids = cache.load()
                self.loaded_from_cache = True
                log.info("loaded %d document embeddings from %s", len(self.doc_ids), cache.folder)
                return
            self._encode_corpus(dataset, cache, meta)

    def _encode_corpus(self, dataset: BeirDataset, cache: EmbeddingCache | None, meta: dict[str, Any]) -> None:
        """Encode every document, into ``cache`` (resumable) or, without one, into memory."""
        with DocStore.for_dataset(dataset) as store:  # texts are read from disk batch by batch, never all held
            doc_ids = list(store)
            self._encode_texts(doc_ids, DocTexts(store, doc_ids, document_text), cache, meta)

    def _encode_texts(self, doc_ids: list[str], texts: Sequence[str], cache: EmbeddingCache | None,
                      meta: dict[str, Any]) -> None:
        """Encode ``texts`` in length order; on several GPUs through sentence-transformers' multi-process pool
        (one process per GPU, each fed a share of every step of ``batch_size x GPUs x 4`` texts)."""
        model = self.model()
        dim = embedding_dimension(model)
        start = time.perf_counter()
        gpus = self._gpus()
        pool = model.start_multi_process_pool(gpus) if gpus else None
        step = self.batch_size * len(gpus) * 4 if gpus else self.batch_size

        def encode_batch(batch: list[str]) -> np.ndarray:
            if pool is None:
                return self.encode(batch, self.passage_prompt)
            return np.asarray(model.encode(batch, prompt=self.passage_prompt, batch_size=self.batch_size, pool=pool,
                                           convert_to_numpy=True, normalize_embeddings=self.similarity == "cosine",
                                           show_progress_bar=False), dtype=np.float32)

        try:
            order = self.encoding_order(texts)
            if cache is not None:
                self.embeddings, self.doc_ids = cache.build(doc_ids, texts, encode_batch, dim, step, meta, order,
                                                            self.show_progress)
            else:
                matrix = np.zeros((len(texts), dim), dtype=np.float32)
                encode_into(matrix, texts, encode_batch, step, order, show_progress=self.show_progress,
                            desc=f"encode {self.files.name}")
                self.embeddings, self.doc_ids = matrix, doc_ids
        finally:
            if pool is not None:
                model.stop_multi_process_pool(pool)
        self.encode_seconds = round(time.perf_counter() - start, 3)

    def _gpus(self) -> list[str]:
        """Every visible GPU when the device is plain ``cuda`` and there are several; else none (one device)."""
        if self.use_folder is not None or self._device() != "cuda":
            return []
        import torch

        count = torch.cuda.device_count()
        return [f"cuda:{i}" for i in range(count)] if count > 1 else []

    # -- search --------------------------------------------------------------------------------
    def search(self, queries: dict[str, Query], k: int) -> Run:
        if self.embeddings is None:
            raise BeirxError("dense index is empty: call index(dataset) first")
        qids = list(queries)
        if not qids:
            return {}
        vectors = self.encode([queries[q].text for q in qids], self.query_prompt)
        if self._tie_ranks is None or self._tie_ranks[0] is not self.doc_ids:  # sorted once per index
            self._tie_ranks = (self.doc_ids, id_tie_ranks(self.doc_ids))
        ranks = self._tie_ranks[1]
        if self.search_backend == "faiss":
            indices, scores = faiss_search(vectors, self.embeddings, k, ranks)
        else:
            indices, scores = exact_search(vectors, self.embeddings, k, ranks, chunk_rows=self.chunk_rows)
        ids = self.doc_ids
        return {qid: {ids[i]: float(s) for i, s in zip(row_idx.tolist(), row_scores.tolist())}
                for qid, row_idx, row_scores in zip(qids, indices, scores)}
