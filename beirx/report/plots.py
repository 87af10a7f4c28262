"""The report's figures (matplotlib, PNG and SVG): source vs target per dataset (grouped bars), per-query
source vs target scatter, systems x datasets heat map, effectiveness vs latency (BEIR's Figure), and
translation quality vs drop, and which quality signal predicts the drop.

Figures are built with matplotlib's object API (``matplotlib.figure.Figure``, rendered by the Agg/SVG
canvases), so nothing touches pyplot's global state or needs a display.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from beirx.errors import require
from beirx.report.groups import columns, language_pairs, system_order
from beirx.report.load import Result
from beirx.artifacts.damage import VIEWS, DamageAnalysis
from beirx.report.quality_drop import QualityDrop

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plot:
    name: str
    title: str
    png: Path
    svg: Path


def _figure(width: float, height: float):
    matplotlib = require("matplotlib", "report", "report plots")
    matplotlib.rcParams["svg.hashsalt"] = "beirx"  # stable element IDs: identical input, identical SVG
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _panels(count: int, panel_width: float, panel_height: float = 3.2):
    """A figure with ``count`` panels, at most 4 per row: ``(fig, axes)``, the unused cells hidden."""
    ncols = min(4, count)
    nrows = (count + ncols - 1) // ncols
    fig = _figure(panel_width * ncols, panel_height * nrows)
    cells = list(fig.subplots(nrows, ncols, squeeze=False).flat)
    for ax in cells[count:]:
        ax.set_visible(False)
    return fig, cells[:count]


def _save(fig, out_dir: Path, name: str, title: str) -> Plot:
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    fig.savefig(png, dpi=110, metadata={"Software": None})
    fig.savefig(svg, metadata={"Date": None, "Creator": None})
    return Plot(name, title, png, svg)


def language_bars(results: list[Result], metric: str, out_dir: Path, baseline: str | None = None) -> Plot | None:
    """Grouped bars: one group per dataset and system, one bar per language pair."""
    groups = [(family, split, label) for family, split in dict.fromkeys((r.family, r.split) for r in results)
              for label in system_order([r for r in results if (r.family, r.split) == (family, split)], baseline)]
    pairs = list(dict.fromkeys(c.pair for c in columns(results)))
    if len(pairs) < 2:
        return None
    by = {(r.family, r.split, r.label, r.pair): r.metric(metric) for r in results}
    fig = _figure(max(6.0, 1.1 * len(groups) * len(pairs) / 2 + 2), 4.2)
    ax = fig.add_subplot()
    width = 0.8 / len(pairs)
    x = np.arange(len(groups))
    for i, pair in enumerate(pairs):
        values = [by.get((family, split, label, pair)) for family, split, label in groups]
        heights = [np.nan if v is None else v for v in values]
        bars = ax.bar(x + (i - (len(pairs) - 1) / 2) * width, heights, width, label=pair)
        ax.bar_label(bars, fmt="%.3f", fontsize=7, padding=1)
    ax.set_xticks(x, [f"{family}\n{label}" for family, _, label in groups], fontsize=8)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric}: source vs target language per dataset and system")
    ax.legend(title="languages", fontsize=8)
    return _save(fig, out_dir, "languages_bars", "Source vs target language")


def per_query_scatter(results: list[Result], metric: str, out_dir: Path, source_language: str | None = None,
                      baseline: str | None = None) -> Plot | None:
    """Per-query source vs target metric, one panel per dataset and system, one colour per target."""
    pairs = language_pairs(results, source_language, baseline)
    panels = list(dict.fromkeys((s.family, s.split, s.label) for s, _ in pairs))
    if not panels:
        return None
    fig, axes = _panels(len(panels), 3.2)
    for ax, (family, split, label) in zip(axes, panels):
        mine = [(s, t) for s, t in pairs if (s.family, s.split, s.label) == (family, split, label)]
        source = mine[0][0]
        for _, target in mine:
            src, tgt = source.per_query_metric(metric), target.per_query_metric(metric)
            qids = sorted(set(src) & set(tgt))
            ax.scatter([src[q] for q in qids], [tgt[q] for q in qids], s=9, alpha=0.5, label=target.pair)
        ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8)
        ax.set_title(f"{family}: {label}", fontsize=9)
        ax.set_xlabel(f"{metric} (source, {source.pair})", fontsize=8)
        ax.set_ylabel(f"{metric} (target)", fontsize=8)
        ax.legend(fontsize=7)
    return _save(fig, out_dir, "per_query_scatter", "Per-query source vs target")


def heatmap(results: list[Result], metric: str, out_dir: Path, baseline: str | None = None) -> Plot | None:
    cols = columns(results)
    labels = system_order(results, baseline)
    by = {(r.family, r.pair, r.split, r.label): r.metric(metric) for r in results}
    grid = np.array([[by.get((c.family, c.pair, c.split, label)) for c in cols] for label in labels], dtype=float)
    if grid.size == 0 or np.all(np.isnan(grid)):
        return None
    fig = _figure(1.6 + 1.3 * len(cols), 1.2 + 0.45 * len(labels))
    ax = fig.add_subplot()
    image = ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(cols)), [c.label for c in cols], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    mid = np.nanmean(grid)
    for i in range(len(labels)):
        for j in range(len(cols)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.3f}", ha="center", va="center", fontsize=8,
                        color="black" if grid[i, j] > mid else "white")
    fig.colorbar(image, ax=ax, label=metric)
    ax.set_title(f"{metric}: systems x datasets")
    return _save(fig, out_dir, "systems_heatmap", "Systems x datasets")


def effectiveness_vs_latency(results: list[Result], metric: str, out_dir: Path) -> Plot | None:
    """Metric against per-query latency: the stored p50 when recorded, else search time per query."""
    points = []
    measured = any("latency_ms_p50" in r.efficiency for r in results)
    for r in results:
        eff = r.efficiency
        if measured:
            latency = eff.get("latency_ms_p50")
        else:
            seconds, n = eff.get("search_seconds"), eff.get("num_queries") or r.num_queries
            latency = 1000 * seconds / n if seconds and n else None
        if latency and r.metric(metric) is not None:
            points.append((latency, r.metric(metric), r))
    if not points:
        return None
    fig = _figure(6.0, 4.2)
    ax = fig.add_subplot()
    for label in system_order([p[2] for p in points]):
        mine = [p for p in points if p[2].label == label]
        ax.scatter([p[0] for p in mine], [p[1] for p in mine], label=label, s=30)
        for x, y, r in mine:
            ax.annotate(r.pair, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")  # 0.3, 2, 50 rather than 3 x 10^-1
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(plain)
    ax.set_xlabel("latency per query, p50 (ms)" if measured else "search time per query (ms; batch search / queries)")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs latency")
    ax.legend(fontsize=8)
    return _save(fig, out_dir, "effectiveness_latency", "Effectiveness vs latency")


def quality_vs_drop(items: list[QualityDrop], out_dir: Path) -> Plot | None:
    if not items:
        return None
    fig, axes = _panels(len(items), 3.4)
    for ax, item in zip(axes, items):
        rho, _ = item.correlation("spearman")
        ax.scatter(item.similarity, item.drop, s=9, alpha=0.5)
        order = np.argsort(item.similarity, kind="stable")
        quarters = [q for q in np.array_split(order, 4) if len(q)]
        ax.plot([item.similarity[q].mean() for q in quarters], [item.drop[q].mean() for q in quarters],
                color="tab:red", marker="o", label="mean per similarity quartile")
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.legend(fontsize=7)
        ax.set_title(f"{item.source.label} {item.target.pair} (ρ = {rho:+.2f})", fontsize=9)
        ax.set_xlabel("query translation similarity", fontsize=8)
        ax.set_ylabel(f"{item.metric} drop (source − target)", fontsize=8)
    return _save(fig, out_dir, "quality_vs_drop", "Translation quality vs drop")


def damage_signals(analyses: list[DamageAnalysis], out_dir: Path) -> Plot | None:
    """Per translation, every signal's Spearman rho against the damage with its bootstrap interval, one colour per
    view, its precision at the worst decile written beside; the chosen signal starred."""
    shown = [a for a in analyses if any(e.damage.spearman is not None for e in a.signals)]
    if not shown:
        return None
    height = max(3.2, 0.22 * max(len(a.signals) for a in shown) + 1.2)
    fig, axes = _panels(len(shown), 5.0, height)
    colours = dict(zip(VIEWS, ("tab:blue", "tab:orange", "tab:green")))
    for ax, analysis in zip(axes, shown):
        rows = [e for e in analysis.signals if e.damage.spearman is not None]
        chosen = analysis.chosen
        y = np.arange(len(rows))[::-1]
        for view in VIEWS:
            mine = [(yy, e) for yy, e in zip(y, rows) if e.view == view]
            if not mine:
                continue
            rho = np.array([e.damage.spearman for _, e in mine])
            low = np.array([e.damage.ci_low if e.damage.ci_low is not None else e.damage.spearman for _, e in mine])
            high = np.array([e.damage.ci_high if e.damage.ci_high is not None else e.damage.spearman for _, e in mine])
            ax.errorbar(rho, [yy for yy, _ in mine], xerr=[rho - low, high - rho], fmt="o", markersize=4, capsize=2,
                        color=colours[view], label=view)
        for yy, e in zip(y, rows):
            if e.damage.precision is not None:
                ax.annotate(f"P@k {e.damage.precision:.2f}", (1.0, yy), xycoords=("axes fraction", "data"),
                            xytext=(3, 0), textcoords="offset points", va="center", fontsize=6)
        labels = [("* " if chosen and (e.signal.name, e.view) == (chosen.signal, chosen.view) else "") + e.signal.name
                  for e in rows]
        ax.set_yticks(y, labels, fontsize=7)
        ax.axvline(0, color="grey", linewidth=0.8)
        ax.set_xlabel("Spearman ρ, signal (higher = worse) vs damage", fontsize=8)
        ax.set_title(f"{analysis.family} {analysis.source_pair} → {analysis.target_pair}: "
                     f"{len(analysis.damaged)} damaged of {analysis.queries}", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    return _save(fig, out_dir, "damage_signals", "Which quality signal predicts the drop")
