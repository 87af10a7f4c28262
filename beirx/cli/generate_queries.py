"""``beirx generate-queries``: synthetic queries for a corpus (GenQ / doc2query) written as a training split.

The library code is :mod:`beirx.train.genq`; rerunning a stopped command resumes from its cache.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from beirx.cli.types import non_negative_int, output_dir, positive_int, seed, unit_weight
from beirx.cli import show_progress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help="catalogue name, BEIR folder or hf:ORG/NAME")
    parser.add_argument("--lang", default=None, help="language of the corpus (default: a translation's, else en)")
    parser.add_argument("--model", required=True, help="seq2seq query generator (T5, BART ...): folder or Hub id")
    parser.add_argument("--per-doc", type=positive_int, default=3, help="queries per document (default 3)")
    parser.add_argument("--output", type=output_dir, required=True,
                        help="folder for the BEIR training split (corpus, queries, qrels, generation.json)")
    parser.add_argument("--split", default="train", help="name of the qrels split written (default train)")
    parser.add_argument("--batch-size", type=positive_int, default=16, help="documents per generation batch (default 16)")
    parser.add_argument("--max-length", type=positive_int, default=64, help="query tokens at most (default 64)")
    parser.add_argument("--doc-max-length", type=positive_int, default=350, help="document tokens read (default 350)")
    parser.add_argument("--top-p", type=unit_weight, default=0.95, help="nucleus sampling p (default 0.95, BEIR GenQ)")
    parser.add_argument("--top-k", type=non_negative_int, default=25, help="top-k sampling (default 25, BEIR GenQ)")
    parser.add_argument("--seed", type=seed, default=42, help="sampling seed (default 42)")
    parser.add_argument("--prefix", default="", help="text put before each document (e.g. 'generate query: ')")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: cuda when available)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="SQLite cache of generated queries "
                             "(default $BEIRX_HOME/generated_queries/queries.sqlite)")


def run(args) -> int:
    from beirx.train.genq import GenerationOptions, generate_queries

    opts = GenerationOptions(dataset=args.dataset, model=args.model, output=args.output, per_doc=args.per_doc,
                             lang=args.lang, split=args.split, batch_size=args.batch_size, max_length=args.max_length,
                             doc_max_length=args.doc_max_length, top_p=args.top_p, top_k=args.top_k, seed=args.seed,
                             prefix=args.prefix, device=args.device, cache=args.cache)
    manifest = generate_queries(opts, show_progress=show_progress(args))
    c = manifest.counts
    print(f"{c['queries']} queries for {c['documents']} documents ({c['from_cache']} from the cache, "
          f"{c['generated']} generated) in {opts.output}\nmanifest: {opts.output / 'generation.json'}\n"
          f"train on it:  beirx train bi-encoder --dataset {opts.output} --split {opts.split} "
          "--model MODEL --output DIR")
    return 0
