"""``beirx subset``: cut a small benchmark that ranks like the big one, and check that it does.

    beirx subset --dataset D --output DIR [--check SYSTEM... | --check-config grid.toml]
    beirx subset --dataset D --queries 50 --pool bm25 dense:MODEL --depth 100 --max-docs 1500 --seed 0
                 --output DIR [--stratify]

Without size options the default recipe (:mod:`beirx.subsets.recipe`): every judged query up to 1,000 and a
1,500-document corpus of the judged documents and a seeded uniform random sample of the others (no pool, so
no system is favoured by how the documents were chosen); ``--pool`` adds a pool of hard negatives, whose bias
for the systems that did not pool the check measures.
    beirx subset check FULL SUBSET [--check SYSTEM...] [--check-config grid.toml] [--runs RUN...]

``--cost TRANSLATOR`` adds the dry-run cost beside the fidelity: characters, tokens and (paid backend) list-price
money of the subset and their share of the full dataset's (:func:`beirx.translate.planning.subset_cost.subset_cost`).

Systems: ``bm25``, ``bm25:fields=flat``, ``dense:MODEL``, ``dense:model=M,backend=onnx,quantize=int8``, or a
TREC run file (see :mod:`beirx.subsets.system_args`); fusions and rerankers come from a grid file's
``[[systems]]``. The check writes run and results files under ``--check-output`` (default
``SUBSET/ranking-check``), records Kendall's tau in ``SUBSET/subset.json`` and warns below ``--tau-threshold``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from beirx.cli.types import key_value, metric_name, non_negative_int, output_dir, positive_int, seed, unit_float
from beirx.cli import show_progress
from beirx.errors import BeirxError
from beirx.subsets.recipe import DEPTH, MAX_DOCS, POOL, QUERY_CAP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="*", metavar="check FULL SUBSET",
                        help="check an existing subset against the full dataset it was cut from")
    make = parser.add_argument_group("making a subset")
    make.add_argument("--dataset", help="catalogue name, BEIR folder (a translation too) or hf:ORG/NAME")
    make.add_argument("--lang", default=None, help="the dataset's language (default: what it states, else en)")
    make.add_argument("--split", default=None, help="qrels split to sample (default: the catalogue's test split)")
    make.add_argument("--queries", type=positive_int, default=None,
                      help=f"queries to keep, a seeded sample (default: every judged query, up to {QUERY_CAP:,})")
    make.add_argument("--stratify", action="store_true",
                      help="sample in proportion within groups of equal number of relevant documents")
    make.add_argument("--pool", nargs="+", default=POOL, metavar="SYSTEM",
                      help="systems whose top --depth documents join the corpus (default: none, the judged "
                           "documents and a uniform random sample; a pool flattens the systems that did not pool)")
    make.add_argument("--depth", type=non_negative_int, default=DEPTH,
                      help=f"pool depth per query and system (default {DEPTH}; shrinks to fit --max-docs)")
    make.add_argument("--max-docs", type=positive_int, default=MAX_DOCS,
                      help=f"corpus size: judged + pooled documents, topped up with a seeded random fill (default "
                           f"{MAX_DOCS:,})")
    make.add_argument("--no-max-docs", dest="max_docs", action="store_const", const=None,
                      help="no corpus budget: the judged documents and the whole pool at --depth, no fill")
    make.add_argument("--seed", type=seed, default=0, help="seed of the query sample and the fill (default 0)")
    make.add_argument("--output", type=output_dir, help="the subset's folder")
    cost = parser.add_argument_group("cost beside the fidelity")
    cost.add_argument("--cost", metavar="TRANSLATOR",
                      help="plan the subset and its full dataset as translation dry runs with this backend (deepl, "
                           "google, openai ...; nothing is sent) and record characters, tokens and, for a paid backend, "
                           "list-price USD with their share of the full dataset in subset.json")
    cost.add_argument("--cost-lang", default="es", help="target language of the --cost dry run (default es)")
    cost.add_argument("--cost-model", default=None, help="the --cost backend's model, if it takes one")
    cost.add_argument("--cost-option", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                      help="a --cost backend option, e.g. price_in=0.15 price_out=0.6 for an LLM (USD per million "
                           "tokens); repeatable")
    check = parser.add_argument_group("ranking check")
    check.add_argument("--check", nargs="+", default=[], metavar="SYSTEM",
                       help="systems to evaluate on the full set and the subset (Kendall's tau of their orderings)")
    check.add_argument("--check-config", type=Path, default=None,
                       help="a grid file whose [[systems]] (fusions, rerankers too) join the check")
    check.add_argument("--runs", nargs="+", default=[], metavar="RUN",
                       help="TREC runs on the full set, checked as systems (restricted to the subset on its side)")
    check.add_argument("--check-output", type=output_dir, default=None,
                       help="run and results files of the check (default SUBSET/ranking-check)")
    check.add_argument("--tau-threshold", type=unit_float, default=None,
                       help="warn when Kendall's tau is below this (default 0.9, Voorhees 2000)")
    check.add_argument("--metric", type=metric_name, default="NDCG@10", help="metric the systems are ordered by (default NDCG@10; names as beirx report's --metric)")
    check.add_argument("--no-pool-bias", dest="pool_bias", action="store_false",
                       help="skip the leave-one-family-out measurement of the bias a system that did not pool should "
                            "expect (each pooling family left out of the pool in turn)")
    check.add_argument("--permutations", type=positive_int, default=10_000,
                       help="permutations of the paired randomization test behind the resolution (default 10,000, "
                            "as beirx report)")
    parser.add_argument("--no-index-cache", action="store_true", help="recompute indexes and embeddings")


def _check_systems(args) -> dict:
    from beirx.evaluate.plan import systems_from_config
    from beirx.subsets.system_args import parse_systems, refuse_repeats

    systems = parse_systems(args.check + args.runs)
    if args.check_config:
        for name, system in systems_from_config(args.check_config).items():
            if name in systems:
                raise BeirxError(f"system {name!r} is in --check and in {args.check_config}")
            systems[name] = system
    refuse_repeats(systems)
    return systems


def _run_check(args, full, subset) -> None:
    from beirx.subsets.check import THRESHOLD, check_ranking

    systems = _check_systems(args)
    output = args.check_output or subset.root / "ranking-check"
    check = check_ranking(full, subset, systems, output, metric=args.metric,
                          threshold=THRESHOLD if args.tau_threshold is None else args.tau_threshold,
                          show_progress=show_progress(args), use_cache=not args.no_index_cache,
                          permutations=args.permutations, pool_bias=args.pool_bias)
    print_check(check, output, pooled=bool(subset.subset.pool))


def print_check(check, output, pooled: bool = True) -> None:
    """The check as a table, its figures and, for every swapped pair, whether it is noise or a disagreement;
    ``pooled`` false: the subset has no pool, so no system is marked as one that did not pool."""
    width = max(len(s.label) for s in check.systems)
    print(f"{'system'.ljust(width)}  {check.metric + ' full':>13}  {'subset':>8}  rank full  subset  pooled")
    for s in check.systems:
        print(f"{s.label.ljust(width)}  {s.full:>13.4f}  {s.subset:>8.4f}  {s.full_rank:>9}  {s.subset_rank:>6}  "
              f"{pooled_mark(s) if pooled else '-'}")
    if not pooled:
        print("- no pool: beyond the judged documents the corpus is a uniform random sample, the same for every system "
              "(checked or not)")
    elif any(pooled_mark(s) == "NO *" for s in check.systems):
        print("* did not pool, nor did a system of its family: its own non-relevant top documents may be missing from "
              "the subset, which flatters it (pool bias, expected below); pool from it too (--pool), or read its rank "
              "with care")
    if pooled and any(pooled_mark(s) == "family" for s in check.systems):
        print("family: did not pool itself, but a system of its family did (the same model on another runtime, "
              "another BM25 convention)")
    tau = "undefined" if check.tau is None else f"{check.tau:.4f}"
    p = "" if check.p_value is None else f" (p = {check.p_value:.3g})"
    interval = f", 95% CI {_interval(check.tau_interval)} (unpaired)" if check.tau_interval else ""
    rho = "" if check.rho is None else f"; Spearman's rho {check.rho:.4f}"
    rho += f", 95% CI {_interval(check.rho_interval)} (unpaired)" if check.rho_interval else ""
    print(f"Kendall's tau: {tau}{p}{interval}{rho}; threshold {check.threshold:g}; runs and results in {output}")
    if check.paired_tau_interval:
        print(f"paired (both sides over the same resampled subset queries: the document cut's own fidelity): tau "
              f"{_number(check.paired_tau)} {_interval(check.paired_tau_interval)}, rho {_number(check.paired_rho)} "
              f"{_interval(check.paired_rho_interval)}")
    if check.ceiling_tau_interval:
        print(f"self-ceiling (the full set's own scores on the same draws, against its fixed order; no unpaired "
              f"interval is expected above it): tau {_interval(check.ceiling_tau_interval)}, rho "
              f"{_interval(check.ceiling_rho_interval)}")
    for side, resolved in (("subset", check.subset_resolution), ("full set", check.full_resolution)):
        if resolved is not None:
            smallest = "none" if resolved.smallest_separated is None else f"{resolved.smallest_separated:.4f}"
            largest = "none" if resolved.largest_unresolved is None else f"{resolved.largest_unresolved:.4f}"
            print(f"resolution on the {side} ({resolved.queries} queries): smallest difference separated {smallest}, "
                  f"largest not separated {largest}")
    if check.warning:
        print(f"WARNING: {check.warning}")
    if check.discriminative_power is not None:
        print(power_line(check.discriminative_power))
    if check.pool_bias is not None:
        for line in pool_bias_lines(check.pool_bias, check):
            print(line)
    for swap in check.swaps:
        print(f"  swapped: {swap.first} vs {swap.second}: {swap.full_difference:+.4f} on the full set, "
              f"{swap.subset_difference:+.4f} on the subset -> {swap.verdict} (p = {swap.full_p:.3g} full, "
              f"{swap.subset_p:.3g} subset)")
    for pair in check.swapped if not check.swaps else []:  # a version-1 check has no verdicts
        print(f"  swapped: {pair}")
    if check.reading:
        print(f"Read: {check.reading}.")


def pooled_mark(system) -> str:
    """yes (it pooled), family (a system of each of its families pooled), NO * (not), ? (not known)."""
    if system.pooled:
        return "yes"
    if system.family_pooled:
        return "family"
    return "NO *" if system.pooled is False else "?"


def power_line(power) -> str:
    """Discriminative power kept (Sakai 2006), in one line."""
    if not power.full_separated:
        return (f"discriminative power: the full set separates none of the {power.pairs} pairs at 95%, so none can be "
                f"kept (the subset separates {power.subset_only})")
    return (f"discriminative power: of the {power.full_separated} pairs (of {power.pairs}) the full set separates at "
            f"95%, the subset separates {power.same_order} in the same order ({power.retained:.0%} retained, goal >= "
            f"80%) and {power.reversals} in the opposite order (significant reversals, goal 0); it separates "
            f"{power.subset_only} pairs the full set does not")


def pool_bias_lines(bias, check) -> list[str]:
    """The leave-one-family-out figures, the expected bias of a system that did not pool against the subset's
    resolution, and the bias the checked systems that did not pool show."""
    queries = next((f.queries for f in bias.families if f.bias is not None), None)
    over = f" over {queries} queries):" if queries else "):"
    nobody = bias.families and not bias.families[0].cut
    if nobody:
        lines = ["pool bias: nobody pooled, so a new system is cut like every checked one; how unevenly the cut raises "
                 "each family (its systems' change minus that of the other families' systems, 95% bootstrap interval"
                 + over]
    else:
        lines = ["pool bias, leave-one-family-out (the subset cut again without each pooling family; its systems' "
                 "change minus that of the systems whose families still pooled, 95% bootstrap interval" + over]
    for family in bias.families:
        head = (f"  {family.family} ({len(family.systems)} of its systems, {len(family.reference)} of the others)"
                if not family.cut else
                f"  without {family.family} ({len(family.systems)} of its systems, {len(family.reference)} reference)")
        if family.bias is None:
            lines.append(f"{head}: not measured ({family.note})")
            continue
        reference = "" if family.reference_change is None else f", reference {family.reference_change:+.4f}"
        where = "" if not family.cut else f"; the cut: {family.documents:,} documents, depth {family.depth_reached}"
        lines.append(f"{head}: {family.bias:+.4f} {_signed_interval(family.interval)} (own change "
                     f"{family.change:+.4f}{reference}{where})" + (f" -- {family.note}" if family.note else ""))
    if bias.expected is None:
        lines.append(f"expected bias of a system that did not pool: not measured ({bias.note or 'no family measured'})")
    elif nobody:
        resolved = check.subset_resolution.smallest_separated if check.subset_resolution else None
        against = "" if resolved is None else (f"; the subset resolves {resolved:.4f}: " + (
            "below it" if abs(bias.expected) < resolved else "NOT below it"))
        lines.append(f"expected bias of a new system: none from pooling; the family the cut raises most gains "
                     f"{bias.expected:+.4f} {_signed_interval(bias.expected_interval)} {check.metric} over the others "
                     f"({bias.expected_family}){against}")
    else:
        resolved = check.subset_resolution.smallest_separated if check.subset_resolution else None
        against = ""
        if resolved is not None:
            against = (f"; the subset resolves {resolved:.4f}: " + ("below it" if abs(bias.expected) < resolved else
                                                                    "NOT below it, so a new system's lead over the "
                                                                    "pooled ones may be the subset's doing"))
        lines.append(f"expected bias of a system that did not pool: {bias.expected:+.4f} "
                     f"{_signed_interval(bias.expected_interval)} {check.metric} (without {bias.expected_family}, "
                     f"the largest of {sum(f.bias is not None for f in bias.families)} families){against}")
        if bias.note:
            lines.append(f"  note: {bias.note}")
    for system in bias.unseen:
        lines.append(f"  observed, did not pool: {system.system} {system.bias:+.4f} {_signed_interval(system.interval)} "
                     f"(own change {system.change:+.4f})")
    return lines


def _signed_interval(bounds: list[float] | None) -> str:
    return "" if bounds is None else f"[{bounds[0]:+.4f}, {bounds[1]:+.4f}]"


def _interval(bounds: list[float] | None) -> str:
    return "undefined" if bounds is None else f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def run(args) -> int:
    from beirx.data.dataset import BeirDataset
    from beirx.data.language import dataset_language
    from beirx.data.resolve import resolve_dataset

    if args.action:
        if len(args.action) != 3 or args.action[0] != "check":
            raise BeirxError("expected  beirx subset check FULL SUBSET  (or options only, to make a subset)")
        subset = BeirDataset(args.action[2], lang=dataset_language(args.action[2], args.lang)[0])
        full = resolve_dataset(args.action[1], lang=subset.lang)
        if not (args.check or args.runs or args.check_config):
            raise BeirxError("name the systems to check: --check SYSTEM..., --runs RUN... or --check-config FILE")
        _run_check(args, full, subset)
        return 0
    if not args.dataset or not args.output:
        raise BeirxError("--dataset and --output are required to make a subset")
    from beirx.subsets.cut import check_output, make_subset
    from beirx.subsets.system_args import parse_pool

    lang, _ = dataset_language(args.dataset, args.lang)
    dataset = resolve_dataset(args.dataset, lang=lang)
    pool = parse_pool(args.pool) if args.depth > 0 else {}
    check_output(args.output, dataset)
    check_systems = _check_systems(args) if (args.check or args.runs or args.check_config) else None
    translator = _cost_translator(args, lang) if args.cost else None  # a typo fails before any work
    manifest = make_subset(dataset, args.output, queries=args.queries, pool=pool, depth=args.depth,
                           max_docs=args.max_docs, seed=args.seed, stratify=args.stratify, split=args.split,
                           show_progress=show_progress(args), use_cache=not args.no_index_cache)
    counts, method = manifest.counts, manifest.method
    print(f"{args.output}: subset {manifest.name} ({manifest.language}, split {manifest.split}) of {dataset.root}")
    how = f"every judged query up to {method.queries:,}" if method.queries_cap else f"seed {method.seed}"
    print(f"queries: {counts.queries} of {counts.candidate_queries} ({how}"
          f"{', stratified' if method.stratify else ''}); qrels {counts.qrels}")
    pooled = (f"{counts.pooled} pooled (depth {method.depth_reached} of {method.depth}) + " if manifest.pool else "")
    print(f"documents: {counts.documents} of {counts.source_documents} = {counts.judged} judged + {pooled}"
          f"{counts.random} random" + ("" if manifest.pool else " (no pool: every system is cut alike)")
          + (f" (judged but missing from the corpus: {counts.judged_missing})" if counts.judged_missing else ""))
    print(f"characters to translate: {counts.characters:,} of {counts.source_characters:,} = "
          f"{counts.characters / counts.source_characters:.1%} (titles, texts, queries; --cost TRANSLATOR "
          "adds tokens and money)")
    if translator is not None:
        _record_cost(args.output, BeirDataset(args.output, lang=lang), translator)
    if check_systems is not None:
        _run_check(args, dataset, BeirDataset(args.output, lang=lang))
    return 0


def _cost_translator(args, lang: str):
    """The ``--cost`` backend, built (name and options checked) before the subset is cut."""
    from beirx.models.checks import check_if_local
    from beirx.translate.backends import TRANSLATORS

    translator = TRANSLATORS.get(args.cost)
    if translator.model_kind:  # named by the flag the user gave, before the backend loads anything
        check_if_local(args.cost_model, translator.model_kind, "--cost-model", f"--cost {args.cost}")
    return translator(lang, args.cost_lang, args.cost_model, **translator.read_options(dict(args.cost_option)))


def _record_cost(output: Path, subset, translator) -> None:
    """``--cost``: the dry-run cost of the subset beside its full dataset's, printed and kept in subset.json."""
    import dataclasses

    from beirx.artifacts.subset import SubsetManifest
    from beirx.translate.planning.subset_cost import subset_cost

    with translator:
        cost = subset_cost(subset, translator)
    if cost is None:
        raise BeirxError(f"--cost: the full dataset of {output} cannot be compared (see the log)")
    path = SubsetManifest.path_in(output)
    dataclasses.replace(SubsetManifest.load(path), cost=cost).save(path)
    print_cost(cost)


def print_cost(cost: dict) -> None:
    """The subset's cost with a backend and its share of the full dataset's: characters, tokens, money."""
    full, share = cost["full_dataset"], cost["share_of_full"]
    line = (f"cost with {cost['translator']} ({cost['target']}): {cost['characters']:,} of "
            f"{full['characters_total']:,} characters = {share['characters_total']:.1%}, {cost['tokens']:,} of "
            f"{full['tokens_total']:,} tokens = {share['tokens_total']:.1%}")
    if cost.get("estimated_cost_usd") is not None:
        line += (f", USD {cost['estimated_cost_usd']:,.2f} of {full['estimated_cost_usd']:,.2f} at list price"
                 + (f" = {share['estimated_cost_usd']:.1%}" if share.get("estimated_cost_usd") is not None else ""))
    print(line + " (dry run, nothing sent)")
