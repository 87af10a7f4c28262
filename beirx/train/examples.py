"""Training examples from a split's qrels: one (query, positive document) pair per judgement with score > 0.

Graded qrels (score 2 in TREC-COVID, 1 in SciFact) all count as positives, as in BEIR's training scripts;
score 0 judgements are not positives (and are never used as negatives either, see
:mod:`beirx.train.negatives`). Order is the qrels file's order, so the data (and, with the trainer's seed,
the batches) are the same on every run. Texts are what the model sees at evaluation time: the query text,
and the document as dense retrieval encodes it (:func:`beirx.evaluate.retrievers.dense.document_text`).
Only the texts of documents used in training are kept, so memory grows with the training set, not the corpus.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from beirx.data.dataset import BeirDataset
from beirx.data.doc_store import DocStore
from beirx.data.records import Qrels
from beirx.errors import BeirxError
from beirx.evaluate.retrievers.dense import document_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Example:
    """One training row: a query, one of its judged positives and (optionally) mined negatives (IDs)."""

    query_id: str
    positive_id: str
    negative_ids: tuple[str, ...] = ()


def judged_positives(qrels: Qrels) -> dict[str, set[str]]:
    """``{query: {documents with score > 0}}`` (queries without a positive are left out)."""
    found = {qid: {did for did, score in docs.items() if score > 0} for qid, docs in qrels.items()}
    return {qid: docs for qid, docs in found.items() if docs}


def all_judged_positives(dataset: BeirDataset) -> dict[str, set[str]]:
    """Positives of every query in every split of ``dataset``: what a mined negative must never be."""
    merged: dict[str, set[str]] = {}
    for split in dataset.splits():
        for qid, docs in judged_positives(dataset.qrels(split)).items():
            merged.setdefault(qid, set()).update(docs)
    return merged


def positive_pairs(dataset: BeirDataset, split: str) -> list[Example]:
    """One :class:`Example` per positive judgement of ``split`` whose query has text, in qrels order."""
    queries, qrels = dataset.queries_for_split(split)
    examples = [Example(qid, did) for qid, docs in qrels.items() if qid in queries
                for did, score in docs.items() if score > 0]
    if not examples:
        raise BeirxError(f"{dataset.qrels_path(split)}: no positive judgement (score > 0) with a query text; "
                         "nothing to train on")
    return examples


def query_texts(dataset: BeirDataset, examples: Iterable[Example]) -> dict[str, str]:
    """``{query_id: text}`` for the queries of ``examples``."""
    return {e.query_id: dataset.queries[e.query_id].text for e in examples}


def document_texts(dataset: BeirDataset, examples: Iterable[Example]) -> dict[str, str]:
    """``{doc_id: text}`` for every positive and negative of ``examples``, looked up in the dataset's
    document store (:class:`beirx.data.doc_store.DocStore`, the offset index ``beirx eval`` builds once per
    corpus), so the training pairs and the validation pool do not each stream the corpus.

    A judged document that is not in the corpus is an error naming the qrels' dataset, not a silent skip.
    """
    wanted = set()
    for e in examples:
        wanted.add(e.positive_id)
        wanted.update(e.negative_ids)
    with DocStore.for_dataset(dataset) as store:
        missing = sorted(doc_id for doc_id in wanted if doc_id not in store)
        if missing:
            raise BeirxError(f"{dataset.root}: {len(missing)} judged documents are not in the corpus "
                             f"(e.g. {missing[0]!r}); run  beirx validate {dataset.root}")
        return {doc_id: document_text(store[doc_id]) for doc_id in sorted(wanted)}
