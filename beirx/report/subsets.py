"""The ranking check of subsets: does a small benchmark order systems as the full one does?

Every result evaluated on a beirx subset (or on a translation of one) leads to its ``subset.json``; the
ranking check recorded there by ``beirx subset --check`` / ``beirx subset check`` becomes one block of rows:
each system's score on the full set and on the subset, its rank on both, whether it pooled (pool bias),
and Kendall's tau (scipy's tau-b) with its interval, Spearman's rho, the subset's resolution, the discriminative
power it keeps (Sakai 2006), the expected bias of a system that did not pool and the threshold; a second table
holds the leave-one-family-out figures behind that expected bias (:mod:`beirx.subsets.reusability`).
"""

from __future__ import annotations

from pathlib import Path

from beirx.artifacts.subset import SubsetManifest
from beirx.report.load import Result
from beirx.report.sources import Sources
from beirx.report.table import Cell, Table


def subsets_for(results: list[Result]) -> list[tuple[Path, SubsetManifest]]:
    """``(folder, manifest)`` of every subset behind the results' datasets, each once, in order of appearance."""
    found: dict[str, tuple[Path, SubsetManifest]] = {}
    for row in results:
        for folder in (row.dataset_source, row.query_source):
            if folder and Path(folder).is_dir():
                behind = SubsetManifest.behind(folder)
                if behind is not None:
                    found.setdefault(str(behind[0].resolve()), behind)
    return list(found.values())


def ranking_check_table(subsets: list[tuple[Path, SubsetManifest]], sources: Sources) -> Table:
    columns = ["Subset", "System", "Pooled", "Full", "Subset score", "Rank full", "Rank subset", "Kendall's tau",
               "Tau 95% CI", "Spearman's rho", "Resolution", "Power retained", "Reversals", "Expected pool bias",
               "Threshold"]
    table = Table("ranking_check", "Subset ranking check", columns,
                  numeric=[False, False, False] + [True] * 5 + [False] + [True] * 6)
    for folder, manifest in subsets:
        check = manifest.ranking_check
        if check is None:
            continue
        ref = (sources.subset(folder, manifest),)
        name = f"{manifest.name} ({manifest.counts.queries} q, {manifest.counts.documents:,} docs)"
        interval = (f"[{check.tau_interval[0]:.3f}, {check.tau_interval[1]:.3f}]" if check.tau_interval else "")
        resolved = check.subset_resolution.smallest_separated if check.subset_resolution else None
        power = check.discriminative_power
        expected = check.pool_bias.expected if check.pool_bias else None
        for i, system in enumerate(check.systems):
            first = i == 0
            pooled = "no pool" if not manifest.pool else "yes" if system.pooled else \
                "family" if system.family_pooled else {False: "no ‡", None: ""}[system.pooled]
            table.rows.append([Cell(name if first else ""), Cell(system.label), Cell(pooled),
                               Cell(system.full, "metric", sources=ref), Cell(system.subset, "metric", sources=ref),
                               Cell(system.full_rank, "int"), Cell(system.subset_rank, "int"),
                               Cell(check.tau if first else None, "corr", mark="†" if first and check.warning else ""),
                               Cell(interval if first else ""), Cell(check.rho if first else None, "corr"),
                               Cell(resolved if first else None, "metric"),
                               Cell(power.retained if first and power else None, "share"),
                               Cell(power.reversals if first and power else None, "int"),
                               Cell(expected if first else None, "diff",
                                    mark="§" if first and expected is not None and resolved is not None
                                    and abs(expected) >= resolved else ""),
                               Cell(check.threshold if first else None, "metric")])
    metrics = sorted({m.ranking_check.metric for _, m in subsets if m.ranking_check})
    readings = [f"{m.name}: {m.ranking_check.reading}." for _, m in subsets if m.ranking_check and m.ranking_check.reading]
    table.caption = (f"From each subset's subset.json: {', '.join(metrics) or 'the metric'} of every checked system "
                     "on the full set and on the subset, ranks (1 = best), Kendall's tau-b between the two "
                     "orderings (scipy) with its 95% bootstrap interval (the subset's queries resampled), Spearman's "
                     "rho, and the resolution: the smallest difference the subset separates at 95% (paired "
                     "randomization test per pair). Power retained: of the pairs the full set separates at 95%, the "
                     "share the subset separates in the same order (Sakai 2006); reversals: those it separates in the "
                     "opposite order. Expected pool bias: what a system that did not pool gains relative to those "
                     "that did (leave-one-family-out, the largest family; next table); § = not below the resolution. "
                     "† = tau below the threshold (default 0.9, Voorhees 2000): the subset does not rank these systems "
                     "as the full set does. ‡ = neither it nor a system of its family pooled: its own non-relevant "
                     "documents may be missing from the subset, which flatters it (pool bias); family = a system of "
                     "its family pooled; no pool = the subset has none (beyond the judged documents a uniform "
                     "random sample, the same for every system). " + " ".join(readings)).strip()
    return table


def pool_bias_table(subsets: list[tuple[Path, SubsetManifest]], sources: Sources) -> Table:
    """One row per pooling family left out, then one per checked system that did not pool."""
    columns = ["Subset", "Left out / did not pool", "Systems", "Reference systems", "Bias", "Bias 95% CI",
               "Own change", "Reference change", "Documents", "Depth"]
    table = Table("pool_bias", "Pool bias of a system that did not pool (leave-one-family-out)", columns,
                  numeric=[False, False, True, True, True, False, True, True, True, True])
    for folder, manifest in subsets:
        bias = manifest.ranking_check.pool_bias if manifest.ranking_check else None
        if bias is None:
            continue
        ref = (sources.subset(folder, manifest),)
        name = f"{manifest.name} ({manifest.counts.queries} q, {manifest.counts.documents:,} docs)"
        rows = [[Cell(f"without {f.family}"), Cell(len(f.systems), "int"), Cell(len(f.reference), "int"),
                 Cell(f.bias, "diff", sources=ref, bold=f.family == bias.expected_family), Cell(_interval(f.interval)),
                 Cell(f.change, "diff"), Cell(f.reference_change, "diff"), Cell(f.documents, "int"),
                 Cell(f.depth_reached, "int")] for f in bias.families]
        rows += [[Cell(f"{s.system} (did not pool)"), Cell(1, "int"), Cell(None), Cell(s.bias, "diff", sources=ref),
                  Cell(_interval(s.interval)), Cell(s.change, "diff"), Cell(None), Cell(None), Cell(None)]
                 for s in bias.unseen]
        for i, row in enumerate(rows):
            table.rows.append([Cell(name if i == 0 else "")] + row)
    table.caption = ("From each subset's subset.json: for each pooling family, the subset cut again without it (same "
                     "queries, seed, depth and budget) and the family's systems' mean change of the metric from the "
                     "full set to that cut, minus the change of the systems whose families still pooled (bias; 95% "
                     "percentile bootstrap over the queries; Zobel 1998, Buckley et al. 2007). The largest (bold) is "
                     "what a new system should expect. Then the checked systems that did not pool, measured on the "
                     "subset itself against the systems that did.")
    return table


def _interval(bounds: list[float] | None) -> str:
    return "" if bounds is None else f"[{bounds[0]:+.4f}, {bounds[1]:+.4f}]"
