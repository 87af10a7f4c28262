"""beirx results in MTEB's results format (``{model}/{revision}/{task}.json``), loadable by ``mteb.TaskResult``.

The layout and fields are those ``mteb.cache.ResultCache`` writes and the MTEB results repository
(``embeddings-benchmark/results``) stores under ``results/``: ``dataset_revision``, ``task_name``,
``mteb_version``, ``evaluation_time`` and ``scores``, a list of score dicts per split each carrying
``hf_subset``, ``languages`` and ``main_score``. Metric names are MTEB's (``make_score_dict`` in
``mteb/_evaluators/retrieval_metrics.py``): ``ndcg_at_10``, ``map_at_100``, ``recall_at_100``,
``precision_at_10``, ``mrr_at_10`` ..., and ``accuracy`` = recall@1. The values are beirx's, computed with
the same pytrec_eval measures MTEB uses; beirx writes them unrounded (MTEB rounds nDCG/MAP/recall/P to
5 decimals before averaging its per-query values, so a figure can differ from MTEB's in the 6th decimal).
Model folders follow MTEB: ``/`` becomes ``__`` and spaces ``_``.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from beirx.artifacts.results import MetricKey, ResultsDocument
from beirx.artifacts.subset import SUFFIX as SUBSET_SUFFIX
from beirx.atomic import write_json
from beirx.errors import BeirxError
from beirx.provenance import installed_version

log = logging.getLogger(__name__)

_FAMILIES = {"NDCG": "ndcg", "MAP": "map", "Recall": "recall", "P": "precision", "MRR": "mrr"}  # ours -> MTEB's
MAIN_SCORE = "ndcg_at_10"
NO_REVISION = "no_revision_available"  # MTEB's folder name when a model's revision is unknown


def model_folder(model_name: str) -> str:
    """MTEB's folder name for a model (``intfloat/multilingual-e5-small`` -> ``intfloat__multilingual-e5-small``)."""
    return model_name.replace("/", "__").replace(" ", "_")


def mteb_scores(metrics: dict[str, float]) -> dict[str, float]:
    """beirx metric names (``NDCG@10``) -> MTEB's (``ndcg_at_10``); beirx-only ones (R_cap, Hole) are left out."""
    scores: dict[str, float] = {}
    for name, value in metrics.items():
        key = MetricKey.parse(name)
        if key and key.measure in _FAMILIES:
            scores[f"{_FAMILIES[key.measure]}_at_{key.cutoff}"] = float(value)
    if "recall_at_1" in scores:
        scores["accuracy"] = scores["recall_at_1"]  # MTEB reports recall@1 as accuracy too
    if MAIN_SCORE not in scores:
        raise BeirxError(f"results have no NDCG@10 (MTEB's main retrieval score); metrics: {', '.join(metrics)}")
    scores["main_score"] = scores[MAIN_SCORE]
    return scores


def local_revision(checksum: str) -> str:
    """The revision beirx gives data that is not on the Hub: ``local-`` + 12 hex digits of its checksum.

    The same string names the dataset revision of a task built by ``beirx mteb task``, so results
    converted here and results of ``mteb.evaluate`` on that task carry the same ``dataset_revision``.
    """
    return "local-" + checksum.split(":")[-1][:12]


def dataset_revision(beirx_results: ResultsDocument) -> str:
    """The data revision a results file was computed on: the Hub commit for ``hf:`` data, else
    :func:`local_revision` of its checksum."""
    match = re.match(r"^hf:[^@\s]+@([0-9a-f]{40})\b", beirx_results.dataset.source)
    if match:
        return match.group(1)
    return local_revision(beirx_results.dataset.checksum) if beirx_results.dataset.checksum else NO_REVISION


def _languages(beirx_results: ResultsDocument) -> list[str]:
    if beirx_results.mteb_language:
        return [beirx_results.mteb_language]
    from beirx.language_packs import get_pack

    return [get_pack(beirx_results.corpus_language).mteb_code]


def system_model(beirx_results: ResultsDocument) -> tuple[str, str]:
    """``(model_name, revision)`` of the system that produced a results file: its model, else its retriever's
    name (``bm25``), else its label."""
    system = beirx_results.system
    return system.model or system.retriever or system.label, system.revision or NO_REVISION


def task_result_document(beirx_results: ResultsDocument, task_name: str, *, hf_subset: str = "default",
                         revision: str | None = None) -> dict[str, Any]:
    """One split of ``beirx_results`` as an MTEB ``TaskResult`` dictionary."""
    timings = beirx_results.timings_seconds
    scores = {**mteb_scores(beirx_results.metrics), "hf_subset": hf_subset, "languages": _languages(beirx_results)}
    return {
        "dataset_revision": revision or dataset_revision(beirx_results),
        "task_name": task_name,
        "mteb_version": installed_version("mteb"),
        "scores": {beirx_results.split: [scores]},
        "evaluation_time": float(sum(timings.values())) or None,
        "kg_co2_emissions": None,
    }


