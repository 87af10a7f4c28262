"""Translation quality vs retrieval drop: is the drop the language or the translation, and which translated rows
cost retrieval?

Per query, the *drop* is source metric - target metric. For each source/target pair whose translated queries
have a quality report (``quality.json`` and its per-row sidecar), two analyses:

- **Similarity vs drop, per system** (the ``quality`` table): the query's translation similarity (cosine of the
  source and translated query embeddings) against the system's drop: Spearman's rho (``scipy.stats.spearmanr``)
  and Pearson's r (``scipy.stats.pearsonr``), and the metric on the worst- and best-translated quarters of the
  queries (ranked by similarity, ties by query ID). A negative correlation and a smaller drop on the
  best-translated quarter point at the translation; no relation points at the language (or the model).
- **Damage attributed to every quality signal** (``damage.json``; the ``damage`` table and ``damage_queries.csv``,
  :mod:`beirx.report.damage_table`): a query's *damage* is its drop averaged over every system evaluated on both
  sides (over the queries they all score); what it meets in the translation is, for every signal of the quality
  report (:class:`~beirx.artifacts.damage.RowSignal`: each per-row score, each flag-only method's flag count, the
  report's combined order; and the signals of further reports of the same translation, :func:`translation_signals`),
  its own row and the worst and the mean of its judged relevant documents' rows
  (:data:`~beirx.artifacts.damage.VIEWS`; the documents only when the corpus is the translation's). Each signal in
  each view that tells the queries apart (not the same on all of them) is related to the damage and to each
  system's drop: Spearman's rho of the signal, oriented so that higher is worse, against the drop, with a seeded
  percentile bootstrap interval over queries (:func:`beirx.rank_agreement.spearman_interval`; the same draws for
  every signal), and the precision and recall at k of its k = ceil(n / 10) worst queries against the *damaged*
  queries: the k with the largest drop, ties at the cut included, drop > 0 (:func:`damaged`,
  :func:`precision_recall_at_k`). The signal whose worst decile holds the most damaged queries is named for a
  damage-aimed review (:func:`choose`).

Reading is bounded: each quality report's sidecar is streamed once, keeping the rows of the analysed queries and of
their judged relevant documents only (:func:`_rows` is the one place that reads it).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from beirx.artifacts.damage import VIEWS, Choice, DamageAnalysis, Relation, RowSignal, SignalEvidence
from beirx.artifacts.manifest import DatasetSide
from beirx.artifacts.quality import QualityReport
from beirx.errors import require
from beirx.rank_agreement import RESAMPLES, spearman_interval
from beirx.report.groups import language_pairs
from beirx.report.load import Result
from beirx.report.sources import Sources
from beirx.report.table import Cell, Table
from beirx.report.translations import Translation

DECILE = 10
COVERAGE = 0.9  # a signal aims the review only when it has a value for this share of the analysed queries


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


# -- damage attributed to every quality signal ------------------------------------------------------------------
@dataclass
class Attribution:
    """One translation against its source on one split: every query's drop per system and what it meets in the
    translation (each signal in each view, higher = worse, NaN where the signal has no value)."""

    pairs: list[tuple[Result, Result]]  # (source, target) per system
    translation: Translation
    metric: str
    documents: bool
    qids: list[str]
    drops: dict[str, np.ndarray]  # system -> drop per query
    signals: list[RowSignal]
    values: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (signal, view) -> value per query

    @property
    def damage(self) -> np.ndarray:
        """The drop averaged over the systems."""
        return np.mean(list(self.drops.values()), axis=0)


def signals_of(report: QualityReport) -> list[RowSignal]:
    """Every signal a quality report holds per row: each score, the flag count of each method without a score,
    and the report's combined order."""
    found = [RowSignal(name=name, method=info.method, kind="score", score=name, higher_is_better=info.higher_is_better)
             for name, info in report.scores.items()]
    found += [RowSignal(name=name, method=name, kind="flags", flags=sorted(info.flags))
              for name, info in report.methods.items() if not info.scores and info.flags]
    return found + [RowSignal(name="combined", method="all", kind="combined")]


def translation_signals(translation: Translation) -> list[RowSignal]:
    """The signals of a translation's quality report, and of its further reports those of the methods that ran
    differently there (another encoder, model or options; not the combined order): a name both have is labelled
    with each method's model (``similarity [e5-small]``, ``similarity [use-multilingual-v3]``)."""
    primary = translation.quality
    found = signals_of(primary)
    for path, report in translation.further:
        differs = {name for name, info in report.methods.items()
                   if name not in primary.methods or info.description != primary.methods[name].description}
        for signal in signals_of(report):
            if signal.method not in differs:
                continue
            twin = next((s for s in found if s.name == signal.name and s.report is None), None)
            if twin is not None:
                twin.name = f"{twin.name} [{_model_label(primary, twin.method, translation.quality_path)}]"
                signal.name = f"{signal.name} [{_model_label(report, signal.method, path)}]"
            signal.report = path
            found.append(signal)
    return found


