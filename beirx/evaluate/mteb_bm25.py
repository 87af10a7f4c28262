"""beirx's BM25 as an MTEB model: any MTEB retrieval task scored with a language pack's Lucene analyzer.

MTEB's own lexical baseline (``mteb/baseline-bm25s``) tokenizes on whitespace with a Snowball stemmer and has
no Polish stemmer at all; beirx's language packs give Lucene's tokens (Polish: Stempel, as Elasticsearch's
analysis-stempel plugin; English: EnglishAnalyzer ...) and its BM25 scores Lucene's way (k1 1.2, b 0.75 and
``multifield`` title/text by default, as BEIR and BEIR-PL ran Elasticsearch). So::

    import mteb
    from beirx.evaluate import mteb_bm25

    model = mteb_bm25.model(lang="pl")                 # or model() to take each task's own language
    mteb.evaluate(model, mteb.get_tasks(tasks=["SciFact-PL"]))

The object implements mteb's ``SearchProtocol`` (``index``/``search``/``mteb_model_meta``): the corpus is
written once to a temporary BEIR folder (streamed, never held as Python objects) and indexed by
:class:`~beirx.evaluate.retrievers.bm25.BM25Retriever` exactly as ``beirx eval --retriever bm25`` indexes it,
so on the same data both give the same run and the same scores (the index is cached in ``$BEIRX_HOME``
too). Keyword options are BM25's (``k1``, ``b``, ``fields`` ...). Reranking tasks (``top_ranked``) get every
candidate document scored (0 when it shares no term with the query).

It lives in ``evaluate`` (not ``publish``, which never imports the evaluation stage): it *is* beirx's BM25
evaluation, driven by mteb. ``beirx mteb task DATASET --lang pl --evaluate bm25`` runs it from the command line.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from beirx import __version__
from beirx.data.cache import cache_dir
from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.errors import BeirxError, require
from beirx.language_packs import LanguagePack, get_pack, list_packs

log = logging.getLogger(__name__)

CITATION = """@inproceedings{robertson2009bm25,
  title={The Probabilistic Relevance Framework: BM25 and Beyond},
  author={Robertson, Stephen and Zaragoza, Hugo},
  booktitle={Foundations and Trends in Information Retrieval},
  volume={3}, number={4}, pages={333--389}, year={2009}
}"""


def model(lang: str | None = None, **bm25_params: Any) -> "BeirxBM25":
    """beirx's BM25 for mteb; ``lang`` fixes the language pack (any code, e.g. ``pl``), else each task's own."""
    return BeirxBM25(lang=lang, **bm25_params)


def model_meta(lang: str | None = None, **bm25_params: Any):
    """The ``mteb.ModelMeta`` of :func:`model` (``meta.load_model()`` builds it)."""
    require("mteb", "mteb", "beirx's BM25 as an MTEB model")
    from mteb.models.model_meta import ModelMeta

    packs = [get_pack(lang)] if lang else list_packs()
    params = {"lang": lang, **bm25_params}
    return ModelMeta(
        loader=_load, loader_kwargs=params, name=f"beirx/bm25-{packs[0].code}" if lang else "beirx/bm25",
        revision=f"beirx-{__version__}", release_date=None,
        languages=sorted({p.mteb_code for p in packs if p.mteb_code}), n_parameters=0, n_embedding_parameters=0,
        memory_usage_mb=None, max_tokens=None, embed_dim=None, license="apache-2.0", open_weights=True,
        public_training_code=None, public_training_data=None, framework=[], similarity_fn_name=None,
        use_instructions=False, training_datasets=set(), model_type=["sparse"], citation=CITATION,
        reference="https://doi.org/10.1561/1500000019",
        experiment_kwargs=dict(bm25_params) or None)


def _load(model_name: str | None = None, revision: str | None = None, **params: Any) -> "BeirxBM25":
    return BeirxBM25(**params)


class BeirxBM25:
    """mteb's ``SearchProtocol`` over :class:`~beirx.evaluate.retrievers.bm25.BM25Retriever` (see the module doc)."""

    def __init__(self, lang: str | None = None, use_cache: bool = True, **bm25_params: Any):
        self.lang = lang
        self.use_cache = use_cache
        self.bm25_params = bm25_params
        self.retriever = None
        self._positions: dict[str, int] | None = None
        self._meta = None

    @property
    def mteb_model_meta(self):
        if self._meta is None:
            self._meta = model_meta(self.lang, **self.bm25_params)
        return self._meta

    @mteb_model_meta.setter
    def mteb_model_meta(self, meta) -> None:  # ModelMeta.load_model() sets the meta it loaded from
        self._meta = meta

    def pack_for(self, task_metadata, hf_subset: str) -> LanguagePack:
        """The given language's pack, else the task subset's one language (MTEB codes like ``pol-Latn``)."""
        if self.lang:
            return get_pack(self.lang)
        langs = task_metadata.eval_langs
        langs = langs.get(hf_subset, []) if isinstance(langs, dict) else langs
        codes = sorted({code.split("-")[0] for code in langs})
        if len(codes) != 1:
            raise BeirxError(f"task {task_metadata.name} [{hf_subset}] has languages {langs or 'none'}: pass "
                             "mteb_bm25.model(lang=...) to choose the analyzer")
        return get_pack(langs[0])

    def index(self, corpus, *, task_metadata, hf_split: str, hf_subset: str, encode_kwargs: dict | None = None,
              num_proc: int | None = None, **kwargs: Any) -> None:
        from beirx.evaluate.retrievers.bm25 import BM25Retriever

        pack = self.pack_for(task_metadata, hf_subset)
        root = Path(tempfile.mkdtemp(prefix="mteb-bm25-", dir=cache_dir("indexes")))
        try:
            with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
                for row in corpus:  # streamed from the Arrow table
                    fh.write(json.dumps({"_id": str(row["id"]), "title": row.get("title") or "",
                                         "text": row.get("text") or ""}, ensure_ascii=False) + "\n")
            (root / "queries.jsonl").write_text("", encoding="utf-8")
            name = f"mteb-{task_metadata.name}-{hf_subset}-{hf_split}"
            self.retriever = BM25Retriever(pack, use_cache=self.use_cache, show_progress=False, **self.bm25_params)
            self.retriever.index(BeirDataset(root, name=name, lang=pack.code))
        finally:
            shutil.rmtree(root, ignore_errors=True)  # the index is in memory (and in the cache)
        self._positions = None
        log.info("mteb: indexed %d documents of %s [%s/%s] with the %s analyzer", len(self.retriever.doc_ids),
                 task_metadata.name, hf_subset, hf_split, pack.code)

    def search(self, queries, *, task_metadata, hf_split: str, hf_subset: str, top_k: int,
               encode_kwargs: dict | None = None, top_ranked: dict[str, list[str]] | None = None,
               num_proc: int | None = None, **kwargs: Any) -> dict[str, dict[str, float]]:
        if self.retriever is None:
            raise BeirxError("index(corpus) must run before search(queries)")
        texts = {str(row["id"]): row["text"] for row in queries}
        if not top_ranked:
            return self.retriever.search({qid: Query(qid, text) for qid, text in texts.items()}, top_k)
        if self._positions is None:
            self._positions = {doc_id: i for i, doc_id in enumerate(self.retriever.doc_ids)}
        results = {}
        for qid, text in texts.items():
            scores = self.retriever.score_all(text)
            candidates = [d for d in top_ranked.get(qid, []) if d in self._positions]
            results[qid] = {d: 0.0 if scores is None else float(scores[self._positions[d]]) for d in candidates}
        return results
