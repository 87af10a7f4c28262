"""monoT5 reranking: a T5 / mT5 / plT5 sequence-to-sequence model reads
``Query: {q} Document: {d} Relevant:`` and the relevance score comes from the logits of the "true" and
"false" tokens at the first decoder step (Nogueira, Jiang, Pradeep & Lin 2020, "Document Ranking with a
Pretrained Sequence-to-Sequence Model").

- Tokens: per checkpoint and language (English monoT5 ``true``/``false``, mT5 mMARCO ``yes``/``no``,
  Polish plT5 ``prawda``/``fałsz``) from :func:`beirx.models.relevance_tokens.relevance_tokens`,
  overridable with ``true_token``/``false_token``. A word maps to the id of its *first* piece when
  tokenized on its own (``"true"`` -> ``▁true``), as pygaggle and the mT5/plT5 reference code do; a warning
  is logged when the word splits into several pieces, and a word whose first piece is the bare word
  boundary ``▁`` (it would carry no meaning) is refused. A token already written as a vocabulary piece
  (``▁true``) is used as is.
- Score: ``log softmax([logit_false, logit_true])[true]`` = log P(relevant). This is the logarithm of the
  two-way softmax of the paper, so the ranking is the same; it is what pygaggle returns, and unlike the
  probability it does not saturate to exactly 1.0 in float32 (which would tie confident documents).
- Truncation: the prompt (with the final ``</s>``) is cut to ``max_length`` (512, as in the paper) by
  shortening the *document* only, so the ``Relevant:`` cue always survives; counts are logged.
- Precision on CUDA: bfloat16 where supported (T5 overflows in float16), else float32; float32 on CPU.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable
from typing import Any

from beirx.errors import BeirxError, require
from beirx.evaluate.rerankers.base import Pair, PairwiseReranker, common_options
from beirx.evaluate.rerankers.inference import length_batches, resolve_dtype, torch_device, torch_module
from beirx.models import loaded
from beirx.models.checks import checked_model
from beirx.options import Option

log = logging.getLogger(__name__)

TEMPLATE = "Query: {query} Document: {document} Relevant:"
_MAX_CUTS = 5


class MonoT5Reranker(PairwiseReranker):
    name = "monot5"
    model_kind = "seq2seq"

    OPTIONS = (*common_options(batch_size=16, max_length=512),
               Option("true_token", flag="--monot5-true-token",
                      help="monoT5's relevance token (default: the checkpoint's, e.g. 'true' or Polish 'prawda')"),
               Option("false_token", flag="--monot5-false-token",
                      help="monoT5's non-relevance token (default: the checkpoint's)"))

    def __init__(self, model: str, *, lang: str = "en", batch_size: int = 16, max_length: int = 512,
                 device: str | None = None, show_progress: bool = True, use_cache: bool = True,
                 revision: str | None = None, dtype: str = "auto", true_token: str | None = None,
                 false_token: str | None = None, template: str = TEMPLATE, sort_by_length: bool = True):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        transformers = require("transformers", "neural", "monoT5 reranking")
        torch = torch_module()
        if template.count("{query}") != 1 or template.count("{document}") != 1 or \
                template.index("{query}") > template.index("{document}"):
            raise BeirxError(f"monoT5 template must contain {{query}} then {{document}} once each: {template!r}")
        self.template = template
        self._head, self._tail = template.split("{document}")
        self.files = checked_model(model, "seq2seq", revision, "--reranker-model", "--reranker monot5")
        self.device = torch_device(device)
        half = "bfloat16" if self.device.type == "cuda" and torch.cuda.is_bf16_supported() else "float32"
        self.dtype = resolve_dtype(dtype, self.device, half=half)
        self.batch_size = batch_size
        self.max_length = max_length
        self.sort_by_length = sort_by_length
        key = ("monot5", str(self.files.folder), str(self.device), str(self.dtype))
        self.tokenizer, self.model = loaded.cached(key, lambda: _load(transformers, self.files.folder, self.device,
                                                                      self.dtype))
        self._decoder_start = self.model.config.decoder_start_token_id

        from beirx.models.relevance_tokens import relevance_tokens

        default_true, default_false = relevance_tokens(model, lang)
        self.true_token = default_true if true_token is None else true_token
        self.false_token = default_false if false_token is None else false_token
        self.true_id, self.false_id = self._token_id(self.true_token), self._token_id(self.false_token)
        if self.true_id == self.false_id:
            raise BeirxError(f"true token {self.true_token!r} and false token {self.false_token!r} map to the same id "
                             f"{self.true_id} in {self.files.folder}")

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.name, "model": self.files.name, "revision": self.files.revision,
                "template": self.template, "true_token": self.true_token, "false_token": self.false_token,
                "true_id": self.true_id, "false_id": self.false_id, "max_length": self.max_length,
                "truncation": "document", "score": "log_softmax([false, true])[true]",
                "dtype": str(self.dtype).removeprefix("torch."), "batch_size": self.batch_size,
                "device": self.device.type}

    def _token_id(self, word: str) -> int:
        vocab = self.tokenizer.get_vocab()
        if word.startswith("▁") and word in vocab:
            return vocab[word]
        ids = self.tokenizer(word, add_special_tokens=False)["input_ids"]
        pieces = self.tokenizer.convert_ids_to_tokens(ids)
        if not ids or not pieces[0].strip("▁ "):
            raise BeirxError(f"relevance token {word!r} has no usable first piece in {self.files.folder} "
                             f"(pieces: {pieces}); pass true_token/false_token as vocabulary pieces")
        if len(ids) > 1:
            log.warning("monoT5 relevance token %r splits into %s; using the first piece %r (id %d)",
                        word, pieces, pieces[0], ids[0])
        return ids[0]

    def score_pairs(self, pairs: list[Pair], progress: Callable[[int], None]) -> list[float]:
        torch = torch_module()
        rows = self._encode(pairs)
        scores = [0.0] * len(pairs)
        for batch in length_batches([len(r) for r in rows], self.batch_size, self.sort_by_length):
            inputs = self.tokenizer.pad({"input_ids": [rows[i] for i in batch]}, padding_side="right",
                                        return_tensors="pt").to(self.device)
            start = torch.full((len(batch), 1), self._decoder_start, dtype=torch.long, device=self.device)
            with torch.inference_mode():
                logits = self.model(**inputs, decoder_input_ids=start).logits[:, 0, [self.false_id, self.true_id]]
                values = torch.log_softmax(logits.float(), dim=-1)[:, 1]
            for i, value in zip(batch, values.tolist()):
                scores[i] = value
            progress(len(batch))
        return scores

    def _prompt(self, query: str, doc: str) -> str:
        return self._head.replace("{query}", query) + doc + self._tail

    def _encode(self, pairs: list[Pair]) -> list[list[int]]:
        texts = [self._prompt(q.text, d.joined()) for q, d in pairs]
        enc = self.tokenizer(texts, return_offsets_mapping=True, verbose=False)  # lengths checked below
        rows = []
        for (query, doc), ids, offsets in zip(pairs, enc["input_ids"], enc["offset_mapping"]):
            if len(ids) > self.max_length:
                self.truncated["document"] += 1
                ids = self._shorten(query.text, doc.joined(), ids, offsets)
            rows.append(ids)
        return rows

    def _shorten(self, query: str, doc: str, ids: list[int], offsets: list[tuple[int, int]]) -> list[int]:
        """Drop document tokens from the end until the prompt fits; the query and cue stay whole."""
        for _ in range(_MAX_CUTS):
            start = len(self._head.replace("{query}", query))
            ends = sorted(e for s, e in offsets if s >= start and start < e <= start + len(doc))
            keep = len(ends) - (len(ids) - self.max_length)
            # The longest prefix ending on a token boundary with at most ``keep`` tokens (pieces of one
            # character, like ``▁`` + ``<unk>``, share an end and can only go together).
            cut = max((e for e in ends if bisect.bisect_right(ends, e) <= keep), default=start)
            doc = doc[:cut - start]
            text = self._prompt(query, doc)
            enc = self.tokenizer(text, return_offsets_mapping=True, verbose=False)
            ids, offsets = enc["input_ids"], enc["offset_mapping"]
            if len(ids) <= self.max_length:
                return ids
            if not doc:
                break
        log.warning("monoT5 prompt still longer than %d tokens without its document (query of %d characters); "
                    "cutting its end", self.max_length, len(query))
        return self.tokenizer(text, truncation=True, max_length=self.max_length)["input_ids"]


def _load(transformers, folder, device, dtype):
    """``(tokenizer, model)`` of a sequence-to-sequence checkpoint, the model on ``device`` in ``dtype``."""
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(folder)
    if not model.config.is_encoder_decoder:
        raise BeirxError(f"{folder}: {type(model).__name__} is not a sequence-to-sequence model")
    return transformers.AutoTokenizer.from_pretrained(folder), model.to(device, dtype).eval()
