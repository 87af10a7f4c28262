"""``beirx translate``: machine-translate a BEIR dataset, keeping IDs and qrels, then score its quality.

    beirx translate --dataset D --lang L [--src en]
                    [--translator hf|ctranslate2|apertium|google|deepl|openai|hf-llm]
                    [--model M] [--fields corpus,queries] [--batch-size N] [--limit N] [--output DIR]
                    [--shard I/N | --assemble [N]] [--executor local|ray [--ray-address A] [--workers N]
                    [--gpus-per-worker G]]
                    [--base-url URL] [--api chat|completions] [--concurrency N] [--retries N]
                    [--fallback TRANSLATOR] [--prompt-file F] [--glossary F] [--price-in USD --price-out USD]
                    [--max-cost USD] [--batch]

The output defaults to ``$BEIRX_HOME/datasets/<name>-<lang>``, where ``beirx eval --dataset <name>
--lang <lang>`` looks for it (a ``--limit`` preview goes to ``<name>-limit<N>-<lang>`` instead, so it is
never taken for the full dataset). Rerunning an interrupted command resumes from the translation memory.
Large datasets: ``--shard I/N`` translates one deterministic share of the batches into its own memory
file (any scheduler can run the N commands), ``--assemble`` merges them and writes the dataset;
``--executor ray`` sends the batches to translator replicas on Ray (see docs/translating-msmarco.md).
LLM translators (``openai``: any OpenAI-compatible server; ``hf-llm``: a local causal LM) translate whole
documents, validate every answer, retry, fall back (``--fallback``) or flag (``translation_flags.jsonl``);
see :mod:`beirx.translate.llm`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
from pathlib import Path

from beirx.argtypes import (comma_list, key_value, non_negative_float, non_negative_int, output_dir, positive_float,
                            positive_int)
from beirx.cli import show_progress
from beirx.errors import BeirxError

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help="source dataset: BEIR folder, catalogue name or hf:ORG/NAME")
    parser.add_argument("--lang", required=True, help="target language (ISO 639-1, e.g. pl, es)")
    parser.add_argument("--src", default="en", help="source language (default en)")
    parser.add_argument("--translator", default="hf",
                        help="backend: hf, ctranslate2, apertium, google, deepl, openai, hf-llm (default hf)")
    parser.add_argument("--model", help="backend model: Hub id or folder (hf, ctranslate2), Apertium mode "
                                        "(e.g. eng-cat_valencia); default: the language pack's model")
    parser.add_argument("--translator-option", action="append", default=[], metavar="KEY=VALUE", type=key_value,
                        help="backend option, repeatable (e.g. beam_size=1, device=cuda, compute_type=int8)")
    parser.add_argument("--fields", default="corpus,queries", type=comma_list,
                        help="comma-separated fields to translate; the others are copied (default corpus,queries)")
    parser.add_argument("--batch-size", type=positive_int, help="segments per backend call (default: the backend's)")
    parser.add_argument("--limit", type=positive_int, help="translate only the first N records of each field (a preview)")
    parser.add_argument("--output", type=output_dir, help="output folder (default: $BEIRX_HOME/datasets/<name>-<lang>)")
    parser.add_argument("--memory", type=Path,
                        help="translation memory (SQLite; default $BEIRX_HOME/translation_memory/memory.sqlite)")
    parser.add_argument("--verbatim", default="auto", choices=("auto", "placeholders", "split", "off"),
                        help="keep URLs/e-mails/numbers/code verbatim: placeholders the backend keeps, splitting "
                             "around them, or off (default auto: placeholders if the backend keeps them)")
    parser.add_argument("--verbatim-kinds", type=comma_list,
                        help="comma-separated subset of url,email,number,code (default: all with placeholders, "
                             "url,email with split)")
    parser.add_argument("--max-segment-tokens", type=positive_int,
                        help="cut segments to at most this many model tokens (default and cap: the model's limit)")
    parser.add_argument("--dry-run", action="store_true",
                        help="count segments and characters still to translate (and the cost of API backends); "
                             "translate nothing")
    parser.add_argument("--no-quality", action="store_true", help="skip the quality report after translating")
    parser.add_argument("--quality-encoder", default="sentence-transformers/LaBSE",
                        help="encoder of the quality report: Hub id or folder (default LaBSE)")
    parser.add_argument("--quality-max-items", type=positive_int,
                        help="score a seeded random subset of at most N items per field (default: all)")
    scale = parser.add_argument_group("large datasets")
    scale.add_argument("--shard", metavar="I/N",
                       help="translate only shard I of N (a deterministic share of the batches) into the shard's own "
                            "memory file beside --memory; write no dataset (then --assemble)")
    scale.add_argument("--assemble", nargs="?", type=int, const=0, metavar="N",
                       help="merge the memories of shards 1..N (N: from the files when omitted) and write the dataset; "
                            "fails, writing nothing, naming any shard that is missing or incomplete")
    scale.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="who translates the batches: this process (default) or translator replicas on Ray "
                            "(pip install 'beirx[ray]')")
    scale.add_argument("--ray-address", help="Ray cluster to join: auto or HOST:PORT (default: a local Ray instance)")
    scale.add_argument("--workers", type=positive_int, default=2, help="translator replicas on Ray (default 2)")
    scale.add_argument("--gpus-per-worker", type=float, default=0.0, help="GPUs per Ray replica (default 0: CPU)")
    parser.add_argument("--max-cost", type=non_negative_float, default=None, metavar="USD",
                        help="paid backends (google, deepl): required for a real run; refuse when the estimate "
                             "exceeds it. LLM backends: stop before this run's spending (at --price-in/--price-out) "
                             "would exceed it; what was done is kept, and a rerun resumes with a new cap")
    llm = parser.add_argument_group("LLM translators (openai, hf-llm)")
    llm.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://localhost:8000/v1 (default: "
                                        "$OPENAI_BASE_URL, else OpenAI's API; the key only from $OPENAI_API_KEY)")
    llm.add_argument("--api", choices=("chat", "completions"),
                     help="chat completions (default), or few-shot plain completions for base models")
    llm.add_argument("--concurrency", type=positive_int, help="requests in flight (default 8)")
    llm.add_argument("--timeout", type=positive_float, help="seconds a request attempt may go without progress (no "
                     "answer yet, no new token; default 120); an attempt ends after 10x that in all")
    llm.add_argument("--retries", type=non_negative_int,
                     help="rejected answers sent again with a stricter prompt (default 2)")
    llm.add_argument("--fallback", metavar="TRANSLATOR",
                     help="backend for units still rejected after the retries (e.g. apertium, hf); "
                          "default: write them flagged")
    llm.add_argument("--prompt-file", type=Path, help="TOML file overriding beirx's prompts (see "
                                                      "beirx/translate/llm/prompts.toml)")
    llm.add_argument("--glossary", type=Path, help="TSV: term TAB translation, or a term alone (keep it)")
    llm.add_argument("--unit-tokens", type=positive_int,
                     help="document unit budget in tokens; longer documents split at paragraphs, then "
                          "sentences (default 1000)")
    llm.add_argument("--price-in", type=non_negative_float, metavar="USD",
                     help="USD per million input tokens (cost in the manifest, --dry-run, --max-cost)")
    llm.add_argument("--price-out", type=non_negative_float, metavar="USD", help="USD per million output tokens")
    llm.add_argument("--batch", action="store_true",
                     help="openai: send the units through the OpenAI Batch API (about half price on hosted APIs, "
                          "done within 24 h); a rerun resumes the batch in flight")
    llm.add_argument("--batch-poll", type=positive_float, default=30.0, metavar="SECONDS",
                     help="how often --batch asks whether the batch is done (default 30)")


#: LLM flags and the translator options they set (given only when used, so other backends never see them).
LLM_OPTIONS = {"base_url": "base_url", "api": "api", "concurrency": "concurrency", "timeout": "timeout",
               "retries": "retries", "fallback": "fallback", "prompt_file": "prompt_file", "glossary": "glossary",
               "unit_tokens": "unit_tokens", "price_in": "price_in", "price_out": "price_out"}


def translator_options(args, translator_class) -> dict[str, object]:
    """``--translator-option`` pairs, the LLM flags that were given, and ``--max-cost`` for a backend that
    enforces it itself (it declares a ``max_cost`` option)."""
    options = {key: getattr(args, flag) for flag, key in LLM_OPTIONS.items() if getattr(args, flag, None) is not None}
    options = {k: str(v) if isinstance(v, Path) else v for k, v in options.items()}
    if args.max_cost is not None and "max_cost" in translator_class.declared_options():
        options["max_cost"] = args.max_cost
    return {**options, **dict(args.translator_option)}


def default_output(dataset, lang: str, limit: int | None) -> Path:
    from beirx.data.cache import dataset_dir

    name = dataset.name if limit is None else f"{dataset.name}-limit{limit}"
    return dataset_dir(name, lang)


def run(args) -> int:
    from beirx.translate.backends import TRANSLATORS

    if args.lang == args.src:
        raise BeirxError(f"--lang and --src are both {args.lang!r}")
    # Backend, options and credential first: a typo or a missing key fails before any download or segmenting.
    translator_class = TRANSLATORS.get(args.translator)
    translator = translator_class(args.src, args.lang, args.model, **translator_options(args, translator_class))
    with translator:  # its connections and threads are released however the run ends
        return _run(args, translator)


def _run(args, translator) -> int:
    from beirx.data.cache import cache_dir
    from beirx.data.resolve import resolve_dataset
    from beirx.translate import budget, pipeline
    from beirx.translate.memory import TranslationMemory
    from beirx.translate.shards import shard_count

    if not args.dry_run:
        translator.check_ready()
    dataset = resolve_dataset(args.dataset, lang=args.src)
    kinds = tuple(args.verbatim_kinds) if args.verbatim_kinds else None
    memory_path = args.memory or cache_dir("translation_memory") / "memory.sqlite"
    common = {"fields": tuple(args.fields), "limit": args.limit, "verbatim": args.verbatim,
              "verbatim_kinds": kinds, "max_segment_tokens": args.max_segment_tokens}
    progress = show_progress(args)
    if args.shard and args.assemble is not None:
        raise BeirxError("--shard and --assemble are two steps: run the shards first, then --assemble")
    if args.dry_run:
        from beirx.translate.subset_cost import share_of_full

        with TranslationMemory(memory_path) as memory:
            summary = pipeline.dry_run(dataset, translator, memory, **common)
            summary.update(share_of_full(dataset, translator, memory, summary, **common) or {})
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    if args.shard:
        budget.require_cap(translator, args.max_cost)
    with _executor(args, translator) as executor:
        if args.shard:
            return _translate_shard(args, dataset, translator, executor, memory_path, progress, common)
        assemble = (args.assemble or shard_count(memory_path)) if args.assemble is not None else None
        output = args.output or default_output(dataset, args.lang, args.limit)
        with TranslationMemory(memory_path) as memory:
            paid_run = budget.Budget.of(pipeline.dry_run(dataset, translator, memory, **common), translator,
                                        args.max_cost) if budget.is_paid(translator) else None
            if paid_run:
                print(paid_run.summary())
                paid_run.check()
            manifest = pipeline.translate_dataset(dataset, output, translator, memory, batch_size=args.batch_size,
                                                  progress=progress, executor=executor, assemble=assemble, **common)
    if manifest.llm:
        _print_llm(manifest.llm, output)
    if paid_run:
        manifest = paid_run.record(manifest, translator, output)
        print(f"cost: USD {manifest.cost['spent_usd']:.2f} at list price for {manifest.cost['characters_sent']:,} "
              f"characters (recorded in {pipeline.MANIFEST})")
    counts, timings = manifest.counts, manifest.timings
    print(f"{output}: {counts.get('corpus', 0)} documents, {counts.get('queries', 0)} queries translated "
          f"{args.src}->{args.lang} with {args.translator} in {timings['total']:.1f} s")
    print(f"segments: {counts['segments_total']} total, {counts['segments_unique']} unique, "
          f"{counts['from_memory']} from memory, {counts['translated']} translated")
    print(f"manifest: {output / pipeline.MANIFEST}")
    if not args.no_quality:
        _quality(dataset, output, args, progress)
    return 0


def _translate_shard(args, dataset, translator, executor, memory_path: Path, progress: bool, common: dict) -> int:
    """``--shard I/N``: one share of the batches into the shard's own memory file; no dataset is written."""
    from beirx.translate import pipeline
    from beirx.translate.memory import TranslationMemory
    from beirx.translate.shards import Shard

    shard = Shard.parse(args.shard)
    with TranslationMemory(shard.memory_path(memory_path)) as memory:
        done = pipeline.translate_shard(dataset, translator, memory, shard, batch_size=args.batch_size,
                                        progress=progress, executor=executor, **common)
    counts = done["counts"]
    print(f"shard {shard}: {counts['segments_unique']} unique segments, {counts['from_memory']} from memory, "
          f"{counts['translated']} translated in {done['seconds']:.1f} s -> {done['memory']}")
    return 0


