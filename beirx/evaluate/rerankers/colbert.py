"""ColBERT reranking by late interaction (Khattab & Zaharia 2020, "ColBERT: Efficient and Effective Passage
Search via Contextualized Late Interaction over BERT"; ColBERTv2, Santhanam et al. 2022).

Query and document are encoded separately into one vector per token: backbone hidden states, the
checkpoint's linear projection(s), then L2 normalisation. The score is MaxSim,
``sum over query tokens q of max over document tokens d of q . d`` (cosine, as the vectors are unit).

- Markers: a query marker (``[unused0]`` in colbert-ai BERT checkpoints, the added ``[Q] `` token in
  PyLate) and a document marker follow ``[CLS]``; see :mod:`.colbert_checkpoint` for how each layout
  places them. When a colbert-ai checkpoint names a marker its tokenizer lacks (an XLM-R backbone
  keeps no ``[unusedN]`` tokens), colbert-ai's ``convert_tokens_to_ids`` yields the unknown-token id and
  that is what the model was trained with; beirx does the same, with a warning. PyLate prefixes must be
  tokens of the saved tokenizer (PyLate would otherwise add them with random embeddings).
- Query augmentation: queries are padded to ``query_maxlen`` with ``[MASK]`` tokens that the encoder
  does not attend to (unless the checkpoint says ``attend_to_mask_tokens`` /
  ``attend_to_expansion_tokens``) but whose output vectors take part in MaxSim.
- Documents: cut to ``doc_maxlen`` tokens (markers and special tokens included; default the checkpoint's,
  else 180 as in BEIR-PL; ``max_length`` overrides) with the count of cut documents logged; punctuation
  tokens (the skiplist) and padding are left out of MaxSim, as colbert-ai and PyLate do.
- Document token embeddings are not stored: pairs are grouped by document, each candidate document is
  encoded once per rerank call (in length-sorted batches) and scored at once against every query that
  retrieved it, then dropped. Memory stays bounded by one batch at any corpus size, and repeated runs
  reuse the on-disk pair-score cache instead (a document's vectors are ~100x the size of its scores).
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from beirx.argtypes import positive_int
from beirx.errors import BeirxError, require
from beirx.evaluate.rerankers.base import Pair, PairwiseReranker, common_options
from beirx.evaluate.rerankers.colbert_checkpoint import read_checkpoint
from beirx.evaluate.rerankers.inference import length_batches, resolve_dtype, torch_device, torch_module
from beirx.models import loaded
from beirx.models.files import resolve_model
from beirx.options import Option

log = logging.getLogger(__name__)


class ColbertReranker(PairwiseReranker):
    OPTIONS = (*common_options(batch_size=32), Option("query_maxlen", positive_int, flag=""))
    name = "colbert"

    def __init__(self, model: str, *, lang: str = "en", batch_size: int = 32, max_length: int | None = None,
                 device: str | None = None, show_progress: bool = True, use_cache: bool = True,
                 revision: str | None = None, dtype: str = "auto", query_maxlen: int | None = None,
                 sort_by_length: bool = True):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        transformers = require("transformers", "neural", "ColBERT reranking")
        torch = torch_module()
        self.files = resolve_model(model, revision)
        self.checkpoint = ckpt = read_checkpoint(self.files.folder)
        self.device = torch_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.batch_size = batch_size
        self.sort_by_length = sort_by_length
        self.doc_maxlen = int(max_length or ckpt.doc_maxlen)
        self.query_maxlen = int(query_maxlen or ckpt.query_maxlen)
        key = ("colbert", str(self.files.folder), str(self.device), str(self.dtype))
        self.tokenizer, self.backbone, self.projection = loaded.cached(
            key, lambda: _load(transformers, self.files.folder, ckpt, self.device, self.dtype))
        tok = self.tokenizer

        self.query_marker_id = self._marker_id(ckpt.query_marker)
        self.doc_marker_id = self._marker_id(ckpt.doc_marker)
        self.expansion_id = tok.mask_token_id if tok.mask_token_id is not None else tok.eos_token_id
        if ckpt.query_expansion and self.expansion_id is None:
            raise BeirxError(f"{self.files.folder}: query augmentation needs a mask (or eos) token; the tokenizer "
                             "has neither")
        if ckpt.layout == "colbert-ai":  # colbert-ai: the first piece of each symbol, tokenized alone
            firsts = (tok(w, add_special_tokens=False)["input_ids"][:1] for w in ckpt.skiplist_words)
            self.skiplist = sorted({ids[0] for ids in firsts if ids})
        else:  # PyLate: convert_tokens_to_ids of each word
            self.skiplist = sorted({tok.convert_tokens_to_ids(w) for w in ckpt.skiplist_words})
        self._skiplist_tensor = torch.tensor(self.skiplist, dtype=torch.long)  # CPU, where tokenization happens

    def describe(self) -> dict[str, Any]:
        ckpt = self.checkpoint
        return {"reranker": self.name, "model": self.files.name, "revision": self.files.revision,
                "layout": ckpt.layout, "dim": ckpt.dim, "query_maxlen": self.query_maxlen,
                "doc_maxlen": self.doc_maxlen, "query_marker": ckpt.query_marker, "doc_marker": ckpt.doc_marker,
                "query_marker_id": self.query_marker_id, "doc_marker_id": self.doc_marker_id,
                "query_expansion": ckpt.query_expansion, "attend_to_expansion": ckpt.attend_to_expansion,
                "skiplist_ids": len(self.skiplist), "lowercase": ckpt.do_lower_case, "score": "MaxSim (cosine)",
                "dtype": str(self.dtype).removeprefix("torch."), "batch_size": self.batch_size,
                "device": self.device.type}

    def _marker_id(self, marker: str | None) -> int | None:
        if marker is None:
            return None
        tok = self.tokenizer
        token_id = tok.convert_tokens_to_ids(marker)
        if token_id is None or (token_id == tok.unk_token_id and marker != tok.unk_token):
            if self.checkpoint.layout == "pylate":
                raise BeirxError(f"{self.files.folder}: prefix {marker!r} is not a token of the saved tokenizer; "
                                 "PyLate would add it with a random embedding, so its scores cannot be reproduced")
            log.warning("%s: marker %r is not in the tokenizer's vocabulary; using the unknown-token id %s as "
                        "colbert-ai does", self.files.folder, marker, tok.unk_token_id)
            token_id = tok.unk_token_id
        return token_id

    # -- encoding --------------------------------------------------------------------------------
    def _texts(self, texts: list[str]) -> list[str]:
        if self.checkpoint.layout == "colbert-ai":
            return [". " + t for t in texts]  # placeholder that the marker overwrites
        return [t.strip().lower() if self.checkpoint.do_lower_case else t.strip() for t in texts]

    def _tokenize(self, texts: list[str], is_query: bool):
        """``(input_ids, attention_mask, keep)``: keep marks the token vectors that enter MaxSim."""
        torch = torch_module()
        ckpt = self.checkpoint
        marker = self.query_marker_id if is_query else self.doc_marker_id
        max_length = self.query_maxlen if is_query else self.doc_maxlen
        insert = ckpt.layout == "pylate" and marker is not None
        expand = is_query and ckpt.query_expansion
        enc = self.tokenizer(self._texts(texts), padding="max_length" if expand else "longest", truncation=True,
                             max_length=max_length - insert, return_tensors="pt")
        ids, attn = enc["input_ids"], enc["attention_mask"]
        if insert:
            column = torch.full((len(texts), 1), marker, dtype=ids.dtype)
            ids = torch.cat([ids[:, :1], column, ids[:, 1:]], dim=1)
            attn = torch.cat([attn[:, :1], torch.ones_like(column), attn[:, 1:]], dim=1)
        elif marker is not None:
            ids[:, 1] = marker
        padding = attn == 0
        if expand:
            ids = ids.masked_fill(padding, self.expansion_id)
            keep = torch.ones_like(padding)
            if ckpt.attend_to_expansion:
                attn = torch.ones_like(attn)
        elif is_query:
            keep = ~padding
        else:
            keep = ~padding & ~torch.isin(ids, self._skiplist_tensor)
        return ids.to(self.device), attn.to(self.device), keep.to(self.device)

    def _encode(self, texts: list[str], is_query: bool):
        """Unit token vectors ``[batch, tokens, dim]`` (float32) and the ``keep`` mask."""
        torch = torch_module()
        ids, attn, keep = self._tokenize(texts, is_query)
        with torch.inference_mode():
            hidden = self.backbone(input_ids=ids, attention_mask=attn)[0]
            vectors = torch.nn.functional.normalize(self.projection(hidden).float(), p=2, dim=-1)
        return vectors, keep

    def query_vectors(self, texts: list[str]) -> list[Any]:
        """Each query's MaxSim vectors ``[tokens, dim]`` (augmentation tokens included)."""
        out = []
        for batch in length_batches([len(t) for t in texts], self.batch_size, self.sort_by_length):
            vectors, keep = self._encode([texts[i] for i in batch], is_query=True)
            out += [(i, v[k]) for i, v, k in zip(batch, vectors, keep)]
        return [v for _, v in sorted(out, key=lambda item: item[0])]

    # -- scoring ---------------------------------------------------------------------------------
    def score_pairs(self, pairs: list[Pair], progress: Callable[[int], None]) -> list[float]:
        torch = torch_module()
        query_texts = list(dict.fromkeys(q.text for q, _ in pairs))
        query_index = {t: i for i, t in enumerate(query_texts)}
        queries = self.query_vectors(query_texts)
        long_queries = self._token_counts(query_texts, is_query=True)
        self.truncated["query"] += sum(long_queries[query_index[q.text]] > self.query_maxlen for q, _ in pairs)

        by_doc: dict[str, list[int]] = defaultdict(list)  # document text -> pair positions
        for n, (_, doc) in enumerate(pairs):
            by_doc[doc.joined()].append(n)
        doc_texts = list(by_doc)
        lengths = self._token_counts(doc_texts, is_query=False)
        self.truncated["document"] += sum(len(by_doc[t]) for t, n in zip(doc_texts, lengths) if n > self.doc_maxlen)

        scores = [0.0] * len(pairs)
        capped = [min(n, self.doc_maxlen) for n in lengths]
        for batch in length_batches(capped, self.batch_size, self.sort_by_length):
            doc_vectors, doc_keep = self._encode([doc_texts[i] for i in batch], is_query=False)
            rows = [(n, row) for row, i in enumerate(batch) for n in by_doc[doc_texts[i]]]
            q = [queries[query_index[pairs[n][0].text]] for n, _ in rows]
            values = maxsim(torch.nn.utils.rnn.pad_sequence(q, batch_first=True),
                            torch.nn.utils.rnn.pad_sequence([torch.ones(len(v), dtype=torch.bool, device=v.device)
                                                             for v in q], batch_first=True),
                            doc_vectors[[row for _, row in rows]], doc_keep[[row for _, row in rows]])
            for (n, _), value in zip(rows, values.tolist()):
                scores[n] = value
            progress(len(rows))
        return scores

    def _token_counts(self, texts: list[str], is_query: bool) -> list[int]:
        """Untruncated lengths as the model would see them (special tokens and marker included)."""
        marker = self.query_marker_id if is_query else self.doc_marker_id
        extra = int(self.checkpoint.layout == "pylate" and marker is not None)
        return [len(ids) + extra for ids in self.tokenizer(self._texts(texts), verbose=False)["input_ids"]]