def _model_label(report: QualityReport, method: str, path: str | None) -> str:
    """A method's model, by its folder or Hub name (else the report's folder)."""
    model = report.methods[method].description.get("model") or report.methods[method].description.get("encoder")
    if isinstance(model, dict):
        model = model.get("model")
    return Path(str(model)).name if model else Path(path or "quality").parent.name


def attributions(results: list[Result], translations: dict[str, Translation], metric: str,
                 source_language: str | None = None, baseline: str | None = None) -> list[Attribution]:
    """One :class:`Attribution` per translated query set, target language pair and split with a quality report."""
    groups: dict[tuple, list[tuple[Result, Result]]] = {}
    for source, target in language_pairs(results, source_language, baseline):
        translation = translations.get(target.queries_folder or "")
        if translation is not None and translation.quality is not None:
            groups.setdefault((source.family, source.split, target.pair, translation.folder), []).append(
                (source, target))
    out = []
    for (_, split, _, folder), pairs in groups.items():
        translation = translations[folder]
        per_query = [(s.per_query_metric(metric), t.per_query_metric(metric)) for s, t in pairs]
        qids = sorted(set.intersection(*(set(src) & set(tgt) for src, tgt in per_query)))
        if not qids:
            continue
        target = pairs[0][1]
        documents = target.monolingual and target.dataset_source == folder
        item = Attribution(pairs, translation, metric, documents, qids,
                           {t.label: np.array([src[q] - tgt[q] for q in qids]) for (_, t), (src, tgt)
                            in zip(pairs, per_query)}, translation_signals(translation))
        if _read_values(item, split):
            out.append(item)
    return out


def _relevant(folder: str, split: str, qids: list[str]) -> dict[str, list[str]]:
    """``{query: its judged relevant documents}`` from the translated folder's qrels (none without them)."""
    from beirx.data.beir_io import read_qrels

    path = Path(folder) / "qrels" / f"{split}.tsv"
    if not path.is_file():
        return {}
    qrels = read_qrels(path)
    return {q: sorted(d for d, rel in qrels.get(q, {}).items() if rel > 0) for q in qids}


def _rows(report: QualityReport, fields: list[str]) -> Iterator[dict]:
    """The quality report's per-row records of ``fields``, streamed (the one place the report reads them)."""
    return report.rows(fields)


def _read_values(item: Attribution, split: str) -> bool:
    """Fill ``item.values`` from one pass over each quality report's sidecar, keeping only the analysed queries' rows
    and their judged relevant documents' rows; False when no analysed query has a row in the translation's report."""
    relevant = _relevant(item.translation.folder, split, item.qids) if item.documents else {}
    wanted_docs = {d for docs in relevant.values() for d in docs}
    position = {q: i for i, q in enumerate(item.qids)}
    own = {s.name: np.full(len(item.qids), np.nan) for s in item.signals}
    docs: dict[str, dict[str, float | None]] = {}
    reports = [(None, item.translation.quality)] + list(item.translation.further)
    found = False
    for path, report in reports:
        signals = [s for s in item.signals if s.report == path]
        fields = [f for f in ("queries", "corpus") if f in report.fields and (f == "queries" or wanted_docs)]
        for row in _rows(report, fields) if signals else ():
            if row["field"] == "queries" and row["id"] in position:
                found = found or path is None
                for signal in signals:
                    value = signal.badness(row)
                    own[signal.name][position[row["id"]]] = np.nan if value is None else value
            elif row["field"] == "corpus" and row["id"] in wanted_docs:
                docs.setdefault(row["id"], {}).update((s.name, s.badness(row)) for s in signals)
    if not found:
        return False
    for signal in item.signals:
        item.values[(signal.name, VIEWS[0])] = own[signal.name]
        if not relevant:
            continue
        worst, mean = np.full(len(item.qids), np.nan), np.full(len(item.qids), np.nan)
        for q, i in position.items():
            met = [docs[d].get(signal.name) for d in relevant.get(q, []) if d in docs]
            met = [v for v in met if v is not None]
            if met:
                worst[i], mean[i] = max(met), sum(met) / len(met)
        item.values[(signal.name, VIEWS[1])], item.values[(signal.name, VIEWS[2])] = worst, mean
    return True


def damaged(drop: np.ndarray) -> np.ndarray:
    """Which queries are damaged: the k = ceil(n / 10) with the largest drop, every query tied with the k-th
    included, and only those whose drop is positive."""
    if not len(drop):
        return np.zeros(0, dtype=bool)
    k = math.ceil(len(drop) / DECILE)
    cut = np.sort(drop)[::-1][k - 1]
    return (drop >= cut) & (drop > 0)


