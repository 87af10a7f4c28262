"""``beirx train bi-encoder|cross-encoder``: fine-tune a retriever or a reranker on a dataset split's qrels.

The library code is :mod:`beirx.train`; this module only maps flags to
:class:`~beirx.train.options.TrainOptions`. Rerunning a stopped command resumes from its last checkpoint.
"""

from __future__ import annotations

import argparse
import json

from beirx.cli.types import checked, non_negative_float, output_dir, positive_float, positive_int
from beirx.cli import show_progress
from beirx.train.options import CROSS_ENCODER_LOSSES, DEFAULT_CROSS_ENCODER_LOSS, SAVE_STEPS

max_steps = checked(int, lambda v: v == -1 or v >= 1, "-1 (use --epochs) or at least 1", "max_steps")
warmup_ratio = checked(float, lambda v: 0 <= v < 1, "in [0, 1)", "warmup_ratio")
dev_fraction = checked(float, lambda v: 0 <= v <= 0.5, "between 0 and 0.5", "dev_fraction")
seed = checked(int, lambda v: 0 <= v < 2 ** 32, "between 0 and 2**32 - 1", "seed")

KINDS = {"bi-encoder": "dense retriever (sentence-transformers, MultipleNegativesRankingLoss with GradCache)",
         "cross-encoder": "reranker (CrossEncoder, binary or listwise loss on mined negatives)"}


def _shared(parser: argparse.ArgumentParser, kind: str) -> None:
    parser.add_argument("--dataset", required=True, help="catalogue name, BEIR folder or hf:ORG/NAME")
    parser.add_argument("--lang", default=None, help="language of the dataset and of the BM25 analyzer for "
                                                     "mining (default: a translation's language, else en)")
    parser.add_argument("--split", default="train", help="qrels split to train on (default train)")
    parser.add_argument("--model", required=True, help="base model: local folder or Hub id")
    parser.add_argument("--output", type=output_dir, required=True, help="folder for the trained model and its card")
    parser.add_argument("--epochs", type=non_negative_float, default=1.0, help="epochs (default 1)")
    parser.add_argument("--max-steps", type=max_steps, default=-1,
                        help="stop after this many steps (overrides --epochs)")
    parser.add_argument("--batch-size", type=positive_int, default=32,
                        help="examples per batch and device (default 32)")
    parser.add_argument("--learning-rate", "--lr", type=positive_float, default=2e-5,
                        help="peak learning rate (default 2e-5)")
    parser.add_argument("--warmup-ratio", type=warmup_ratio, default=0.1,
                        help="linear warm-up share of steps (default 0.1)")
    parser.add_argument("--max-seq-length", type=positive_int, default=None,
                        help="tokens per text during training (default: the 99th percentile of the training texts' "
                             "token lengths, capped by the model)")
    if kind == "bi-encoder":
        parser.add_argument("--mini-batch-size", type=positive_int, default=None,
                            help="texts encoded per forward/backward pass (GradCache: the gradient is the whole "
                                 "batch's, the memory one mini-batch's; default 8)")
        parser.add_argument("--scale", type=positive_float, default=None,
                            help="similarity scale of the loss, 1/temperature (default 20)")
    if kind == "cross-encoder":
        parser.add_argument("--loss", choices=CROSS_ENCODER_LOSSES, default=None,
                            help="bce: binary cross-entropy on each pair, positives weighted by negatives/positives; "
                                 "listwise: softmax cross-entropy of each positive against its query's BM25 "
                                 "negatives and one other query's document from the batch "
                                 f"(default {DEFAULT_CROSS_ENCODER_LOSS})")
    parser.add_argument("--max-memory", type=positive_float, default=None, metavar="GB",
                        help="peak memory the training may use; it stops before the first step, naming options "
                             "that fit, when the estimate is larger (default: the memory available at the start)")
    parser.add_argument("--seed", type=seed, default=42, help="seed of initialisation and data order (default 42)")
    reranker = kind == "cross-encoder"
    parser.add_argument("--hard-negatives", choices=("none", "bm25"), default="bm25" if reranker else "none",
                        help="mine negatives with the language's BM25, never a judged positive (default: "
                             f"{'bm25' if reranker else 'none, in-batch negatives only'})")
    parser.add_argument("--negatives", type=positive_int, default=4 if reranker else 1,
                        help="mined negatives per query")
    parser.add_argument("--eval-split", default=None,
                        help="validate on this split (e.g. dev) during training: nDCG@10 on its judged documents "
                             "plus BM25 candidates, logged and written to the card")
    parser.add_argument("--eval-steps", type=positive_int, default=None,
                        help="validate every N steps (default: at each checkpoint, and always at the end)")
    parser.add_argument("--eval-candidates", type=positive_int, default=50,
                        help="BM25 documents pooled per validation query (default 50)")
    parser.add_argument("--evaluate", default=None, metavar="SPLIT",
                        help="after training, evaluate the base and the trained model on SPLIT (e.g. test) as beirx "
                             "eval does (full corpus; " + ("dense retrieval" if kind == "bi-encoder" else
                                                           "reranking BM25's top 100") +
                             "), print both with the paired significance of the difference, and record them in the "
                             "card and OUTPUT-evaluation/evaluation.json")
    parser.add_argument("--dev-fraction", type=dev_fraction, default=0.1,
                        help="share of the training queries held out (seeded by --seed) to evaluate the base model "
                             "and each checkpoint on, by nDCG@10 over the full corpus; the best is kept, the base "
                             "included, and training uses the other queries (default 0.1; 0: no dev slice, the last "
                             "checkpoint is kept)")
    parser.add_argument("--dev-max-queries", type=positive_int, default=1000,
                        help="at most this many dev queries (default 1000)")
    parser.add_argument("--save-steps", type=positive_int, default=None,
                        help=f"checkpoint (and, with a dev slice, evaluate) every N steps (default: about a quarter "
                             f"of the run with a dev slice, at most {SAVE_STEPS}; else {SAVE_STEPS})")
    parser.add_argument("--logging-steps", type=positive_int, default=10,
                        help="log the loss every N steps (default 10)")
    parser.add_argument("--device", default=None, help="cpu, or cuda (every visible GPU; default when present)")
    parser.add_argument("--fp16", action="store_true", help="mixed precision (GPU)")
    parser.add_argument("--keep-checkpoints", action="store_true", help="keep OUTPUT/checkpoints after training")
    parser.add_argument("--overwrite", action="store_true", help="train again into an OUTPUT that holds a model")
    parser.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more log output")
    parser.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="warnings and errors only")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                        help="progress bar with the loss (default: on a terminal; log lines otherwise)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    for kind, help_text in KINDS.items():
        _shared(sub.add_parser(kind, help=help_text, description=f"Train a {help_text}."), kind)


