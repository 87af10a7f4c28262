"""``beirx translate``: machine-translate a BEIR dataset, keeping IDs and qrels, then score its quality.

    beirx translate --dataset D --lang L [--src en]
                    [--translator hf|ctranslate2|apertium|google|deepl|openai|hf-llm]
                    [--model M] [--fields corpus,queries] [--batch-size N] [--limit N] [--output DIR]
                    [--shard I/N | --assemble [N]] [--executor local|ray [--ray-address A] [--workers N]
                    [--gpus-per-worker G]]
                    [--llm-backend openai|transformers] [--llm-base-url URL] [--api chat|completions]
                    [--llm-concurrency N] [--llm-attempts N] [--retries N] [--fallback TRANSLATOR]
                    [--prompt-file F] [--glossary F] [--llm-price-in USD --llm-price-out USD]
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

The command only parses and reports: the flags become one :class:`~beirx.translate.runner.TranslateRequest`
(each backend's own flags, declared by its class, become its options),
:func:`beirx.translate.runner.run_translation` runs it, and the result is printed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from beirx.cli import show_progress
from beirx.cli.flags import add_options, given
from beirx.cli.types import (comma_list, key_value, non_negative_float, non_negative_int, output_dir, positive_float,
                             positive_int)

if TYPE_CHECKING:
    from beirx.translate.runner import TranslateRequest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from beirx.translate.backends import TRANSLATORS

    parser.add_argument("--dataset", required=True, help="source dataset: BEIR folder, catalogue name or hf:ORG/NAME")
    parser.add_argument("--lang", required=True, help="target language (ISO 639-1, e.g. pl, es)")
    parser.add_argument("--src", default="en", help="source language (default en)")
    parser.add_argument("--translator",
                        help=f"backend: {', '.join(TRANSLATORS.in_order())} (default hf); --llm-backend alone names "
                             "the LLM translator (openai: a server, hf-llm: in this process)")
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
                        help="encoder of the quality report: Hub id or folder, or use-multilingual-v3 "
                             "(default LaBSE)")
    parser.add_argument("--quality-max-items", type=positive_int,
                        help="score a seeded random subset of at most N items per field (default: all)")
    scale = parser.add_argument_group("large datasets")
    scale.add_argument("--shard", metavar="I/N",
                       help="translate only shard I of N (a deterministic share of the batches) into the shard's own "
                            "memory file beside --memory; write no dataset (then --assemble)")
    scale.add_argument("--assemble", nargs="?", type=non_negative_int, const=0, metavar="N",
                       help="merge the memories of shards 1..N (N: from the files when omitted) and write the dataset; "
                            "fails, writing nothing, naming any shard that is missing or incomplete")
    scale.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="who translates the batches: this process (default) or translator replicas on Ray "
                            "(pip install 'beirx[ray]')")
    scale.add_argument("--ray-address", help="Ray cluster to join: auto or HOST:PORT (default: a local Ray instance)")
    scale.add_argument("--workers", type=positive_int, default=2, help="translator replicas on Ray (default 2)")
    scale.add_argument("--gpus-per-worker", type=non_negative_float, default=0.0, help="GPUs per Ray replica (default 0: CPU)")
    parser.add_argument("--max-cost", type=non_negative_float, default=None, metavar="USD",
                        help="paid backends (google, deepl): required for a real run; refuse when the estimate "
                             "exceeds it. LLM backends: stop before this run's spending (at --llm-price-in/-out) "
                             "would exceed it; what was done is kept, and a rerun resumes with a new cap")
    _add_translator_options(parser)


def _flag_options() -> list:
    """Every option of a registered backend that has a flag, once (a subclass lists its base's)."""
    from beirx.translate.backends import TRANSLATORS

    options = {}
    for name in TRANSLATORS.in_order():
        for option in TRANSLATORS.get(name).OPTIONS:
            if option.flag_name() is not None:
                options.setdefault(option.flag_name(), option)
    return list(options.values())


def _add_translator_options(parser: argparse.ArgumentParser) -> None:
    """The backends' flags, generated from their options: one group per backend family (``flags_title``),
    naming the backends that take them; ``--batch`` and ``--batch-poll`` (the command's, for the Batch API) join
    the LLM translators'."""
    from beirx.translate.backends import TRANSLATORS

    groups: dict[str, tuple[list[str], list]] = {}
    seen: set[str] = set()
    for name in TRANSLATORS.in_order():
        klass = TRANSLATORS.get(name)
        flagged = [option for option in klass.OPTIONS if option.flag_name() is not None]
        if not flagged:
            continue
        names, options = groups.setdefault(klass.flags_title or name, ([], []))
        names.append(name)
        options += [option for option in flagged if option.flag_name() not in seen]
        seen.update(option.flag_name() for option in flagged)
    for title, (names, options) in groups.items():
        listed = ", ".join(names)
        group = parser.add_argument_group(f"{title} ({listed})" if title not in names else
                                          f"{listed} (--translator {listed})")
        add_options(group, options)
        if any(TRANSLATORS.get(name).supports_batch_api for name in names):
            group.add_argument("--batch", action="store_true",
                               help="openai: send the units through the OpenAI Batch API (about half price on hosted "
                                    "APIs, done within 24 h); a rerun resumes the batch in flight")
            group.add_argument("--batch-poll", type=positive_float, metavar="SECONDS",  # default: the executor's
                               help="how often --batch asks whether the batch is done (default 30)")


def translator_name(args) -> str:
    """``--translator``, else the LLM translator ``--llm-backend`` names, else hf; an LLM backend given to another
    translator is refused (the LLM translators check that theirs agrees)."""
    from beirx.errors import BeirxError
    from beirx.translate.backends import TRANSLATOR_FOR_BACKEND

    backend = getattr(args, "llm_backend", None)
    if args.translator is None:
        return TRANSLATOR_FOR_BACKEND[backend] if backend else "hf"
    if backend and args.translator not in TRANSLATOR_FOR_BACKEND.values():
        raise BeirxError(f"--llm-backend {backend} is for the LLM translators (--translator "
                         f"{TRANSLATOR_FOR_BACKEND[backend]}), not --translator {args.translator}")
    return args.translator


def request_from_args(args) -> "TranslateRequest":
    """The runner's request: the flags as they are, the backends' flags given (by option name) and
    ``--translator-option`` pairs as the backend's options (a flag of another backend's option is refused by the
    backend, naming its own)."""
    from beirx.translate.backends import TRANSLATORS
    from beirx.translate.runner import TranslateRequest

    args.translator = translator_name(args)
    TRANSLATORS.get(args.translator)  # an unknown name is refused naming the known ones
    options = {**given(args, _flag_options()), **dict(args.translator_option)}
    return TranslateRequest(
        dataset=args.dataset, lang=args.lang, src=args.src, translator=args.translator, model=args.model,
        options=options, fields=tuple(args.fields), limit=args.limit, batch_size=args.batch_size, output=args.output,
        memory=args.memory, verbatim=args.verbatim,
        verbatim_kinds=tuple(args.verbatim_kinds) if args.verbatim_kinds else None,
        max_segment_tokens=args.max_segment_tokens, dry_run=args.dry_run, shard=args.shard, assemble=args.assemble,
        executor=args.executor, ray_address=args.ray_address, workers=args.workers,
        gpus_per_worker=args.gpus_per_worker, max_cost=args.max_cost, batch=args.batch, batch_poll=args.batch_poll,
        quality=not args.no_quality, quality_encoder=args.quality_encoder, quality_max_items=args.quality_max_items,
        progress=show_progress(args))


def run(args) -> int:
    from beirx.translate.pipeline import MANIFEST
    from beirx.translate.runner import run_translation

    result = run_translation(request_from_args(args), say=print)
    if result.dry_run is not None:
        print(json.dumps(result.dry_run, indent=2, ensure_ascii=False))
        return 0
    if result.shard is not None:
        done, counts = result.shard, result.shard["counts"]
        print(f"shard {done['shard']}: {counts['segments_unique']} unique segments, {counts['from_memory']} from "
              f"memory, {counts['translated']} translated in {done['seconds']:.1f} s -> {done['memory']}")
        return 0
    manifest, output = result.manifest, result.output
    if manifest.llm:
        _print_llm(manifest.llm, output)
    if manifest.cost:
        print(f"cost: USD {manifest.cost['spent_usd']:.2f} at list price for {manifest.cost['characters_sent']:,} "
              f"characters (recorded in {MANIFEST})")
    counts, timings = manifest.counts, manifest.timings
    print(f"{output}: {counts.get('corpus', 0)} documents, {counts.get('queries', 0)} queries translated "
          f"{args.src}->{args.lang} with {args.translator} in {timings['total']:.1f} s")
    print(f"segments: {counts['segments_total']} total, {counts['segments_unique']} unique, "
          f"{counts['from_memory']} from memory, {counts['translated']} translated")
    print(f"manifest: {output / MANIFEST}")
    if result.quality_report is not None:
        print(f"quality report: {result.quality_report}")
    return 0


def _print_llm(llm: dict, output: Path) -> None:
    this_run, units = llm["this_run"], llm["this_run"]["units"]
    print(f"LLM units this run: {units['accepted']} accepted, {units['retried']} retried, {units['fallback']} fell "
          f"back, {units['flagged']} flagged; {this_run['requests']} requests, {this_run['prompt_tokens']:,} + "
          f"{this_run['completion_tokens']:,} tokens, USD {this_run['cost_usd']:.4f}")
    flagged = {field: f"{c['records_fallback']} fell back, {c['records_flagged']} flagged"
               for field, c in (llm.get("output") or {}).items()}
    if flagged:
        print(f"records: {'; '.join(f'{k}: {v}' for k, v in flagged.items())} "
              f"(see {output / 'translation_flags.jsonl'})")