@contextlib.contextmanager
def _executor(args, translator):
    """This process, or translator replicas on Ray built from the same command-line arguments, or the OpenAI
    Batch API (``--batch``)."""
    from beirx.data.cache import cache_dir
    from beirx.translate.executors import make_executor

    if args.batch:
        if args.executor != "local" or not hasattr(translator, "client"):
            raise BeirxError("--batch needs --translator openai and the local executor")
        from beirx.translate.llm.batch import BatchExecutor
        from beirx.translate.memory import system_key

        memory = args.memory or cache_dir("translation_memory") / "memory.sqlite"
        shard = f"-shard-{args.shard.replace('/', '-of-')}" if args.shard else ""
        state = memory.parent / "batches" / f"{system_key(translator.describe(), args.src, args.lang)}{shard}.json"
        yield BatchExecutor(translator, state, args.batch_poll)
        return
    if args.executor == "local":
        yield make_executor("local", translator)
        return
    from beirx.translate.backends import TRANSLATORS

    translator_class = TRANSLATORS.get(args.translator)
    options = translator_options(args, translator_class)
    if hasattr(translator, "for_replicas"):  # replicas share one endpoint's concurrency and cost budgets
        options = translator.for_replicas(options, args.workers)
    factory = functools.partial(translator_class, args.src, args.lang, args.model, **options)
    executor = make_executor("ray", translator, factory, workers=args.workers, address=args.ray_address,
                             gpus_per_worker=args.gpus_per_worker)
    try:
        yield executor
    finally:
        executor.close()


