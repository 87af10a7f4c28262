"""The results JSON: metrics plus everything needed to cite and reproduce them.

One file per (system, dataset, language, split). It records the dataset checksum, the language pack,
the system and its parameters (model names and revisions), the evaluation protocol (cut-offs, tie-break,
identical-ID handling), package versions and timings. Secrets never reach it: parameters pass through
:func:`public_params`, which drops anything that looks like a credential.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any

from beirx.atomic import write_json
from beirx.evaluate.metrics import Evaluation
from beirx.provenance import environment_versions

SCHEMA = "beirx.results/1"
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
        elif not isinstance(value, (str, int, float, bool, list, tuple, type(None))):
            value = repr(value)
        clean[key] = value
    return clean


def build_results(*, dataset, split: str, pack, system: dict[str, Any], evaluation: Evaluation,
                  k_values, ignore_identical_ids: bool, timings: dict[str, float], run_file: str | None = None,
                  query_lang: str | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Assemble the results document (see the module docstring for what goes in and why)."""
    queries_lang = query_lang or dataset.lang
    doc = {
        "schema": SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "dataset": {
            "name": dataset.name,
            "source": dataset.source,
            "language": dataset.lang,
            "query_language": queries_lang,
            "split": split,
            "checksum": dataset.checksum(),
        },
        "language_pack": pack.describe(),
        "system": public_params(system),
        "evaluation": {
            "k_values": list(k_values),
            "ignore_identical_ids": ignore_identical_ids,
            "tie_break": TIE_BREAK,
            "num_queries": evaluation.num_queries,
            "queries_without_results": evaluation.missing_queries,
            "metric_implementation": "pytrec_eval (NDCG, MAP, Recall, P, MRR); beirx (R_cap, Hole)",
        },
        "metrics": evaluation.metrics,
        "per_query": evaluation.per_query,
        "run_file": run_file,
        "versions": environment_versions(),
        "timings_seconds": timings,
    }
    if extra:
        doc.update(extra)
    return doc


def write_results(path: Path | str, results: dict[str, Any]) -> None:
    write_json(path, results)
