"""What an evaluation writes into its output folder: the run and results files of each system, named
:func:`result_stem`, and a grid's ``summary.tsv``/``summary.json`` (:func:`write_summary`).

The results JSON (a :class:`~beirx.artifacts.results.ResultsDocument`, :func:`build_results`) holds the
metrics plus everything needed to cite, reproduce and join them, one file per (system, dataset, language
pair, split): the dataset checksum, the language pack, the system and its parameters (model names and
revisions), the evaluation protocol (cut-offs, tie-break, identical-ID handling), package versions, timings
and efficiency. Secrets never reach it: parameters pass through :func:`public_params`, which drops anything
that looks like a credential.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.artifacts.efficiency import Efficiency
from beirx.artifacts.results import DatasetRef, ResultsDocument, SystemRef, default_label
from beirx.artifacts.results import system_kind as system_kind_of
from beirx.atomic import atomic_writer, write_json
from beirx.data.dataset import BeirDataset
from beirx.data.language_pair import LanguagePair
from beirx.evaluate.metrics import Evaluation
from beirx.language_packs import LanguagePack
from beirx.paths import confined, safe_tag
from beirx.provenance import environment_versions

TIE_BREAK = "score descending, then document id descending (trec_eval/pytrec_eval order)"
_SECRET = re.compile(r"(key|token|secret|password|passwd|auth|credential)", re.IGNORECASE)


def public_params(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters safe to publish: credential-like keys removed, paths and objects made strings."""
    clean: dict[str, Any] = {}
    for key, value in params.items():
        if _SECRET.search(key):
            continue
        if isinstance(value, dict):
            value = public_params(value)
        elif isinstance(value, Path):
            value = str(value)
        elif isinstance(value, tuple):
            value = list(value)  # what JSON keeps, so a document equals itself read back
        elif not isinstance(value, (str, int, float, bool, list, tuple, type(None))):
            value = repr(value)
        clean[key] = value
    return clean


def dataset_ref(dataset, split: str, query_language: str | None = None) -> DatasetRef:
    """A dataset as the results document records it: family name (from ``translation.json`` for a beirx
    translation, see :attr:`BeirDataset.translation`), languages, split, checksum, source language."""
    manifest = dataset.translation
    return DatasetRef(name=dataset.name, source=dataset.source, language=dataset.lang,
                      query_language=query_language or dataset.lang, split=split, checksum=dataset.checksum(),
                      translated_from=manifest.source_language if manifest else None)


def build_results(*, dataset, split: str, pack: LanguagePack, system: dict[str, Any], evaluation: Evaluation,
                  k_values, ignore_identical_ids: bool, timings: dict[str, float], run_file: str | None = None,
                  query_lang: str | None = None, extra: dict[str, Any] | None = None, query_dataset=None,
                  top_k: int | None = None, system_label: str | None = None, system_tag: str | None = None,
                  system_kind: str | None = None, language_source: str | None = None,
                  efficiency: Efficiency | None = None,
                  translated_from: str | None = None) -> ResultsDocument:
    """Assemble the results document (see the module docstring for what goes in and why).

    ``query_dataset`` (a BeirDataset) is the queries' dataset of a cross-lingual pair. The system's label,
    tag and kind default to what its parameters say (:func:`default_label`, :func:`system_kind`);
    ``efficiency`` defaults to the figures the timings give; ``translated_from`` to the source language
    recorded in the dataset's ``translation.json``.
    """
    queries_lang = query_lang or dataset.lang
    description = public_params(system)
    ref = dataset_ref(dataset, split, queries_lang)
    if translated_from is not None:
        ref.translated_from = translated_from
    query_ref = dataset_ref(query_dataset, split) if query_dataset is not None else None
    label = system_label or default_label(description)
    evaluation_doc = {
        "k_values": list(k_values),
        "ignore_identical_ids": ignore_identical_ids,
        "tie_break": TIE_BREAK,
        "num_queries": evaluation.num_queries,
        "queries_without_results": evaluation.missing_queries,
        "metric_implementation": "pytrec_eval (NDCG, MAP, Recall, P, MRR); beirx (R_cap, Hole)",
    }
    if top_k is not None:
        evaluation_doc["top_k"] = top_k
    return ResultsDocument(
        dataset=ref,
        query_dataset=query_ref,
        system=SystemRef(label=label, tag=system_tag or safe_tag(label),
                         kind=system_kind or system_kind_of(description), description=description),
        language_pack=pack.describe(),
        language_source=language_source,
        evaluation=evaluation_doc,
        metrics=evaluation.metrics,
        per_query=evaluation.per_query,
        run_file=run_file,
        versions=environment_versions(),
        timings_seconds=timings,
        efficiency=efficiency or Efficiency.from_timings(timings, evaluation.num_queries),
        extra=dict(extra or {}),
    )


# -- file names -----------------------------------------------------------------------------------------------
def result_stem(dataset: BeirDataset, split: str, tag: str, query_lang: str | None = None) -> str:
    """``<dataset>-<pair>-<split>-<system>``; the pair is :attr:`LanguagePair.label` (``pl`` or ``pl2en``)."""
    pair = LanguagePair.of(dataset.lang, query_lang)
    return f"{dataset.name.replace('/', '_')}-{pair.label}-{split}-{tag}"


def output_paths(output_dir: Path | str, stem: str) -> tuple[Path, Path]:
    """``(run file, results file)`` of ``stem`` in ``output_dir``, refused if they would land outside it."""
    return confined(Path(output_dir), f"{stem}.trec"), confined(Path(output_dir), f"{stem}.json")


# -- a grid's summary -----------------------------------------------------------------------------------------
@dataclass
class Row:
    """One evaluated system on one dataset, language pair and split, and where its files are."""

    dataset: str
    languages: str
    split: str
    system: str
    metrics: dict[str, float]
    results_path: Path
    run_path: Path


def write_summary(rows: list[Row], output_dir: Path) -> None:
    """``summary.tsv`` (one line per dataset, language pair and system) and ``summary.json`` in ``output_dir``."""
    metrics = sorted({m for r in rows for m in r.metrics})
    with atomic_writer(Path(output_dir) / "summary.tsv") as fh:
        fh.write("\t".join(["dataset", "languages", "split", "system", *metrics, "results"]) + "\n")
        for r in rows:
            values = [f"{r.metrics.get(m, float('nan')):.6f}" for m in metrics]
            fh.write("\t".join([r.dataset, r.languages, r.split, r.system, *values, r.results_path.name]) + "\n")
    write_json(Path(output_dir) / "summary.json",
               [{"dataset": r.dataset, "languages": r.languages, "split": r.split, "system": r.system,
                 "metrics": r.metrics, "results": r.results_path.name} for r in rows])