def write_mteb_results(beirx_results: ResultsDocument, task_name: str, output_dir: Path | str,
                       model_name: str | None = None, revision: str | None = None) -> Path:
    """Write (or merge into) ``output_dir/{model}/{revision}/{task_name}.json`` and return its path.

    ``model_name``/``revision`` default to the system recorded in the results. An existing file for the
    same task is merged split by split (a new split is added, the same split and subset replaced), so the
    test and dev results of one model end up in one MTEB file, as MTEB writes them; a file computed on
    different data (another ``dataset_revision``) is refused rather than mixed.
    """
    check_task_matches(beirx_results, task_name)
    doc = task_result_document(beirx_results, task_name)
    if not (model_name and revision):
        default_model, default_revision = system_model(beirx_results)
        if model_name and model_name != default_model:
            revision = revision or NO_REVISION  # the recorded revision belongs to the recorded model, not this one
        model_name = model_name or default_model
        revision = revision or default_revision
    from beirx.paths import check_segment, confined

    path = confined(output_dir, check_segment(model_folder(model_name), "model name"),
                    check_segment(str(revision), "model revision"), f"{check_segment(task_name, 'MTEB task name')}.json")
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("dataset_revision") != doc["dataset_revision"]:
            raise BeirxError(f"{path} holds results on dataset revision {old.get('dataset_revision')}, not "
                             f"{doc['dataset_revision']}; write to another folder")
        for split, entries in doc["scores"].items():
            kept = [e for e in old.get("scores", {}).get(split, []) if e.get("hf_subset") != entries[0]["hf_subset"]]
            old.setdefault("scores", {})[split] = kept + entries
        old["evaluation_time"] = (old.get("evaluation_time") or 0.0) + (doc["evaluation_time"] or 0.0) or None
        old["mteb_version"] = doc["mteb_version"]
        doc = old
    write_json(path, doc)
    log.info("wrote MTEB results %s", path)
    return path


def check_task_matches(beirx_results: ResultsDocument, task_name: str) -> None:
    """Refuse results of another dataset or language than ``task_name`` (``SciFact-PL``: SciFact, Polish).

    The language is the task name's ``-XX`` suffix (none: English); the dataset family is checked when the
    catalogue knows the results' dataset and its MTEB task.
    """
    import re

    from beirx.data import catalogue

    lang = str(beirx_results.query_language or beirx_results.corpus_language or "en").lower()
    match = re.search(r"-([A-Za-z]{2})(?:Subset)?(?:-beirx)?$", task_name)
    task_lang = match.group(1).lower() if match else "en"
    if task_lang != lang:
        raise BeirxError(f"results of {beirx_results.family!r} in {lang!r} cannot be results of MTEB task "
                         f"{task_name} ({task_lang!r}); pass the task of that language")
    subset_task = "subset" in task_name.lower()  # SciFact-PLSubset, SciFactSubset, mydata-subset-PL
    if subset_task != beirx_results.family.endswith(SUBSET_SUFFIX):
        raise BeirxError(f"results of {beirx_results.family!r} cannot be results of MTEB task {task_name}: one is a "
                         "beirx subset (name ending in -subset / Subset) and the other is not")
    info = catalogue.lookup(beirx_results.family)
    family = task_name[: match.start()] if match else re.sub(r"(?:Subset)?(?:-beirx)?$", "", task_name)
    if info is not None and info.mteb_task and family.lower() != info.mteb_task.lower():
        raise BeirxError(f"results of {info.name} cannot be results of MTEB task {task_name} (expected "
                         f"{info.mteb_task}{'-' + lang.upper() if lang != 'en' else ''}{'Subset' if subset_task else ''})")


def catalogue_task_name(dataset_name: str, lang: str) -> str:
    """The MTEB task an English catalogue dataset's results belong to (``scifact`` -> ``SciFact``).

    Other languages have no single answer (BEIR-PL's data is MTEB's ``SciFact-PL``; a beirx translation is
    a different dataset), so they must be named explicitly.
    """
    from beirx.data import catalogue

    info = catalogue.lookup(dataset_name)
    if lang != "en" or info is None or not info.mteb_task:
        raise BeirxError(f"name the MTEB task for {dataset_name} ({lang}) with --mteb-task "
                         "(e.g. the name `beirx mteb task` printed)")
    return info.mteb_task