def maxsim(queries, query_keep, docs, doc_keep):
    """MaxSim of aligned rows: ``sum_i keep_q[i] * max_{j: keep_d[j]} q_i . d_j`` for each row.

    ``queries``: ``[n, Lq, dim]``, ``docs``: ``[n, Ld, dim]``, masks ``[n, Lq]`` / ``[n, Ld]`` (bool).
    """
    sim = queries @ docs.transpose(1, 2)
    sim = sim.masked_fill(~doc_keep[:, None, :], float("-inf")).max(dim=-1).values
    return sim.masked_fill(~query_keep, 0.0).sum(dim=-1)


def _load(transformers, folder, ckpt, device, dtype):
    """``(tokenizer, backbone, projection)`` of a checkpoint, the modules on ``device`` in ``dtype``; refused
    when backbone weights are missing (it would run with random ones)."""
    with _quiet_transformers(transformers):
        backbone, info = transformers.AutoModel.from_pretrained(ckpt.backbone, output_loading_info=True)
    missing = sorted(k for k in info["missing_keys"] if not k.startswith("pooler."))
    if missing:
        raise BeirxError(f"{folder}: {len(missing)} backbone weights are missing from the checkpoint "
                         f"(e.g. {missing[0]}); it would run with random weights")
    return (transformers.AutoTokenizer.from_pretrained(ckpt.backbone), backbone.to(device, dtype).eval(),
            ckpt.projection.to(device, dtype).eval())


@contextlib.contextmanager
def _quiet_transformers(transformers):
    """Silence the load report that lists ``linear.weight`` as unexpected (we read it ourselves)."""
    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers.logging.set_verbosity(level)
