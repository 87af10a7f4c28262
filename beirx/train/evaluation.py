"""``beirx train ... --evaluate SPLIT``: the base and the trained model on a split, before and after, in one command.

Whether training helped is a comparison, so both models are evaluated by ``beirx eval``'s own runner
(:func:`beirx.evaluate.runner.evaluate_system`, one :class:`~beirx.evaluate.stages.Stages`: the same queries,
qrels and identical-ID rule) on the full corpus; the base model's document embeddings (or BM25 index and
first-stage run) come from ``$BEIRX_HOME``'s caches when an earlier ``beirx eval`` made them. A bi-encoder is
evaluated as a dense retriever; a cross-encoder reranks BM25's top :data:`RERANK_DEPTH` (the same stored
first stage for both). The difference is tested per query with ``beirx report``'s paired tests
(:mod:`beirx.significance`: paired t-test and a seeded randomization test). Results files and runs go
to ``<OUTPUT>-evaluation/`` (not into the model folder, whose files are its revision), the summary to
``evaluation.json`` there and to the model card.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from beirx.atomic import write_json
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError
from beirx.evaluate.specs import RerankSpec, System, SystemSpec
from beirx.models.files import ModelFiles

log = logging.getLogger(__name__)

METRICS = ("NDCG@10", "Recall@100")
RERANK_DEPTH = 100
PERMUTATIONS = 10_000
SUMMARY = "evaluation.json"


def output_folder(model_output: Path) -> Path:
    """Where the evaluation's runs and results go: beside the model folder, never inside it."""
    return model_output.with_name(model_output.name + "-evaluation")


def check_split(dataset: BeirDataset, split: str, flag: str = "--evaluate") -> None:
    """Refuse, before training, a split without qrels or without a judged query that has a text (the training
    split is refused by the options)."""
    path = dataset.root / "qrels" / f"{split}.tsv"
    if not path.is_file():
        raise BeirxError(f"{flag} {split}: {path} does not exist (splits of {dataset.name}: "
                         f"{', '.join(dataset.splits()) or 'none'})")
    queries, qrels = dataset.queries_for_split(split)
    if not any(rel > 0 for qid in queries for rel in qrels[qid].values()):
        raise BeirxError(f"{flag} {split}: {path} has no positive judgement of a query with a text "
                         f"(judged queries: {len(qrels)}): nothing to evaluate on")


def check_before(kind: str, dataset: BeirDataset, split: str, base: ModelFiles, trained: Path) -> None:
    """Everything ``--evaluate`` needs that can be checked before training: a judged split, a writable results
    folder, and a base that can be evaluated as the trained model will be (a reranker for a cross-encoder)."""
    from beirx.models.checks import check_model
    from beirx.path_problems import write_problem

    check_split(dataset, split)
    folder = output_folder(trained)
    if folder.exists() and not folder.is_dir():
        raise BeirxError(f"--evaluate writes its results to {folder}, which is a file; move it or pass another "
                         "--output")
    problem = write_problem(folder)
    if problem:
        raise BeirxError(f"--evaluate writes its results to {folder}: cannot write there: {problem}")
    if kind == "cross-encoder":
        try:
            check_model(base, "cross-encoder", "--model", "--evaluate (the base is reranked as the trained model is)")
        except BeirxError as exc:
            raise BeirxError(f"{exc}; train without --evaluate, then evaluate the trained model with  beirx eval "
                             f"--reranker cross-encoder --reranker-model {trained}") from None


def systems(kind: str, base_model: str, trained: Path) -> tuple[System, System]:
    """The base and the trained model as ``beirx eval`` systems (named ``base`` and ``trained``)."""
    if kind == "bi-encoder":
        return (SystemSpec("dense", {"model": base_model}, name="base"),
                SystemSpec("dense", {"model": str(trained)}, name="trained"))
    first = SystemSpec("bm25")
    return (RerankSpec(first, "cross-encoder", {"model": base_model}, RERANK_DEPTH, name="base"),
            RerankSpec(first, "cross-encoder", {"model": str(trained)}, RERANK_DEPTH, name="trained"))


def evaluate_base_and_trained(kind: str, dataset: BeirDataset, lang: str, split: str, base_model: str,
                              trained: Path, show_progress: bool = True) -> dict[str, Any]:
    """Evaluate both models on ``split`` of ``dataset``; write their results and the summary; return it."""
    from beirx.data.catalogue import ignore_identical_ids_for
    from beirx.evaluate.runner import evaluate_system
    from beirx.evaluate.stages import Stages
    from beirx.language_packs import get_pack
    from beirx.significance import PAIRING_RULE, compare

    pack = get_pack(lang)
    folder = output_folder(trained)
    stages = Stages(dataset, pack, split, ignore_identical_ids=ignore_identical_ids_for(dataset.name),
                    show_progress=show_progress)
    outcomes = {}
    for name, system in zip(("base", "trained"), systems(kind, base_model, trained)):
        log.info("evaluating the %s model on %s [%s]", name, dataset.name, split)
        outcomes[name] = evaluate_system(stages, system, folder)
    summary: dict[str, Any] = {"split": split, "dataset": dataset.name, "language": lang,
                               "system": "dense retrieval" if kind == "bi-encoder" else
                               f"BM25 top {RERANK_DEPTH} reranked", "folder": str(folder)}
    for name, outcome in outcomes.items():
        summary[name] = {"model": base_model if name == "base" else str(trained),
                         **{m: round(outcome.results.metrics[m], 6) for m in METRICS},
                         "results_file": outcome.results_path.name, "run_file": outcome.run_path.name}
    summary["difference"] = {}
    for metric in METRICS:
        test = compare("trained vs base", metric, outcomes["base"].results.per_query_metric(metric),
                       outcomes["trained"].results.per_query_metric(metric), permutations=PERMUTATIONS)
        summary["difference"][metric] = {"trained_minus_base": round(test.difference, 6), "queries": test.n,
                                         "paired_t_p": round(test.t_p, 6), "randomization_p": round(test.perm_p, 6)}
    summary["tests"] = (f"two-sided paired t-test and randomization test ({PERMUTATIONS} sign flips, seed 0) "
                        f"over per-query scores (beirx.significance); {PAIRING_RULE}")
    write_json(folder / SUMMARY, summary)
    return summary


def lines(summary: dict[str, Any]) -> list[str]:
    """The comparison in words, for the terminal and the card."""
    out = []
    for metric in METRICS:
        diff = summary["difference"][metric]
        out.append(f"{metric}: base {summary['base'][metric]:.4f}, trained {summary['trained'][metric]:.4f} "
                   f"({diff['trained_minus_base']:+.4f}; paired t-test p = {diff['paired_t_p']:.3g}, "
                   f"randomization p = {diff['randomization_p']:.3g}, {diff['queries']} queries)")
    return out