def _print_llm(llm: dict, output: Path) -> None:
    run, units = llm["this_run"], llm["this_run"]["units"]
    print(f"LLM units this run: {units['accepted']} accepted, {units['retried']} retried, {units['fallback']} fell "
          f"back, {units['flagged']} flagged; {run['requests']} requests, {run['prompt_tokens']:,} + "
          f"{run['completion_tokens']:,} tokens, USD {run['cost_usd']:.4f}")
    flagged = {field: f"{c['records_fallback']} fell back, {c['records_flagged']} flagged"
               for field, c in (llm.get("output") or {}).items()}
    if flagged:
        print(f"records: {'; '.join(f'{k}: {v}' for k, v in flagged.items())} "
              f"(see {output / 'translation_flags.jsonl'})")


def _quality(source, output: Path, args, progress: bool) -> None:
    """Run the quality stage on the written dataset; a failure there never undoes the translation."""
    from beirx.data.dataset import BeirDataset

    from beirx.network import HubUnavailable

    try:
        from beirx.translate.quality import report_dir, run_quality

        translated = BeirDataset(output, name=source.name, lang=args.lang)
        run_quality(source, translated, encoder=args.quality_encoder, src_lang=args.src,
                    tgt_lang=args.lang, fields=tuple(f for f in ("queries", "corpus") if f in args.fields),
                    show_progress=progress, max_items=args.quality_max_items)
    except (BeirxError, OSError, ImportError) as exc:
        later = f"beirx quality {output} --source {source.root} --lang {args.lang} --encoder DIR"
        if isinstance(exc, HubUnavailable) and args.quality_encoder in exc.what:
            log.warning("quality report not written: the encoder %s is not in the local Hugging Face cache and the "
                        "Hub cannot be reached (%s); pass --quality-encoder DIR (a local multilingual "
                        "sentence-transformers folder) or --no-quality. The translation is complete; score it with  %s",
                        args.quality_encoder, exc.cause, later)
        else:
            log.warning("quality report not written (%s). The translation is complete; score it with  %s", exc, later)
        return
    print(f"quality report: {report_dir(translated)}")
