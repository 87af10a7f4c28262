"""Cross-encoder reranking: the query and document read jointly by one transformer (Nogueira & Cho 2019,
"Passage Re-ranking with BERT"), as BEIR and BEIR-PL rerank BM25's top 100.

Loaded with sentence-transformers' ``CrossEncoder`` (the MS MARCO MiniLM cross-encoders, multilingual
mMiniLM, HerBERT rerankers: any sequence-classification checkpoint with one or two labels; or the
Transformer -> mean Pooling -> Dense(hidden, 1) module chain ``beirx train cross-encoder`` saves for a
mean-pooling bi-encoder base), then run batch by batch here so that truncation and batching are ours:

- Input: ``[CLS] query [SEP] title text [SEP]`` (title and text joined by a space, as BEIR does).
- Truncation cuts the *document* (``only_second``) to ``max_length`` tokens; a query longer than half
  the budget is first cut to that half (so the document always keeps room). Counts are logged.
- Score: the raw logit for one-label models (for the module chain: the linear layer on the mean of the
  token states over the attention mask), ``logit[1] - logit[0]`` (the log-odds of "relevant") for
  two-label ones. sentence-transformers applies a sigmoid (softmax) on top; it ranks identically but
  saturates to exactly 1.0 in float32 for confident pairs, which would turn them into ties.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from beirx.errors import BeirxError, require
from beirx.evaluate.rerankers.base import Pair, PairwiseReranker, common_options
from beirx.evaluate.rerankers.inference import length_batches, resolve_dtype, torch_device, torch_module
from beirx.models import loaded
from beirx.models.checks import checked_model
from beirx.models.files import resolve_model

log = logging.getLogger(__name__)


class CrossEncoderReranker(PairwiseReranker):
    name = "cross-encoder"
    model_kind = "cross-encoder"
    OPTIONS = common_options(batch_size=32)

    def __init__(self, model: str, *, lang: str = "en", batch_size: int = 32, max_length: int | None = None,
                 device: str | None = None, show_progress: bool = True, use_cache: bool = True,
                 revision: str | None = None, dtype: str = "auto", sort_by_length: bool = True, encoder=None):
        """``encoder``: a ``CrossEncoder`` already in memory (one being trained from ``model``, whose head may be
        new) scored as it is, instead of loading ``model``; pass ``use_cache=False`` with it."""
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        st = require("sentence_transformers", "neural", "cross-encoder reranking")
        in_memory = encoder is not None
        self.files = resolve_model(model, revision) if in_memory else \
            checked_model(model, "cross-encoder", revision, "--reranker-model", "--reranker cross-encoder")
        self.path = self.files.folder
        self.device = torch_device(device)
        self.dtype = next(encoder.parameters()).dtype if in_memory else resolve_dtype(dtype, self.device)
        self.batch_size = batch_size
        self.sort_by_length = sort_by_length
        key = ("cross-encoder", str(self.path), str(self.device), str(self.dtype))
        if not in_memory:
            encoder = loaded.cached(key, lambda: _load(st, self.path, self.device, self.dtype))
        self.model = encoder.model
        self.head = _head(encoder, new_head=in_memory)
        if self.head is None:
            modules = ", ".join(type(m).__name__ for m in encoder)
            saved = ", ".join(self.model.config.architectures or []) or "no architecture"
            raise BeirxError(f"{self.path}: not a sequence-classification cross-encoder (modules: {modules}; saved as "
                             f"{saved}, with no classification head); beirx's cross-encoder reranker reads "
                             "BERT-style checkpoints with one or two labels, or Transformer, mean Pooling and a "
                             "one-logit Dense module (what `beirx train cross-encoder` saves); a bi-encoder is not "
                             "a cross-encoder")
        self.encoder = encoder
        self.num_labels = self.model.config.num_labels if self.head == "classifier" else 1
        if self.num_labels not in (1, 2):
            raise BeirxError(f"{self.path}: cross-encoder has {self.num_labels} labels; expected 1 (relevance "
                             "logit) or 2 (not relevant / relevant)")
        self.tokenizer = encoder.tokenizer
        self.max_length = int(max_length or encoder.max_seq_length or 512)
        self._specials = self.tokenizer.num_special_tokens_to_add(pair=True)
        if self.max_length <= self._specials + 1:
            raise BeirxError(f"max_length {self.max_length} leaves no room for text")

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.name, "model": self.files.name, "revision": self.files.revision,
                "max_length": self.max_length, "truncation": "document (only_second)",
                "score": "logit" if self.num_labels == 1 else "logit[1] - logit[0]",
                "dtype": str(self.dtype).removeprefix("torch."), "batch_size": self.batch_size,
                "device": self.device.type} | ({"head": "mean-pooled token states + linear"}
                                              if self.head == "mean" else {})

    def score_pairs(self, pairs: list[Pair], progress: Callable[[int], None]) -> list[float]:
        torch = torch_module()
        queries, docs = self._truncated_texts(pairs)
        encoded = self.tokenizer(queries, docs, truncation="only_second", max_length=self.max_length)
        scores = [0.0] * len(pairs)
        for batch in length_batches([len(r) for r in encoded["input_ids"]], self.batch_size, self.sort_by_length):
            inputs = self.tokenizer.pad({k: [v[i] for i in batch] for k, v in encoded.items()}, padding_side="right",
                                        return_tensors="pt").to(self.device)
            with torch.inference_mode():
                logits = (self.model(**inputs).logits if self.head == "classifier"
                          else self.encoder(inputs)["scores"]).float()
            values = logits[:, 0] if self.num_labels == 1 else logits[:, 1] - logits[:, 0]
            for i, value in zip(batch, values.tolist()):
                scores[i] = value
            progress(len(batch))
        return scores

    def _truncated_texts(self, pairs: list[Pair]) -> tuple[list[str], list[str]]:
        """Query texts (cut to half the token budget if longer) and document texts, counting truncations."""
        budget = self.max_length - self._specials
        unique_queries = list(dict.fromkeys(q.text for q, _ in pairs))
        unique_docs = list(dict.fromkeys(d.joined() for _, d in pairs))
        enc = self.tokenizer(unique_queries, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        cut = {}
        for text, ids, offsets in zip(unique_queries, enc["input_ids"], enc["offset_mapping"]):
            if len(ids) > budget // 2:
                cut[text] = text[:offsets[budget // 2 - 1][1]]
        doc_ids = self.tokenizer(unique_docs, add_special_tokens=False, verbose=False)["input_ids"]
        doc_lengths = dict(zip(unique_docs, map(len, doc_ids)))
        query_lengths = dict(zip(unique_queries, (min(len(i), budget // 2) for i in enc["input_ids"])))
        for query, doc in pairs:
            self.truncated["query"] += query.text in cut
            self.truncated["document"] += query_lengths[query.text] + doc_lengths[doc.joined()] > budget
        return [cut.get(q.text, q.text) for q, _ in pairs], [d.joined() for _, d in pairs]


def _head(encoder, new_head: bool = False) -> str | None:
    """``classifier`` (one sequence-classification model), ``mean`` (Transformer, mean Pooling, Dense to one
    ``scores`` logit with no activation) or None (anything else). ``new_head``: a model being trained, whose
    classification head may be new (it is scored as it is)."""
    kinds = [type(m).__name__ for m in encoder]
    if kinds == ["Transformer"] and type(encoder.model).__name__.endswith("ForSequenceClassification"):
        # Only a checkpoint saved so: sentence-transformers also loads a plain encoder (a bi-encoder folder) this
        # way, giving it a new, random head that would rank by noise.
        saved = encoder.model.config.architectures or []
        return "classifier" if new_head or any(a.endswith("ForSequenceClassification") for a in saved) else None
    if kinds == ["Transformer", "Pooling", "Dense"]:
        pooling, dense = encoder[1], encoder[2]
        if (pooling.pooling_mode == "mean" and dense.out_features == 1 and dense.module_output_name == "scores"
                and type(dense.activation_function).__name__ == "Identity"):
            return "mean"
    return None


def _load(st, path, device, dtype):
    """The sentence-transformers ``CrossEncoder`` with its model on ``device`` in ``dtype``, in eval mode."""
    encoder = st.CrossEncoder(str(path), device=str(device), local_files_only=True)
    encoder.to(device, dtype).eval()
    return encoder
