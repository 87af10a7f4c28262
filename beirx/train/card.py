"""The model card (``README.md``) of a trained model: what it was trained on, how, and by which versions.

The card is the model's provenance, as ``translation.json`` is a translation's: a YAML front matter that the
Hugging Face Hub reads (``library_name``, ``base_model``, ``language``, ``tags``) plus a ``beirx`` block with
the full record (training data: dataset, checksum, language, split, number of pairs, hard negatives;
parameters and seed; loss; prompts; steps and loss reached; beirx and library versions), then the same in
prose. READMEs are not part of a model folder's revision (:func:`beirx.models.files.folder_checksum`), so
rewriting a card never invalidates cached embeddings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from beirx import __version__
from beirx.artifacts.base import utc_now
from beirx.atomic import atomic_writer
from beirx.data.front_matter import with_front_matter
from beirx.models.files import ModelFiles
from beirx.provenance import environment_versions

KEY = "beirx"
PIPELINE = {"bi-encoder": ("sentence-transformers", "sentence-similarity"),
            "cross-encoder": ("sentence-transformers", "text-ranking")}


def training_record(kind: str, base: ModelFiles, data: dict[str, Any], parameters: dict[str, Any],
                    loss: dict[str, Any], prompts: dict[str, str], run: dict[str, Any]) -> dict[str, Any]:
    """The card's ``beirx`` block (JSON-able)."""
    return {"kind": kind, "base_model": {"name": base.name, "revision": base.revision, "local": base.local}, "training_data": data,
            "parameters": parameters, "seed": parameters["seed"], "loss": loss, "prompts": prompts,
            "training": run, "beirx_version": __version__, "versions": environment_versions(), "created": utc_now()}


def _front_matter(record: dict[str, Any]) -> dict[str, Any]:
    library, pipeline = PIPELINE[record["kind"]]
    meta: dict[str, Any] = {"library_name": library, "pipeline_tag": pipeline,
                            "language": [record["training_data"]["language"]],
                            "tags": ["beirx", record["kind"], record["training_data"]["dataset"]]}
    if not record["base_model"]["local"]:
        meta["base_model"] = record["base_model"]["name"]  # a Hub id; a local folder means nothing to a reader
    meta[KEY] = record
    return meta


def render(record: dict[str, Any]) -> str:
    """The README text: front matter, then a human summary."""
    data, params, run = record["training_data"], record["parameters"], record["training"]
    negatives = data["hard_negatives"]
    lines = [
        f"# {record['kind']} fine-tuned with beirx on {data['dataset']} ({data['language']}, {data['split']})", "",
        f"Base model: `{record['base_model']['name']}` (revision `{record['base_model']['revision']}`).", "",
        "## Training data", "",
        f"- dataset `{data['dataset']}` from `{data['source']}`, checksum `{data['checksum']}`",
        f"- language `{data['language']}`, split `{data['split']}`: {data['num_pairs']} (query, positive) pairs "
        f"over {data['num_queries']} queries and {data['num_documents']} documents",
        "- hard negatives: " + (f"{negatives['per_pair']} per pair, mined with {negatives['implementation']} "
                                f"(analyzer `{negatives['analyzer']}`, {negatives['fields']}), never a judged "
                                "positive" if negatives else "none (in-batch negatives only)"),
        *_validation_lines(data.get("validation"), run.get("validation")),
        *_dev_lines(data.get("dev"), run.get("selection")),
        "", "## Training", "",
        f"- loss: {record['loss']['name']}; seed {record['seed']}; "
        f"{run['steps']} steps, last logged loss {run['last_logged_loss']}",
        *_recipe_lines(record["loss"]),
        f"- prompts: {json.dumps(record['prompts'], ensure_ascii=False)}",
        "- parameters: `" + json.dumps(params, ensure_ascii=False) + "`",
        f"- beirx {record['beirx_version']}, sentence-transformers "
        f"{record['versions'].get('sentence-transformers', '?')}, "
        f"transformers {record['versions'].get('transformers', '?')}",
        *_evaluation_lines(record.get("evaluation")),
        "", "## Evaluate", "", "```bash",
        ("beirx eval --dataset DATASET --lang LANG --retriever dense --model THIS_FOLDER"
         if record["kind"] == "bi-encoder" else
         "beirx eval --dataset DATASET --lang LANG --retriever bm25 --reranker cross-encoder "
         "--reranker-model THIS_FOLDER"),
        "```", ""]
    return with_front_matter(_front_matter(record), "\n".join(lines))


def _recipe_lines(loss: dict[str, Any]) -> list[str]:
    """The bi-encoder's choices that move its figures most, with where each came from (the loss record)."""
    lines = []
    if "max_seq_length" in loss:
        lines.append(f"- training length: {loss['max_seq_length']} tokens, from {loss['max_seq_length_from']}; "
                     "the saved model keeps the base model's length, so it is evaluated like the base")
    if "scale" in loss:
        lines.append(f"- similarity scale: {loss['scale']} ({loss['scale_from']})")
    return lines


def _evaluation_lines(summary: dict[str, Any] | None) -> list[str]:
    if not summary:
        return []
    from beirx.train.evaluation import lines

    return ["", f"## Base vs trained ({summary['dataset']} [{summary['language']}/{summary['split']}], "
                f"{summary['system']}, full corpus)", "", *[f"- {line}" for line in lines(summary)],
            f"- results files: `{summary['folder']}`; tests: {summary['tests']}"]


def _validation_lines(pool: dict[str, Any] | None, scores: list[dict[str, Any]] | None) -> list[str]:
    if not pool:
        return []
    lines = [f"- validation on split `{pool['split']}`: {pool['num_queries']} queries, a pool of "
             f"{pool['pool_documents']} documents (judged + {pool['bm25_candidates_per_query']} BM25 candidates "
             "each)"]
    lines += [f"  - step {entry['step']}: nDCG@10 {entry['ndcg@10']:.4f}" for entry in scores or ()]
    return lines


def _dev_lines(dev: dict[str, Any] | None, chosen: dict[str, Any] | None) -> list[str]:
    """The dev slice, its curve and the model kept (:mod:`beirx.train.selection`)."""
    if not dev:
        return []
    if "none" in dev:
        return [f"- dev slice: none ({dev['none']})"]
    lines = [f"- dev slice: {dev['num_queries']} of the {dev['of_queries']} training queries held out (fraction "
             f"{dev['fraction']:g}, seed {dev['seed']}), not trained on; the base model and each checkpoint were "
             f"evaluated on it by {dev['metric']} over {dev['corpus']}"]
    if chosen:
        lines += [f"  - {point['model']} (step {point['step']}): nDCG@10 {point['ndcg@10']:.4f}, Recall@100 "
                  f"{point['recall@100']:.4f}" + (" (kept)" if point["step"] == chosen["kept_step"] else "")
                  for point in chosen["curve"]]
        lines.append(f"  - {chosen['verdict']}")
    return lines


def write_card(folder: Path, record: dict[str, Any]) -> Path:
    path = Path(folder) / "README.md"
    with atomic_writer(path) as fh:
        fh.write(render(record))
    return path