def run(args) -> int:
    from beirx.train.options import TrainOptions

    opts = TrainOptions(dataset=args.dataset, model=args.model, output=args.output, lang=args.lang, split=args.split,
                        epochs=args.epochs, max_steps=args.max_steps, batch_size=args.batch_size,
                        learning_rate=args.learning_rate, warmup_ratio=args.warmup_ratio,
                        max_seq_length=args.max_seq_length, seed=args.seed, save_steps=args.save_steps,
                        logging_steps=args.logging_steps, hard_negatives=args.hard_negatives,
                        negatives=args.negatives, device=args.device, fp16=args.fp16,
                        keep_checkpoints=args.keep_checkpoints, overwrite=args.overwrite,
                        eval_split=args.eval_split, eval_steps=args.eval_steps,
                        eval_candidates=args.eval_candidates, max_memory=args.max_memory, evaluate=args.evaluate,
                        dev_fraction=args.dev_fraction, dev_max_queries=args.dev_max_queries,
                        **({"mini_batch_size": args.mini_batch_size, "scale": args.scale}
                           if args.kind == "bi-encoder" else {"loss": args.loss}))
    if args.kind == "bi-encoder":
        from beirx.train.bi_encoder import train_bi_encoder as train
    else:
        from beirx.train.cross_encoder import train_cross_encoder as train
    record = train(opts, show_progress=show_progress(args))
    data, run_info = record["training_data"], record["training"]
    if record.get("resumed"):
        print(f"{opts.output} already holds the model this command trains: nothing trained"
              + ("; its evaluation completed" if record["resumed"] == "evaluation" else ""))
    print(f"trained {args.kind}: {opts.output}\n"
          f"  data: {data['dataset']} [{data['language']}/{data['split']}] {data['num_pairs']} pairs, "
          f"checksum {data['checksum']}\n"
          f"  {run_info['steps']} steps, last logged loss {run_info['last_logged_loss']}, "
          f"{run_info['seconds_this_session']} s this session"
          + (f" (resumed from {run_info['resumed_from']})" if run_info["resumed_from"] else "") + "\n"
          f"  parameters: {json.dumps(record['parameters'])}")
    for entry in run_info["validation"] or ():
        print(f"  validation [{data['validation']['split']}] step {entry['step']}: nDCG@10 {entry['ndcg@10']:.4f}")
    chosen, dev = run_info.get("selection"), data.get("dev") or {}
    if chosen:
        print(f"  dev slice: {dev['num_queries']} of {dev['of_queries']} {data['split']} queries, nDCG@10 "
              + ", ".join(f"{p['model']} {p['ndcg@10']:.4f}" for p in chosen["curve"]))
        print(f"  {chosen['verdict']}")
    elif "none" in dev:
        print(f"  dev slice: none ({dev['none']})")
    if record.get("evaluation"):
        from beirx.train.evaluation import lines

        summary = record["evaluation"]
        print(f"  evaluation on {summary['dataset']} [{summary['language']}/{summary['split']}] "
              f"({summary['system']}, full corpus; {summary['folder']}):")
        for line in lines(summary):
            print(f"    {line}")
    return 0
