"""Translation quality vs retrieval drop: is the drop the language or the translation?

For each source/target pair whose translated queries have a quality report with per-query similarity
(cosine of source and translated query embeddings), relate similarity to the per-query drop
(source metric - target metric): Spearman's rho (``scipy.stats.spearmanr``) and Pearson's r
(``scipy.stats.pearsonr``), and the metric on the worst- and best-translated quarters of the queries
(ranked by similarity, ties by query ID). A negative correlation and a smaller drop on the
best-translated quarter point at the translation; no relation points at the language (or the model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from beirx.errors import require

from beirx.report.groups import language_pairs
from beirx.report.load import Result
from beirx.report.sources import Sources
from beirx.report.table import Cell, Table
from beirx.report.translations import Translation


@dataclass
class QualityDrop:
    source: Result
    target: Result
    translation: Translation
    metric: str
    qids: list[str]
    similarity: np.ndarray
    source_scores: np.ndarray
    target_scores: np.ndarray

    @property
    def drop(self) -> np.ndarray:
        return self.source_scores - self.target_scores

    def correlation(self, kind: str) -> tuple[float, float]:
        """(coefficient, two-sided p) of similarity against drop; NaN when either side is constant."""
        stats = require("scipy.stats", "report", "significance tests and correlations")

        if len(self.qids) < 3 or np.ptp(self.similarity) == 0 or np.ptp(self.drop) == 0:
            return math.nan, math.nan
        fn = stats.spearmanr if kind == "spearman" else stats.pearsonr
        result = fn(self.similarity, self.drop)
        return float(result.statistic), float(result.pvalue)

    def quartiles(self) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the worst- and best-translated quarters (n // 4 queries each)."""
        order = sorted(range(len(self.qids)), key=lambda i: (self.similarity[i], self.qids[i]))
        quarter = len(order) // 4
        return np.array(order[:quarter], dtype=int), np.array(order[len(order) - quarter:], dtype=int)


def analyses(results: list[Result], translations: dict[str, Translation], metric: str,
             source_language: str | None = None, baseline: str | None = None) -> list[QualityDrop]:
    out = []
    for source, target in language_pairs(results, source_language, baseline):
        translation = translations.get(target.queries_folder or "")
        sims = translation.per_query_similarity if translation else {}
        if not sims:
            continue
        src, tgt = source.per_query_metric(metric), target.per_query_metric(metric)
        qids = sorted(set(sims) & set(src) & set(tgt))
        if not qids:
            continue
        out.append(QualityDrop(source, target, translation, metric, qids,
                               np.array([sims[q] for q in qids]), np.array([src[q] for q in qids]),
                               np.array([tgt[q] for q in qids])))
    return out


def quality_table(items: list[QualityDrop], sources: Sources) -> Table:
    metric = items[0].metric if items else "metric"
    cols = ["Dataset", "System", "Target", "Queries", "Mean similarity", "Spearman ρ", "ρ p", "Pearson r", "r p",
            f"Worst ¼ {metric} source", "Worst ¼ target", "Worst ¼ retained",
            f"Best ¼ {metric} source", "Best ¼ target", "Best ¼ retained"]
    table = Table("quality", "Translation quality vs retrieval drop", cols, numeric=[False] * 3 + [True] * 12)
    for item in items:
        refs = (sources.result(item.source), sources.result(item.target), sources.translation(item.translation))
        rho, rho_p = item.correlation("spearman")
        r, r_p = item.correlation("pearson")
        cells = [Cell(item.source.family), Cell(item.source.label), Cell(item.target.pair),
                 Cell(len(item.qids), "int", sources=refs), Cell(float(item.similarity.mean()), "metric", sources=refs),
                 Cell(rho, "corr", sources=refs), Cell(rho_p, "p"), Cell(r, "corr", sources=refs), Cell(r_p, "p")]
        for part in item.quartiles():
            s = float(item.source_scores[part].mean()) if len(part) else None
            t = float(item.target_scores[part].mean()) if len(part) else None
            cells += [Cell(s, "metric", sources=refs), Cell(t, "metric", sources=refs),
                      Cell(t / s if s else None, "share", sources=refs)]
        table.rows.append(cells)
    table.caption = (f"Per-query translation similarity of the queries (quality report) against the per-query "
                     f"{metric} drop (source − target), over the test queries that have a similarity. Worst/best ¼: "
                     "the quarter of those queries with the lowest/highest similarity.")
    return table
