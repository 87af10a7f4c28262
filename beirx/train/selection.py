"""Keep the best model of a run: the base and each checkpoint evaluated on a dev slice held out of the training queries.

Fine-tuning can make a good encoder worse: one epoch of the default recipe took multilingual-e5-small from 0.6616 to
0.6414 nDCG@10 on SciFact (docs/reproducing.md: at 512 training tokens, all else equal, 0.0426 below the same epoch
at 64). A user who does not read the card would ship the worse model. So by default a seeded slice of the training
split's queries (:data:`DEV_FRACTION` of them, at most :data:`DEV_MAX_QUERIES`; every judgement of a dev query goes
with it) is held out of training, the base model is evaluated on it before the first step, each checkpoint after
it is saved (about a quarter of the run apart), and the best is kept, the base included: a checkpoint must score
strictly higher than the base and every earlier checkpoint. When none beats the base, the saved model is the base
model, and the command says so in one line. The dev curve and the choice go to the card and the training record.

The evaluation is ``beirx eval``'s own: the bi-encoder ranks the corpus by dense retrieval
(:class:`~beirx.evaluate.retrievers.dense.DenseRetriever`'s encoding and exact search, the model's prompts,
similarity and its own maximum length, not the training length), the cross-encoder reranks the top
:data:`RERANK_DEPTH` of the corpus's BM25 (the reranker of ``beirx eval --reranker cross-encoder``), and nDCG@10
comes from pytrec_eval (:func:`beirx.evaluate.metrics.evaluate`, with the dataset's identical-ID rule). The
corpus is the whole corpus up to :data:`DEV_CORPUS_LIMIT` documents; a larger one (MS MARCO's 8.8M passages would
be encoded at every checkpoint) is restricted, and the card says so: every document judged for a dev query, the
:data:`RERANK_DEPTH` best BM25 documents of each dev query, and a seeded random sample of the rest up to the
limit. The same documents serve the base and every checkpoint, so the comparison stays like for like; the
absolute figures are then those of the sample, not of the corpus.

Resuming: the base's scores are sealed with a copy of the base model in ``checkpoints/base``
(:mod:`beirx.train.checkpoints`), each checkpoint's scores live in the trainer's state, saved with the checkpoint,
so a killed run resumes without evaluating anything twice.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from beirx.data.dataset import BeirDataset
from beirx.data.records import Qrels, Query
from beirx.evaluate.retrievers.dense import DenseRetriever
from beirx.language_packs import LanguagePack
from beirx.models.files import ModelFiles
from beirx.train.examples import Example

log = logging.getLogger(__name__)

DEV_FRACTION = 0.1
DEV_MAX_QUERIES = 1000
MIN_DEV_QUERIES = 5        # fewer cannot tell checkpoints apart: no selection, said in the log and the card
CHECKPOINTS = 4            # evaluation points over a run by default (every quarter, at most SAVE_STEPS apart)
DEV_CORPUS_LIMIT = 200_000  # documents encoded per evaluation; a larger corpus is sampled (module docstring)
RERANK_DEPTH = 100         # BM25 documents per dev query reranked by a cross-encoder, and pooled for a sample
METRIC = "ndcg@10"
PREFIX = "dev_"            # the trainer logs eval_dev_ndcg@10, eval_dev_recall@100
BEST = "eval_" + PREFIX + METRIC


@dataclass
class DevSlice:
    """The held-out queries, their judgements, and how they were drawn."""

    split: str
    queries: dict[str, Query]
    qrels: Qrels
    of: int                 # queries of the split with a positive judgement and a text
    fraction: float
    seed: int
    documents: list[str] | None = None  # None: the whole corpus; else the restricted corpus (module docstring)
    corpus_size: int = 0

    def describe(self) -> dict[str, Any]:
        corpus = (f"the whole corpus ({self.corpus_size:,} documents)" if self.documents is None else
                  f"{len(self.documents):,} of the corpus's {self.corpus_size:,} documents: every document judged "
                  f"for a dev query, the top {RERANK_DEPTH} BM25 documents of each, and a random sample (seed "
                  f"{self.seed}) of the rest; the same for the base and every checkpoint")
        return {"split": self.split, "num_queries": len(self.queries), "of_queries": self.of,
                "fraction": self.fraction, "seed": self.seed, "metric": "nDCG@10 (pytrec_eval)", "corpus": corpus,
                "query_ids": sorted(self.queries)}


def dev_size(candidates: int, fraction: float, max_queries: int) -> int:
    """How many of ``candidates`` queries the dev slice holds: ``fraction`` of them, rounded, at most
    ``max_queries``; 0 when that is under :data:`MIN_DEV_QUERIES`."""
    size = min(max_queries, int(math.floor(candidates * fraction + 0.5)))
    return size if size >= MIN_DEV_QUERIES else 0


def hold_out(dataset: BeirDataset, split: str, examples: list[Example], fraction: float, max_queries: int,
             seed: int) -> tuple[list[Example], DevSlice | None, str | None]:
    """``(training examples, the dev slice, None)``, or ``(examples, None, why there is none)``: a seeded sample of
    the queries of ``examples`` (queries with a positive judgement and a text) and every judgement of theirs."""
    candidates = sorted({e.query_id for e in examples})
    if fraction == 0:
        return examples, None, "--dev-fraction 0: no dev slice; the last checkpoint is kept"
    size = dev_size(len(candidates), fraction, max_queries)
    if not size:
        reason = (f"{fraction:g} of {len(candidates)} training queries is fewer than {MIN_DEV_QUERIES}: no dev "
                  "slice, so the last checkpoint is kept whether or not it beats the base")
        log.warning("%s (raise --dev-fraction, or train on more queries)", reason)
        return examples, None, reason
    chosen = set(random.Random(seed).sample(candidates, size))
    queries, qrels = dataset.queries_for_split(split)
    dev = DevSlice(split, {q: queries[q] for q in sorted(chosen)}, {q: dict(qrels[q]) for q in sorted(chosen)},
                   len(candidates), fraction, seed)
    kept = [e for e in examples if e.query_id not in chosen]
    log.info("dev slice: %d of %d %s queries held out (seed %d); training on the other %d", size, len(candidates),
             split, seed, len(candidates) - size)
    return kept, dev, None


def restrict_corpus(dev: DevSlice, dataset: BeirDataset, bm25) -> None:
    """Set ``dev.documents`` (None: the whole corpus) and ``dev.corpus_size``; ``bm25``: an indexed
    :class:`~beirx.evaluate.retrievers.bm25.BM25Retriever`, or a callable making one (used for a large corpus)."""
    from beirx.data.doc_store import DocStore

    with DocStore.for_dataset(dataset) as store:
        dev.corpus_size = len(store)
        if dev.corpus_size <= DEV_CORPUS_LIMIT:
            return
        retriever = bm25() if callable(bm25) else bm25
        wanted = {d for docs in dev.qrels.values() for d in docs if d in store}
        for docs in retriever.search(dev.queries, RERANK_DEPTH).values():
            wanted.update(docs)
        rest = [d for d in store if d not in wanted]
        fill = max(0, DEV_CORPUS_LIMIT - len(wanted))
        wanted.update(random.Random(dev.seed).sample(rest, min(fill, len(rest))))
        dev.documents = sorted(wanted)
    log.info("dev evaluation on %d of %d documents (the corpus is over %d)", len(dev.documents), dev.corpus_size,
             DEV_CORPUS_LIMIT)


def scores(dev: DevSlice, run, ignore_identical_ids: bool) -> dict[str, float]:
    """nDCG@10 and Recall@100 of ``run`` on the dev judgements (pytrec_eval, through beirx's metrics)."""
    from beirx.evaluate.metrics import evaluate

    found = evaluate(dev.qrels, run, k_values=(10, 100), ignore_identical_ids=ignore_identical_ids).metrics
    return {METRIC: found["NDCG@10"], "recall@100": found["Recall@100"]}


class LoadedDense(DenseRetriever):
    """Dense retrieval with a model already in memory (the one being trained from ``files``), at ``files``' own
    maximum length, prompts and similarity. ``use_cache`` only for the untrained model: its embeddings are the
    base folder's, and ``beirx eval`` and ``--evaluate`` reuse them."""

    def __init__(self, pack: LanguagePack, files: ModelFiles, model, **options: Any):
        super().__init__(pack, model=str(files.folder), **options)
        self.loaded = model

    @property
    def precision(self) -> str:
        return "float32"  # the weights being trained, whatever the device

    def model(self):
        self.loaded.max_seq_length = self.max_length
        return self.loaded

    def index_documents(self, dataset: BeirDataset, doc_ids: list[str]) -> None:
        """Encode only ``doc_ids`` (a restricted dev corpus), in memory."""
        from beirx.data.doc_store import DocStore, DocTexts
        from beirx.evaluate.retrievers.dense import document_text

        with DocStore.for_dataset(dataset) as store:
            self._encode_texts(doc_ids, DocTexts(store, doc_ids, document_text), None, {})


def dense_scorer(dev: DevSlice, dataset: BeirDataset, pack: LanguagePack, base: ModelFiles, batch_size: int,
                 device: str, ignore_identical_ids: bool, show_progress: bool) -> Callable[..., dict[str, float]]:
    """``score(model, base=False)``: the dev scores of a bi-encoder in memory (``base``: the untrained one)."""
    def score(model, base_model: bool = False) -> dict[str, float]:
        model.eval()  # no dropout; the trainer sets training mode again at its next step
        length = model.max_seq_length  # the training length, restored after
        retriever = LoadedDense(pack, base, model, batch_size=batch_size, device=device, show_progress=show_progress,
                                use_cache=base_model and dev.documents is None)
        try:
            if dev.documents is None:
                retriever.index(dataset)
            else:
                retriever.index_documents(dataset, dev.documents)
            run = retriever.search(dev.queries, 100 + int(ignore_identical_ids))
        finally:
            model.max_seq_length = length
        return scores(dev, run, ignore_identical_ids)

    return score


def rerank_scorer(dev: DevSlice, dataset: BeirDataset, pack: LanguagePack, base: ModelFiles, bm25, batch_size: int,
                  max_length: int, device: str, ignore_identical_ids: bool,
                  show_progress: bool) -> Callable[..., dict[str, float]]:
    """``score(model, base=False)``: the dev scores of a cross-encoder in memory reranking BM25's top
    :data:`RERANK_DEPTH` (``bm25``: an indexed BM25 retriever), at the base model's ``max_length``."""
    from beirx.data.doc_store import DocStore
    from beirx.evaluate.rerankers.cross_encoder import CrossEncoderReranker
    from beirx.evaluate.runs import drop_identical_ids, truncate

    first = bm25.search(dev.queries, RERANK_DEPTH + int(ignore_identical_ids))
    if ignore_identical_ids:
        first = truncate(drop_identical_ids(first), RERANK_DEPTH)

    def score(model, base_model: bool = False) -> dict[str, float]:
        model.eval()  # no dropout; the trainer sets training mode again at its next step
        reranker = CrossEncoderReranker(str(base.folder), lang=pack.code, batch_size=batch_size, max_length=max_length,
                                        device=device, show_progress=show_progress, use_cache=False, encoder=model)
        with DocStore.for_dataset(dataset) as corpus:
            run = reranker.rerank(dev.queries, corpus, first, depth=RERANK_DEPTH)
        return scores(dev, run, ignore_identical_ids)

    return score


def evaluator(score: Callable[..., dict[str, float]], others=None):
    """A sentence-transformers evaluator for the trainer: the dev scores (logged as ``eval_dev_...``, the metric
    the trainer tracks as the best) and those of ``others`` (the ``--eval-split`` pool)."""
    from sentence_transformers.base.evaluation.evaluator import BaseEvaluator

    class DevEvaluator(BaseEvaluator):
        def __init__(self):
            super().__init__()
            self.primary_metric = PREFIX + METRIC

        def __call__(self, model, output_path=None, epoch=-1, steps=-1):
            found = {PREFIX + name: value for name, value in score(model).items()}
            if others is not None:
                found.update(others(model, output_path=output_path, epoch=epoch, steps=steps))
            return found

    return DevEvaluator()


def curve(base_scores: dict[str, float], log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The dev scores of the base (step 0) and of each evaluated checkpoint, in step order."""
    points = {0: {"step": 0, "model": "base", **{k: round(v, 6) for k, v in base_scores.items()}}}
    for entry in log_history:
        if BEST in entry:
            points[entry["step"]] = {"step": entry["step"], "model": f"checkpoint-{entry['step']}",
                                     **{k[len("eval_" + PREFIX):]: round(float(v), 6) for k, v in entry.items()
                                        if k.startswith("eval_" + PREFIX)}}
    return [points[step] for step in sorted(points)]


def best(points: list[dict[str, Any]]) -> dict[str, Any]:
    """The first point no later point beats strictly: the base unless a checkpoint scores higher."""
    chosen = points[0]
    for point in points[1:]:
        if point[METRIC] > chosen[METRIC]:
            chosen = point
    return chosen


def verdict(points: list[dict[str, Any]], kept: dict[str, Any]) -> str:
    """The choice in one line, for the terminal, the log and the card."""
    base = points[0][METRIC]
    if kept["step"] == 0:
        top = max(points[1:], key=lambda p: p[METRIC], default=None)
        beaten = f"best checkpoint {top['model']} {top[METRIC]:.4f}" if top else "no checkpoint was evaluated"
        return (f"no checkpoint beat the base model on the dev slice (nDCG@10 base {base:.4f}, {beaten}): the "
                "output is the base model")
    return f"kept {kept['model']}: dev nDCG@10 {kept[METRIC]:.4f} against the base's {base:.4f}"
