"""The ranking check of subsets: does a small benchmark order systems as the full one does?

Every result evaluated on a beirx subset (or on a translation of one) leads to its ``subset.json``; the
ranking check recorded there by ``beirx subset --check`` / ``beirx subset check`` becomes one block of rows:
each system's score on the full set and on the subset, its rank on both, whether it pooled (pool bias),
and Kendall's tau (scipy's tau-b) with its interval, Spearman's rho, the subset's resolution and the threshold.
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
               "Tau 95% CI", "Spearman's rho", "Resolution", "Threshold"]
    table = Table("ranking_check", "Subset ranking check", columns,
                  numeric=[False, False, False] + [True] * 5 + [False] + [True] * 3)
    for folder, manifest in subsets:
        check = manifest.ranking_check
        if check is None:
            continue
        ref = (sources.subset(folder, manifest),)
        name = f"{manifest.name} ({manifest.counts.queries} q, {manifest.counts.documents:,} docs)"
        interval = (f"[{check.tau_interval[0]:.3f}, {check.tau_interval[1]:.3f}]" if check.tau_interval else "")
        resolved = check.subset_resolution.smallest_separated if check.subset_resolution else None
        for i, system in enumerate(check.systems):
            first = i == 0
            table.rows.append([Cell(name if first else ""), Cell(system.label),
                               Cell({True: "yes", False: "no ‡", None: ""}[system.pooled]),
                               Cell(system.full, "metric", sources=ref), Cell(system.subset, "metric", sources=ref),
                               Cell(system.full_rank, "int"), Cell(system.subset_rank, "int"),
                               Cell(check.tau if first else None, "corr", mark="†" if first and check.warning else ""),
                               Cell(interval if first else ""), Cell(check.rho if first else None, "corr"),
                               Cell(resolved if first else None, "metric"),
                               Cell(check.threshold if first else None, "metric")])
    metrics = sorted({m.ranking_check.metric for _, m in subsets if m.ranking_check})
    readings = [f"{m.name}: {m.ranking_check.reading}." for _, m in subsets if m.ranking_check and m.ranking_check.reading]
    table.caption = (f"From each subset's subset.json: {', '.join(metrics) or 'the metric'} of every checked system "
                     "on the full set and on the subset, ranks (1 = best), Kendall's tau-b between the two "
                     "orderings (scipy) with its 95% bootstrap interval (the subset's queries resampled), Spearman's "
                     "rho, and the resolution: the smallest difference the subset separates at 95% (paired "
                     "randomization test per pair). † = tau below the threshold (default 0.9, Voorhees 2000): the "
                     "subset does not rank these systems as the full set does. ‡ = did not take part in pooling: its "
                     "own non-relevant documents may be missing from the subset, which flatters it (pool bias). "
                     + " ".join(readings)).strip()
    return table
