"""The results JSON (a :class:`~beirx.artifacts.results.ResultsDocument`): metrics plus everything needed to
cite, reproduce and join them.

One file per (system, dataset, language pair, split). It records the dataset checksum, the language pack,
the system and its parameters (model names and revisions), the evaluation protocol (cut-offs, tie-break,
identical-ID handling), package versions and timings. Secrets never reach it: parameters pass through
:func:`public_params`, which drops anything that looks like a credential.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from beirx.artifacts.results import (DatasetRef, Efficiency, ResultsDocument, SystemRef, default_label,
                                     system_kind as system_kind_of)
from beirx.evaluate.metrics import Evaluation
from beirx.language_packs import LanguagePack
from beirx.paths import safe_tag
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
                  efficiency: Efficiency | dict[str, Any] | None = None,
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
    if isinstance(efficiency, dict):
        efficiency = Efficiency(**efficiency)
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


def write_results(path: Path | str, results: ResultsDocument) -> None:
    """Write the document atomically."""
    results.save(path)
