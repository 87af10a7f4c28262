#!/usr/bin/env python
"""Parity check: the same dataset and model through ``mteb.evaluate`` and through beirx's dense evaluation.

Phases (all offline; each one cached under ``--output``, so an interrupted run resumes and the two
expensive phases can run in parallel processes):

``mteb``
    Register the dataset as an MTEB task with ``beirx.publish`` (exported in MTEB's parquet layout) and run
    ``mteb.evaluate`` with the model wrapped as MTEB's own registry entry for ``intfloat/multilingual-e5-small``
    wraps it (``SentenceTransformerEncoderWrapper`` with prompts ``query: ``/``passage: ``). Scores go to an
    ``mteb.ResultCache`` and MTEB's ranking to ``prediction_folder``. With ``--raw`` the bare
    ``SentenceTransformer(folder)`` is evaluated instead (its own prompts; see the note printed).
``beirx``
    beirx's dense retriever (``--retriever dense``) on the same split, with beirx's metrics; document
    embeddings are cached (and resumable) in ``--output/beirx_home``.
``compare``
    Print both, MTEB's ranking re-scored with beirx's metrics (separates ranking from metric code), the
    share of identical top-10 lists, and beirx's results converted to MTEB's format and loaded back with
    ``mteb.TaskResult``. Exit status 1 when nDCG@10 differs by more than ``--tolerance``.

Usage::

    python benchmarks/mteb_parity.py                       # all phases, full SciFact, e5-small
    python benchmarks/mteb_parity.py --phase mteb &  python benchmarks/mteb_parity.py --phase beirx
    python benchmarks/mteb_parity.py --phase compare
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT, e5_default  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
E5_ID = "intfloat/multilingual-e5-small"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=str(SCIFACT))
    parser.add_argument("--lang", default="en")
    parser.add_argument("--model", **e5_default())
    parser.add_argument("--split", default="test")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--output", type=Path, default=Path("/tmp/beirx-mteb-parity"))
    parser.add_argument("--phase", choices=("all", "mteb", "beirx", "compare"), default="all")
    parser.add_argument("--raw", action="store_true", help="mteb phase: the bare SentenceTransformer folder")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    return parser.parse_args()


def setup(args):
    args.output.mkdir(parents=True, exist_ok=True)
    os.environ["BEIRX_HOME"] = str(args.output / "beirx_home")
    from beirx.data.resolve import resolve_dataset
    from beirx.publish.mteb_task import local_task

    dataset = resolve_dataset(args.dataset, lang=args.lang)
    cls, spec = local_task(dataset)
    return dataset, spec


def mteb_phase(args, spec, label: str):
    """Run (or load from the cache) ``mteb.evaluate``; returns (scores of the split, MTEB's run, seconds)."""
    import mteb
    from mteb.models import SentenceTransformerEncoderWrapper
    from sentence_transformers import SentenceTransformer

    task = mteb.get_task(spec.name)
    model = SentenceTransformer(args.model, device="cpu")
    if label == "raw_folder":
        print(f"bare folder: sentence-transformers prompts {model.prompts}")
        wrapped = model
    else:
        prompts = dict(mteb.get_model_meta(E5_ID).loader_kwargs["model_prompts"])
        print(f"MTEB's registered prompts for {E5_ID}: {prompts}")
        wrapped = SentenceTransformerEncoderWrapper(model, model_prompts=prompts)
    folder = args.output / f"mteb_predictions_{label}"
    start = time.perf_counter()
    result = mteb.evaluate(wrapped, task, cache=mteb.ResultCache(args.output / f"mteb_cache_{label}"),
                           encode_kwargs={"batch_size": args.batch_size}, prediction_folder=folder,
                           overwrite_strategy="only-missing", show_progress_bar=False)
    seconds = time.perf_counter() - start
    scores = result.task_results[0].scores[args.split][0]
    run = json.loads(task._predictions_path(folder).read_text())["default"][args.split]
    (args.output / f"mteb_{label}.json").write_text(json.dumps({"scores": scores, "seconds": seconds}))
    print(f"mteb.evaluate ({label}): nDCG@10 {scores['ndcg_at_10']:.5f} in {seconds:.0f}s")
    return scores, run


def beirx_phase(args, dataset, spec):
    from beirx.evaluate.runner import run_experiment
    from beirx.evaluate.specs import SystemSpec
    from beirx.language_packs import get_pack

    start = time.perf_counter()
    outcome = run_experiment(dataset, get_pack(args.lang), args.split,
                             SystemSpec("dense", {"model": args.model, "batch_size": args.batch_size}),
                             args.output / "beirx", top_k=1000, ignore_identical_ids=spec.ignore_identical_ids,
                             show_progress=sys.stderr.isatty(), use_cache=True)
    seconds = time.perf_counter() - start
    print(f"beirx dense: nDCG@10 {outcome.results['metrics']['NDCG@10']:.5f} in {seconds:.0f}s "
          f"(results {outcome.results_path})")
    return outcome


def compare(args, dataset, spec) -> int:
    import mteb

    from beirx.evaluate.metrics import evaluate
    from beirx.evaluate.runs import ranked, read_trec
    from beirx.publish.mteb_results import write_mteb_results

    mteb_scores, mteb_run = mteb_phase(args, spec, "registry_prompts")  # loaded from the cache
    outcome = beirx_phase(args, dataset, spec)  # loaded from the embeddings cache
    beirx_metrics = outcome.results.metrics
    _, qrels = dataset.queries_for_split(args.split)
    rescored = evaluate(qrels, mteb_run, k_values=(10, 100), ignore_identical_ids=spec.ignore_identical_ids).metrics
    raw_file = args.output / "mteb_raw_folder.json"
    raw = json.loads(raw_file.read_text())["scores"] if raw_file.is_file() else None

    rows = [("ndcg_at_10", "NDCG@10"), ("mrr_at_10", "MRR@10"), ("recall_at_100", "Recall@100")]
    print(f"\n{'metric':<14}{'mteb.evaluate':>15}{'beirx dense':>14}{'diff':>11}{'mteb run, beirx metrics':>26}"
          + (f"{'mteb bare folder':>18}" if raw else ""))
    for mteb_key, beirx_key in rows:
        a, b, c = mteb_scores[mteb_key], beirx_metrics[beirx_key], rescored[beirx_key]
        print(f"{mteb_key:<14}{a:>15.5f}{b:>14.5f}{b - a:>+11.5f}{c:>26.5f}"
              + (f"{raw[mteb_key]:>18.5f}" if raw else ""))
    beirx_run = read_trec(outcome.run_path)
    same = sum([d for d, _ in ranked(mteb_run[q])[:10]] == [d for d, _ in ranked(beirx_run[q])[:10]]
               for q in qrels if q in mteb_run and q in beirx_run)
    print(f"\njudged queries {len(qrels)}, corpus {sum(1 for _ in dataset.iter_corpus())} documents; "
          f"identical top-10 lists: {same}/{len(qrels)}")
    path = write_mteb_results(outcome.results, spec.name, args.output / "mteb_format", model_name=E5_ID + "-local",
                              revision="local")
    loaded = mteb.TaskResult.from_disk(path)
    print(f"beirx results in MTEB format: {path}; mteb.TaskResult main score {loaded.get_score():.5f}")
    gap = abs(beirx_metrics["NDCG@10"] - mteb_scores["ndcg_at_10"])
    print(f"|nDCG@10 difference| = {gap:.6f} (tolerance {args.tolerance}; MTEB rounds nDCG to 5 decimals)")
    return 0 if gap <= args.tolerance else 1


def main() -> int:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    dataset, spec = setup(args)
    print(f"dataset {dataset.name} [{dataset.lang}/{args.split}] {dataset.checksum()}")
    print(f"task {spec.name} -> {spec.dataset_path}@{spec.dataset_revision}, "
          f"ignore_identical_ids={spec.ignore_identical_ids}")
    if args.phase == "mteb":
        mteb_phase(args, spec, "raw_folder" if args.raw else "registry_prompts")
        return 0
    if args.phase == "beirx":
        beirx_phase(args, dataset, spec)
        return 0
    return compare(args, dataset, spec)


if __name__ == "__main__":
    sys.exit(main())
