"""The results document (``beirx.results/2``): one system on one dataset, language pair and split.

It records what a reader needs to join results across files — the dataset FAMILY name (``scifact`` also for
its Polish translation, which records ``translated_from``), the corpus and query languages, the split, a
human system label and the full parameters, the language pack (analyzer) — plus the metrics (pytrec_eval),
per-query metrics, the evaluation protocol, versions, timings and efficiency figures.

Files written before this format (``beirx.results/1``) load and are upgraded on read: the system label, tag
and kind are derived from the recorded parameters and the run file's name, the top-level ``top_k`` moves
into ``evaluation``, a cross-lingual ``query_dataset`` becomes a :class:`DatasetRef`, and efficiency
figures are derived from the timings.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

from beirx.artifacts.base import Artifact, fld, optional, utc_now
from beirx.artifacts.efficiency import Efficiency

SCHEMA = "beirx.results/2"
SCHEMA_V1 = "beirx.results/1"
KINDS = ("retriever", "fusion", "rerank", "run_file")


@dataclass(kw_only=True)
class DatasetRef:
    """A dataset as evaluated: family name, where it came from, its languages, split and content checksum."""

    name: str = fld("dataset family name (a translation keeps its source's name, e.g. 'scifact')")
    source: str = fld("where the data came from: folder, download URL or hf:ORG/NAME@commit")
    language: str = fld("language of the corpus (and of the analyzer), ISO 639-1")
    query_language: str = fld("language of the queries, ISO 639-1")
    split: str = fld("qrels split, e.g. 'test'")
    checksum: str = fld("'sha256:<hex>' over the data files (beirx.checksums)")
    translated_from: str | None = optional("source language when the data is a beirx translation, else null")


@dataclass(kw_only=True)
class SystemRef:
    """The evaluated system: a human label, the file-name tag, its kind and its full parameters."""

    label: str = fld("human label, e.g. 'bm25' or the user's --name")
    tag: str = fld("the tag in the run and results file names")
    kind: Literal["retriever", "fusion", "rerank", "run_file"] = fld("what kind of system it is")
    description: dict[str, Any] = fld("every parameter that determines the run (models and revisions included)")

    @property
    def model(self) -> str | None:
        """The model the system is named after: its own, or a reranker's; None for BM25, fusions, run files."""
        found = self.description.get("model") or self.description.get("model_name")
        reranker = self.description.get("reranker")
        if not found and isinstance(reranker, dict):
            found = reranker.get("model")
        return str(found) if found else None

    @property
    def retriever(self) -> str | None:
        """The registered retriever's name (``bm25``, ``dense`` ...) of a first-stage system, else None."""
        found = self.description.get("retriever")
        return str(found) if found else None

    @property
    def revision(self) -> str | None:
        """That model's revision, when recorded."""
        found = self.description.get("revision") or self.description.get("model_revision")
        reranker = self.description.get("reranker")
        if not found and isinstance(reranker, dict) and not self.description.get("model"):
            found = reranker.get("revision")
        return str(found) if found else None


@dataclass(frozen=True, order=True)
class MetricKey:
    """A metric's name in :attr:`ResultsDocument.metrics` and ``per_query``: a measure at a cutoff,
    ``NDCG@10`` (measures: :data:`MEASURES`)."""

    measure: str
    cutoff: int

    def __str__(self) -> str:
        return f"{self.measure}@{self.cutoff}"

    @classmethod
    def parse(cls, name: str) -> "MetricKey | None":
        """``NDCG@10`` -> ``MetricKey("NDCG", 10)``; None when ``name`` is no ``MEASURE@cutoff``."""
        measure, sep, cutoff = name.rpartition("@")
        return cls(measure, int(cutoff)) if sep and measure in MEASURES and cutoff.isdigit() else None

    @classmethod
    def named(cls, name: str) -> "MetricKey":
        """The metric ``name`` stands for, at a cut-off beirx computes: beirx's ``NDCG@10`` in any case, or
        ir_measures' ``nDCG@10``, ``AP@100``, ``R@100``, ``RR@10``; a ValueError lists the valid names."""
        measure, _, cutoff = name.strip().rpartition("@")
        found = _ALIASES.get(measure.lower())
        if found is None or not cutoff.isdigit() or int(cutoff) not in CUTOFFS:
            raise ValueError(f"unknown metric {name!r}: choose MEASURE@k, MEASURE one of {', '.join(MEASURES)} and k "
                             f"one of {', '.join(map(str, CUTOFFS))} (e.g. NDCG@10)")
        return cls(found, int(cutoff))