def precision_recall_at_k(badness: np.ndarray, truth: np.ndarray, k: int) -> tuple[float | None, float | None]:
    """Precision and recall of the ``k`` rows with the highest ``badness`` against ``truth``. Rows tied with the
    k-th share the places left at the cut in expectation (a random order among them), so no tie-break by ID
    decides a figure: hits = truths above the cut + places left x the share of truths among the tied."""
    if k < 1 or not len(badness):
        return None, None
    cut = np.sort(badness)[::-1][k - 1]
    above, tied = badness > cut, badness == cut
    hits = truth[above].sum() + (k - above.sum()) * truth[tied].mean()
    return float(hits / k), (float(hits / truth.sum()) if truth.sum() else None)


def relate(badness: np.ndarray, drop: np.ndarray, truth: np.ndarray, *, resamples: int, seed: int) -> Relation:
    """One signal against one drop, over the queries where the signal has a value (``truth``: the damaged
    queries, decided over all the analysed queries)."""
    valid = ~np.isnan(badness)
    x, y, hit = badness[valid], drop[valid], truth[valid]
    rho, p, interval = spearman_interval(x, y, resamples=resamples, seed=seed)
    k = math.ceil(len(x) / DECILE)
    precision, recall = precision_recall_at_k(x, hit, k)
    return Relation(queries=int(valid.sum()), spearman=rho, p_value=p, ci_low=interval[0] if interval else None,
                    ci_high=interval[1] if interval else None, k=k, damaged=int(hit.sum()), precision=precision,
                    recall=recall)


RULE = ("damage = the per-query {metric} drop (source − target) averaged over the systems; damaged = the "
        "ceil(n/10) queries with the largest damage, ties at the cut included, damage > 0")


def analyse(item: Attribution, *, resamples: int = RESAMPLES, seed: int = 0) -> DamageAnalysis:
    """Every signal in every view against the damage and each system's drop, and the chosen signal."""
    source, target = item.pairs[0]
    damage = item.damage
    truth = damaged(damage)
    per_system = {label: (drop, damaged(drop)) for label, drop in item.drops.items()}
    evidence = []
    for signal in item.signals:
        for view in VIEWS:
            values = item.values.get((signal.name, view))
            if values is None or np.all(np.isnan(values)) or np.nanmax(values) == np.nanmin(values):
                continue  # absent, or the same on every query: it tells no query from another
            evidence.append(SignalEvidence(
                signal=signal, view=view, damage=relate(values, damage, truth, resamples=resamples, seed=seed),
                systems={label: relate(values, drop, hit, resamples=resamples, seed=seed)
                         for label, (drop, hit) in per_system.items()}))
    quality = item.translation.quality
    analysis = DamageAnalysis(
        family=source.family, split=source.split, metric=item.metric, source_pair=source.pair,
        target_pair=target.pair,
        translated=DatasetSide(path=quality.translated.path, name=quality.translated.name,
                               lang=quality.translated.lang, checksum=quality.translated.checksum),
        quality_report=item.translation.quality_path, documents=bool(item.documents),
        systems=list(item.drops), queries=len(item.qids), k=math.ceil(len(item.qids) / DECILE),
        damaged=[q for q, hit in zip(item.qids, truth) if hit], rule=RULE.format(metric=item.metric),
        resamples=resamples, seed=seed, signals=evidence, chosen=None)
    analysis.chosen = choose(analysis)
    return analysis


def choose(analysis: DamageAnalysis) -> Choice | None:
    """The signal whose worst decile holds the most damaged queries (precision at k), among those with a value for
    at least :data:`COVERAGE` of the queries; ties by the lower bound of rho's interval, then by rho."""
    def key(e: SignalEvidence) -> tuple:
        r = e.damage
        return r.precision, _or_lowest(r.ci_low), _or_lowest(r.spearman)

    eligible = [e for e in analysis.signals if e.damage.precision is not None
                and e.damage.queries >= COVERAGE * analysis.queries and e.damage.damaged]
    if not eligible:
        return None
    ranked = sorted(eligible, key=key, reverse=True)
    best, r = ranked[0], ranked[0].damage
    base = r.damaged / r.queries
    reason = (f"the highest precision at the worst decile among the signals with a value for at least "
              f"{COVERAGE:.0%} of the {analysis.queries} queries: {r.precision:.2f} of its k={r.k} worst queries are "
              f"damaged (a random order: {base:.2f}), recall {r.recall:.2f}, Spearman {_signed(r.spearman)} "
              f"(95% CI {_signed(r.ci_low)} to {_signed(r.ci_high)})")
    if len(ranked) > 1:
        runner = ranked[1]
        reason += (f"; next: {runner.signal.name} ({runner.view}) {runner.damage.precision:.2f}; the best of "
                   f"{len(ranked)} chosen on the queries it is measured on, which flatters it")
    if r.ci_low is None or r.ci_low <= 0:
        reason += "; weak evidence: its Spearman interval does not exclude 0"
    return Choice(signal=best.signal.name, view=best.view, reason=reason)


def _or_lowest(value: float | None) -> float:
    return -math.inf if value is None else value


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"
