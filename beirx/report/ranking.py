"""Does the translated benchmark rank systems like the source? Per dataset, target language pair and split: each
system's drop (source − target) with its paired bootstrap interval (:func:`beirx.significance.bootstrap_ci`,
BCa), its rank on both sides, and Kendall's tau-b between the systems' order on the source and on the translation
(``scipy.stats.kendalltau`` with its p-value) with the paired percentile bootstrap interval over the queries both
sides share (:func:`beirx.rank_agreement.intervals`: both sides' means over the same drawn queries, so the interval
measures what the translation changes, not which queries were drawn; [1, 1] when nothing changed).
"""

from __future__ import annotations

import numpy as np

from beirx.rank_agreement import RESAMPLES, intervals, kendall_tau
from beirx.report.groups import language_pairs
from beirx.report.load import Result
from beirx.report.sources import Sources
from beirx.report.table import Cell, Table
from beirx.significance import bootstrap_ci, pair_scores


def _ranks(values: list[float]) -> list[int]:
    """1 = best; equal values share the better rank."""
    return [1 + sum(other > value for other in values) for value in values]


def ranking_table(results: list[Result], sources: Sources, *, options) -> Table:
    metric = options.metric
    resamples = options.bootstrap or RESAMPLES
    groups: dict[tuple[str, str, str], list[tuple[Result, Result]]] = {}
    for source, target in language_pairs(results, options.source_language, options.baseline):
        if source.metric(metric) is not None and target.metric(metric) is not None:
            groups.setdefault((source.family, source.split, target.pair), []).append((source, target))
    cols = ["Dataset", "Target", "System", f"{metric} source", f"{metric} target", "Drop", "Drop 95% low",
            "Drop 95% high", "Rank source", "Rank target", "Kendall τ", "τ p", "τ 95% low", "τ 95% high"]
    table = Table("ranking", "Does the translation rank systems like the source?", cols,
                  numeric=[False] * 3 + [True] * (len(cols) - 3))
    for (family, split, pair), pairs in groups.items():
        if len(pairs) < 2:
            continue
        head = [Cell(family if split == "test" else f"{family} [{split}]"), Cell(pair)]
        src = [s.metric(metric) for s, _ in pairs]
        tgt = [t.metric(metric) for _, t in pairs]
        for (source, target), s, t, rs, rt in zip(pairs, src, tgt, _ranks(src), _ranks(tgt)):
            refs = (sources.result(source), sources.result(target))
            paired = pair_scores(target.per_query_metric(metric), source.per_query_metric(metric))
            low, high = bootstrap_ci(paired.a, paired.b, resamples, options.seed) if len(paired.a) else (None, None)
            table.rows.append(head + [Cell(source.label), Cell(s, "metric", sources=refs[:1]),
                                      Cell(t, "metric", sources=refs[1:]), Cell(s - t, "diff", sources=refs),
                                      Cell(low, "diff"), Cell(high, "diff"), Cell(rs, "int"), Cell(rt, "int")]
                              + [Cell(None)] * 4)
        tau, p = kendall_tau(src, tgt)
        low, high = _tau_interval(pairs, metric, resamples, options.seed)
        refs = tuple(sources.result(r) for pair_ in pairs for r in pair_)
        table.rows.append(head + [Cell(f"{len(pairs)} systems")] + [Cell(None)] * 7
                          + [Cell(tau, "corr", sources=refs), Cell(p, "p"), Cell(low, "corr"), Cell(high, "corr")])
    table.caption = (f"Drop = source − target {metric}, with its paired BCa bootstrap 95% interval over queries "
                     f"({resamples:,} resamples, seed {options.seed}); ranks: 1 = best on that side. Kendall τ-b "
                     "between the systems' order on the source and on the translation (scipy), its p-value, and its "
                     "paired 95% percentile bootstrap interval: both sides' means over the same drawn queries.")
    return table


def _tau_interval(pairs: list[tuple[Result, Result]], metric: str, resamples: int,
                  seed: int) -> tuple[float | None, float | None]:
    """The paired interval of tau over the queries every system scores on both sides."""
    per_source = [s.per_query_metric(metric) for s, _ in pairs]
    per_target = [t.per_query_metric(metric) for _, t in pairs]
    shared = set.intersection(*(set(a) & set(b) for a, b in zip(per_source, per_target)))
    if not shared:
        return None, None
    source = [{q: scores[q] for q in shared} for scores in per_source]
    target = [{q: scores[q] for q in shared} for scores in per_target]
    means = [float(np.mean(list(scores.values()))) for scores in source]
    found = intervals(means, target, source, resamples=resamples, seed=seed).paired_tau_interval
    return found if found is not None else (None, None)
