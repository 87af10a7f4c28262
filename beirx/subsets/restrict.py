"""A system as it exists on a part of the corpus, without running it there again.

A TREC run file exists only for the corpus it was made on, and a dense or SPLADE score (the retriever declares
``corpus_statistics = False``) is a function of the query and the document alone. On a part of the corpus
(a subset, or a subset cut again without one pooling family) either one's ranking is its full-corpus ranking
restricted to that part's queries and documents, so it costs reading a run, not encoding the part. BM25 is
not restricted (its IDF and average length are the part's own): it runs again on the part; a fusion or a
reranker is rebuilt from its restricted inputs and first stage.

Exact for a metric at depth ``k`` as long as each query keeps at least ``k`` documents of the part, or the
full run was not cut short (it holds every document it could rank); otherwise the restricted run is too
shallow, and :attr:`Restrict.inexact` counts those queries.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from beirx.errors import DataError
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.runs import Run, read_trec, write_trec
from beirx.evaluate.specs import FusionSpec, RerankSpec, RunFileSpec, System, SystemSpec


class Restrict:
    """Turns systems into their versions on ``docs`` and ``queries``: run files and (with ``full_runs``, the
    :class:`~beirx.evaluate.stages.Stages` of the full corpus) corpus-independent retrievers become run files
    restricted to them, written under ``folder``; ``depth`` is the metric's (for :attr:`inexact`)."""

    def __init__(self, docs: set[str], queries: set[str], folder: Path, *, full_runs=None, full_documents: int,
                 depth: int = 10, tag: str = "subset"):
        self.docs, self.queries, self.folder, self.tag = docs, queries, Path(folder), tag
        self.full_runs, self.full_documents, self.depth = full_runs, full_documents, depth
        self.inexact = 0
        """Query x run pairs left with fewer than ``depth`` documents by a full run that was cut short."""

    def __call__(self, system: System) -> System:
        if isinstance(system, RunFileSpec):
            path = Path(system.path)
            run = read_trec(path, queries=self.queries)
            if not any(d in self.docs for docs in run.values() for d in docs):
                raise DataError(path, f"none of the documents it retrieves for the {len(self.queries)} queries is among "
                                      f"the {len(self.docs):,} documents it is restricted to: it cannot rank them")
            return RunFileSpec(self._write(run, path.stem, self._cut_short(run)), name=system.name or system.label())
        if isinstance(system, SystemSpec) and self.full_runs is not None \
                and not RETRIEVERS.get(system.retriever).corpus_statistics:
            top_k = self.full_runs.top_k
            run = self.full_runs.run(system).run
            return RunFileSpec(self._write(run, system.tag(), lambda docs: len(docs) >= top_k),
                               name=system.name or system.label())
        if isinstance(system, FusionSpec):
            return dataclasses.replace(system, inputs=[self(s) for s in system.inputs])
        if isinstance(system, RerankSpec):
            return dataclasses.replace(system, first_stage=self(system.first_stage))
        return system

    def _cut_short(self, run: Run):
        """A run file's lists were cut short when they stop at one depth below the corpus size."""
        deepest = max((len(docs) for docs in run.values()), default=0)
        return lambda docs: len(docs) >= deepest and deepest < self.full_documents

    def _write(self, run: Run, stem: str, cut_short) -> Path:
        restricted = {}
        for qid, docs in run.items():
            if qid in self.queries:
                restricted[qid] = {d: s for d, s in docs.items() if d in self.docs}
                self.inexact += len(restricted[qid]) < self.depth and cut_short(docs)
        target = self.folder / f"{stem}.trec"
        write_trec(target, restricted, tag=f"{stem}-{self.tag}")
        return target