MEASURES = ("NDCG", "MAP", "Recall", "P", "MRR", "R_cap", "Hole")
"""Every measure a results document holds (see :mod:`beirx.evaluate.metrics`), in the order written."""
CUTOFFS = (1, 3, 5, 10, 100, 1000)
"""The cut-offs ``beirx eval`` computes every measure at."""
# ir_measures' names (and trec_eval's) of the same measures
_ALIASES = {"ndcg": "NDCG", "ndcg_cut": "NDCG", "ap": "MAP", "map": "MAP", "map_cut": "MAP", "r": "Recall",
            "recall": "Recall", "p": "P", "rr": "MRR", "mrr": "MRR", "recip_rank": "MRR", "r_cap": "R_cap",
            "hole": "Hole"}


@dataclass(kw_only=True)
class ResultsDocument(Artifact):
    """A results file: metrics of one system on one dataset, language pair and split, with provenance."""

    SCHEMA = SCHEMA
    SCHEMA_FIELD = "schema"
    KIND = "results document"

    schema: str = fld("format identifier", default=SCHEMA)
    created: str = fld("UTC time the file was written (ISO 8601)", default_factory=utc_now)
    dataset: DatasetRef = fld("the corpus and qrels evaluated on (and the query language)")
    query_dataset: DatasetRef | None = optional("where the queries came from in a cross-lingual pair, else null")
    system: SystemRef = fld("the evaluated system")
    language_pack: dict[str, Any] = fld("the language pack's description (pack.describe(), includes the analyzer)")
    language_source: str | None = optional("how the language was chosen: 'flag', 'translation.json', 'default' ...")
    evaluation: dict[str, Any] = fld("the protocol: k_values, ignore_identical_ids, tie_break, num_queries, "
                                     "queries_without_results, metric_implementation, top_k")
    metrics: dict[str, float] = fld("mean metrics, e.g. 'NDCG@10', 'Recall@100', 'MRR@10'")
    per_query: dict[str, dict[str, float]] = fld("per query ID, the same metrics")
    run_file: str | None = optional("name of the TREC run file written beside this file")
    versions: dict[str, str] = fld("Python, platform and package versions", default_factory=dict)
    timings_seconds: dict[str, float] = fld("wall-clock seconds per named step", default_factory=dict)
    efficiency: Efficiency = optional("cost figures", default_factory=Efficiency)
    extra: dict[str, Any] = optional("anything else a producer records", default_factory=dict)

    # -- what readers join on -------------------------------------------------------------------------
    @property
    def family(self) -> str:
        return self.dataset.name

    @property
    def corpus_language(self) -> str:
        return self.dataset.language

    @property
    def query_language(self) -> str:
        return self.dataset.query_language

    @property
    def language_pair(self) -> str:
        """``en`` when queries and corpus share a language, else ``pl2en`` (Polish queries, English corpus)."""
        return language_pair(self.query_language, self.corpus_language)

    @property
    def split(self) -> str:
        return self.dataset.split

    @property
    def label(self) -> str:
        return self.system.label

    def metric(self, name: str) -> float | None:
        return self.metrics.get(name)

    def per_query_metric(self, name: str) -> dict[str, float]:
        """``{query id: value}`` of one metric (queries lacking it are left out)."""
        return {qid: values[name] for qid, values in self.per_query.items() if name in values}

    @property
    def num_queries(self) -> int | None:
        return self.evaluation.get("num_queries")

    @property
    def mteb_language(self) -> str | None:
        """The corpus language in MTEB's spelling (``pol-Latn``), as the language pack recorded it."""
        return self.language_pack.get("mteb_code")

    # -- older formats --------------------------------------------------------------------------------
    @classmethod
    def _upgrade(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        if data.get("schema") == SCHEMA_V1:
            return upgrade_v1(data)
        return super()._upgrade(data, source)


def language_pair(query: str, corpus: str) -> str:
    """The one spelling of a language pair: ``pl`` or ``pl2en`` (queries 2 corpus)."""
    return corpus if query == corpus else f"{query}2{corpus}"


def system_kind(description: dict[str, Any]) -> str:
    """``retriever``, ``fusion``, ``rerank`` or ``run_file``, from a system's parameters."""
    if "reranker" in description:
        return "rerank"
    if "fusion" in description:
        return "fusion"
    if description.get("retriever") == "run_file":
        return "run_file"
    return "retriever"


def default_label(description: dict[str, Any]) -> str:
    """A short readable label from a system's parameters: ``bm25``, ``rrf``, ``bm25>cross-encoder`` ..."""
    kind = system_kind(description)
    if kind == "rerank":
        reranker = description.get("reranker")
        name = reranker.get("reranker") if isinstance(reranker, dict) else reranker
        first = description.get("first_stage")
        return f"{default_label(first) if isinstance(first, dict) else 'run'}>{name}"
    if kind == "fusion":
        return str(description.get("fusion"))
    if kind == "run_file":
        return "run-" + re.sub(r"\.[^.]*$", "", str(description.get("path", "")).replace("\\", "/").split("/")[-1])
    return str(description.get("retriever", "system"))


_V1_KEYS = ("schema", "created", "dataset", "language_pack", "system", "evaluation", "metrics", "per_query",
            "run_file", "versions", "timings_seconds", "top_k", "query_dataset")


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A ``beirx.results/1`` document as ``beirx.results/2`` data (checked afterwards like any file).

    Missing keys stay missing, so the check reports them by name.
    """
    new: dict[str, Any] = {"schema": SCHEMA}
    for key in ("created", "dataset", "query_dataset", "system", "language_pack", "evaluation", "metrics",
                "per_query", "run_file", "versions", "timings_seconds"):
        if key in data:
            new[key] = data[key]
    dataset = data.get("dataset")
    if isinstance(dataset, dict):
        new["dataset"] = {**dataset, "translated_from": dataset.get("translated_from")}
    query_dataset = data.get("query_dataset")
    if isinstance(query_dataset, dict) and isinstance(dataset, dict):
        new["query_dataset"] = {**query_dataset, "query_language": query_dataset.get("language"),
                                "split": dataset.get("split"), "translated_from": None}
    if isinstance(data.get("evaluation"), dict) and "top_k" in data:
        new["evaluation"] = {**data["evaluation"], "top_k": data["top_k"]}
    description = data.get("system")
    if isinstance(description, dict):
        label = default_label(description)
        new["system"] = {"label": label, "tag": _v1_tag(data, label), "kind": system_kind(description),
                         "description": description}
    timings = data.get("timings_seconds")
    evaluation = data.get("evaluation")
    if isinstance(timings, dict) and isinstance(evaluation, dict):
        num = evaluation.get("num_queries")
        try:
            new["efficiency"] = asdict(Efficiency.from_timings(timings, num if isinstance(num, int) else None))
        except TypeError:  # a non-numeric timing: leave efficiency empty, the check reports the timing
            pass
    extra = {k: v for k, v in data.items() if k not in _V1_KEYS}
    if extra:
        new["extra"] = extra
    return new


def _v1_tag(data: dict[str, Any], label: str) -> str:
    """The system tag of a v1 file: its run file's name minus ``<dataset>-<languages>-<split>-``."""
    run_file, dataset = data.get("run_file"), data.get("dataset") or {}
    if isinstance(run_file, str) and isinstance(dataset, dict):
        corpus, query = dataset.get("language"), dataset.get("query_language") or dataset.get("language")
        prefix = f"{str(dataset.get('name', '')).replace('/', '_')}-{language_pair(query, corpus)}-{dataset.get('split')}-"
        stem = run_file[:-len(".trec")] if run_file.endswith(".trec") else run_file
        if stem.startswith(prefix) and len(stem) > len(prefix):
            return stem[len(prefix):]
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", label)
