"""Does the damage-aimed review stratum find the damage? The rows ``beirx review --damage`` draws (those the
best-predicting quality signal ranks worst among the rows retrieval reads) against random samples of the same size:
the share of *damaging rows* each holds (the most-damaged queries' own rows and their judged relevant documents'),
and, with ``--truth`` (the injected-damage benchmark's ``damaged.json``), the share of injected damaged rows.

    python benchmarks/review_damage.py TRANSLATED --source SOURCE --quality QUALITY_JSON... --damage DAMAGE_JSON \\
        [--size 50] [--draws 1000] [--truth damaged.json]

Random samples are drawn two ways, seeded, ``--draws`` times each (mean and 2.5th-97.5th percentiles): uniformly
over every row of the translation (what the review's random strata do) and uniformly over the rows retrieval reads
(the split's judged queries and their judged documents: the fairer baseline, the pool the damage stratum draws
from). Nothing is written: the stratum is drawn as ``beirx review`` draws it (:func:`beirx.review.sample.aimed`).

With ``--results`` (the results beirx report read), the choice is also tested out of sample: the queries split
into ``--folds`` folds, the signal chosen on the others and measured on each, by beirx's rule (precision at the
worst decile) and by the lower bound of Spearman's interval; choosing the best of many signals on the queries it is
measured on flatters it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def _share(keys: list[tuple[str, str]], wanted: set[tuple[str, str]]) -> float:
    return sum(key in wanted for key in keys) / len(keys) if keys else float("nan")


def _random(pool: list[tuple[str, str]], size: int, draws: int, wanted: set, seed: int) -> tuple[float, float, float]:
    rng = random.Random(seed)
    shares = np.array([_share(rng.sample(pool, min(size, len(pool))), wanted) for _ in range(draws)])
    return float(shares.mean()), float(np.percentile(shares, 2.5)), float(np.percentile(shares, 97.5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("translated", type=Path)
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--quality", type=Path, nargs="+", required=True,
                        help="the quality report(s) beirx report read, the translation's own first")
    parser.add_argument("--damage", type=Path, required=True)
    parser.add_argument("--size", type=int, default=50, help="rows in the damage stratum (default 50)")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--truth", type=Path, help="the injected damage (quality_damage.py --retrieval's damaged.json)")
    parser.add_argument("--results", type=Path, nargs="+", help="the results documents (folders) beirx report read")
    parser.add_argument("--folds", type=int, default=2)
    args = parser.parse_args()

    from beirx.artifacts.damage import DamageReport
    from beirx.artifacts.manifest import DatasetSide
    from beirx.artifacts.quality import QualityReport
    from beirx.data.dataset import BeirDataset
    from beirx.review.sample import aimed, damaging_rows

    translated = BeirDataset(args.translated, lang="es")
    side = DatasetSide(path=str(translated.root), name=translated.name, lang="es", checksum=translated.checksum())
    analysis = DamageReport.load(args.damage).find(side)
    if analysis is None:
        sys.exit(f"{args.damage} has no analysis with a chosen signal for {args.translated}")
    quality = QualityReport.load(args.quality[0])
    stratum = aimed(translated, quality, analysis, args.size)
    damaging = damaging_rows(translated, analysis)
    qrels = translated.qrels(analysis.split)
    read = sorted({("queries", q) for q in qrels} | {("corpus", d) for docs in qrels.values()
                                                      for d, rel in docs.items() if rel > 0})
    every = [("queries", q.id) for q in translated.queries.values()] + [("corpus", d.id)
                                                                        for d in translated.iter_corpus()]
    truth = None
    if args.truth:
        truth = {tuple(key.split("/", 1)) for key in json.loads(args.truth.read_text(encoding="utf-8"))}
    chosen = analysis.chosen
    print(f"signal: {chosen.signal} ({chosen.view}): {chosen.reason}")
    print(f"damaging rows: {len(damaging)} (the {len(analysis.damaged)} most-damaged {analysis.split} queries and "
          f"their judged relevant documents) among {len(read)} rows retrieval reads and {len(every)} rows in all\n")
    header = "| sample | rows | damaging rows | share |" + (" injected damage | share |" if truth else "")
    print(header)
    print("|---|---:|---:|---:|" + ("---:|---:|" if truth else ""))

    def line(name: str, keys: list, figures: list[tuple[float, float, float] | float]) -> None:
        cells = []
        for value in figures:
            cells.append(f"{value:.3f}" if isinstance(value, float) else
                         f"{value[0]:.3f} ({value[1]:.3f}-{value[2]:.3f})")
        counts = [str(sum(k in damaging for k in keys))] if keys else ["–"]
        if truth:
            injected = sum(k in truth for k in keys) if keys else "–"
            print(f"| {name} | {args.size} | {counts[0]} | {cells[0]} | {injected} | {cells[1]} |")
        else:
            print(f"| {name} | {args.size} | {counts[0]} | {cells[0]} |")

    line("damage stratum", stratum, [_share(stratum, damaging)] + ([_share(stratum, truth)] if truth else []))
    for name, pool in (("random, rows retrieval reads", read), ("random, every row", every)):
        line(f"{name} (mean, 95% of {args.draws} draws)", [],
             [_random(pool, args.size, args.draws, damaging, args.seed)]
             + ([_random(pool, args.size, args.draws, truth, args.seed)] if truth else []))
    if args.results:
        held_out(args, str(analysis.translated.path))


def held_out(args, translated_path: str) -> None:
    """Choose the signal on all folds but one, measure it on that one."""
    from beirx.report.load import load_results
    from beirx.report.quality_drop import Attribution, analyse, attributions, damaged, relate
    from beirx.report.translations import translations_for

    results = load_results(args.results)
    translations = translations_for(results, [str(q) for q in args.quality])
    items = [item for item in attributions(results, translations, "NDCG@10")
             if item.translation.folder == translated_path and item.documents]
    if not items:
        sys.exit(f"no analysis of {translated_path} in {args.results}")
    item = items[0]
    truth = damaged(item.damage)
    order = list(range(len(item.qids)))
    random.Random(args.seed).shuffle(order)
    folds = [sorted(order[f::args.folds]) for f in range(args.folds)]

    def restrict(keep: list[int]) -> Attribution:
        return Attribution(item.pairs, item.translation, item.metric, item.documents, [item.qids[i] for i in keep],
                           {s: d[keep] for s, d in item.drops.items()}, item.signals,
                           {key: v[keep] for key, v in item.values.items()})

    print(f"\nout of sample ({args.folds} folds of the {len(item.qids)} queries; damaged: the worst decile of the "
          f"whole split, {int(truth.sum())} queries); two rules choose the signal on the other folds: beirx's "
          f"(precision at the worst decile) and the lower bound of Spearman's interval\n")
    print("| fold | rule | chosen on the others | its figure there | held out: precision at the worst decile | "
          "held out: Spearman | random |")
    print("|---:|---|---|---:|---:|---:|---:|")
    shares: dict[str, list[float]] = {rule: [] for rule in RULES}
    rhos: dict[str, list[float]] = {rule: [] for rule in RULES}
    for n, fold in enumerate(folds, 1):
        others = sorted(set(order) - set(fold))
        evidence = analyse(restrict(others), resamples=200, seed=args.seed)
        for rule, pick in RULES.items():
            chosen, figure = pick(evidence)
            values = item.values[(chosen.signal.name, chosen.view)][fold]
            found = relate(values, item.damage[fold], truth[fold], resamples=200, seed=args.seed)
            shares[rule].append(found.precision)
            rhos[rule].append(found.spearman)
            print(f"| {n} | {rule} | {chosen.signal.name} ({chosen.view}) | {figure:.3f} | {found.precision:.3f} "
                  f"(k={found.k}) | {found.spearman:+.3f} | {truth[fold].mean():.3f} |")
    for rule in RULES:
        print(f"| mean | {rule} | | | {float(np.mean(shares[rule])):.3f} | {float(np.mean(rhos[rule])):+.3f} | "
              f"{float(truth.mean()):.3f} |")


def _by_precision(evidence):
    """beirx's rule (:func:`beirx.report.quality_drop.choose`): the chosen signal and its precision."""
    chosen = evidence.evidence(evidence.chosen.signal, evidence.chosen.view)
    return chosen, chosen.damage.precision


def _by_interval(evidence):
    """The eligible signal whose Spearman interval's lower bound is highest, and that bound."""
    from beirx.report.quality_drop import COVERAGE

    eligible = [e for e in evidence.signals if e.damage.ci_low is not None
                and e.damage.queries >= COVERAGE * evidence.queries]
    best = max(eligible, key=lambda e: (e.damage.ci_low, e.damage.spearman))
    return best, best.damage.ci_low


RULES = {"precision@k": _by_precision, "rho lower bound": _by_interval}


if __name__ == "__main__":
    main()
