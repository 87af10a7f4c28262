"""Build a report from results: tables, significance, figures, and the Markdown, LaTeX, CSV and HTML files.

Output layout (``output_dir``)::

    report.md  report.tex  report.html            every table (and the figures) in one file per format
    tables/<name>.md|.tex|.csv                     each table on its own (languages, systems, efficiency, ...)
    figures/<name>.png|.svg                        the plots
    damage.json  damage_queries.csv                with a quality report beside a translation: which quality
                                                   signal predicts the drop, and every query's drop and signals

This is also the entry point for running the report at the end of a grid (``beirx eval --config ...
--report``): ``build_report(rows_or_paths, output_dir)``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from beirx.artifacts.damage import FILENAME as DAMAGE_FILE, DamageAnalysis, DamageReport
from beirx.atomic import atomic_writer
from beirx.errors import BeirxError
from beirx.report import plots
from beirx.report.comparisons import comparisons_table
from beirx.report.efficiency import efficiency_table, translation_table
from beirx.report.groups import baseline_label
from beirx.report.languages import languages_table
from beirx.report.load import load_results
from beirx.report.options import ReportOptions
from beirx.provenance import environment_versions
from beirx.rank_agreement import RESAMPLES
from beirx.report.damage_table import damage_table, write_query_attribution
from beirx.report.quality_drop import analyse, analyses, attributions, quality_table
from beirx.report.ranking import ranking_table
from beirx.report.render.delimited import table_csv
from beirx.report.render.html import document_html
from beirx.report.render.latex import document_latex, table_latex
from beirx.report.render.markdown import document_markdown, table_markdown
from beirx.report.sources import Sources
from beirx.report.subsets import pool_bias_table, ranking_check_table, subsets_for
from beirx.report.systems import systems_table
from beirx.report.table import Table
from beirx.report.translations import translations_for

log = logging.getLogger(__name__)


@dataclass
class Report:
    """What was built: the tables (for callers that want the numbers) and the files written."""

    tables: dict[str, Table]
    files: list[Path] = field(default_factory=list)
    figures: list[plots.Plot] = field(default_factory=list)
    damage: list[DamageAnalysis] = field(default_factory=list)  # what damage.json holds

    @property
    def html(self) -> Path:
        return next(p for p in self.files if p.name == "report.html")


def build_report(inputs: Iterable[Any], output_dir: Path | str, **options: Any) -> Report:
    """Load results (files, folders, dicts or ``ResultsDocument`` objects), build every table and plot, and
    write the report into ``output_dir``. Keyword options are :class:`ReportOptions` fields."""
    opts = ReportOptions(**options)
    results = load_results(list(inputs))
    if not results:
        raise BeirxError("no results to report on")
    missing = [r.path or r.label for r in results if r.metric(opts.metric) is None]
    if len(missing) == len(results):
        raise BeirxError(f"no results document has the metric {opts.metric!r} (e.g. NDCG@10, Recall@100)")
    output_dir = Path(output_dir)
    sources = Sources()
    translations = translations_for(results, opts.quality)
    baseline = baseline_label(results, opts.baseline)
    opts = replace(opts, baseline=baseline)
    tables: list[Table] = []
    families = []
    languages, lang_comparisons = languages_table(results, opts.language_metrics, sources, options=opts)
    if languages.rows:
        tables.append(languages)
        families.append(("Languages", lang_comparisons))
    systems, sys_comparisons = systems_table(results, sources, options=opts)
    tables.append(systems)
    families.append(("Systems", sys_comparisons))
    tables.append(efficiency_table(results, sources, baseline))
    translated = translation_table(list(translations.values()), sources)
    if translated.rows:
        tables.append(translated)
    quality_items = analyses(results, translations, opts.metric, opts.source_language, baseline)
    if quality_items:
        tables.append(quality_table(quality_items, sources))
    elif translations:
        log.info("no per-query translation similarity in the quality reports: no quality-vs-drop analysis")
    damage = [(item, analyse(item, resamples=opts.bootstrap or RESAMPLES, seed=opts.seed))
              for item in attributions(results, translations, opts.metric, opts.source_language, baseline)]
    if damage:
        tables.append(damage_table(damage, sources))
    ranking = ranking_table(results, sources, options=opts)
    if ranking.rows:
        tables.append(ranking)
    subsets = subsets_for(results)
    for checked in (ranking_check_table(subsets, sources), pool_bias_table(subsets, sources)):
        if checked.rows:
            tables.append(checked)
    if any(comps for _, comps in families):
        tables.append(comparisons_table(families, opts))
    analysed = [analysis for _, analysis in damage]
    figures = _plots(results, quality_items, analysed, opts, baseline, output_dir / "figures") if opts.plots else []
    report = Report({t.name: t for t in tables}, figures=figures, damage=analysed)
    notes = _notes(results, opts, baseline)
    _write(report, output_dir, opts.title, notes, sources)
    if damage:
        path = output_dir / DAMAGE_FILE
        DamageReport(analyses=analysed, versions=environment_versions()).save(path)
        write_query_attribution(damage, output_dir / "damage_queries.csv")
        report.files += [path, output_dir / "damage_queries.csv"]
    return report


def _plots(results, quality_items, damage, opts: ReportOptions, baseline: str, out: Path) -> list[plots.Plot]:
    made = [plots.language_bars(results, opts.metric, out, baseline),
            plots.per_query_scatter(results, opts.metric, out, opts.source_language, baseline),
            plots.heatmap(results, opts.metric, out, baseline),
            plots.effectiveness_vs_latency(results, opts.metric, out),
            plots.quality_vs_drop(quality_items, out),
            plots.damage_signals(damage, out)]
    return [p for p in made if p is not None]


def _notes(results, opts: ReportOptions, baseline: str) -> list[str]:
    families = sorted({r.family for r in results})
    return [f"{len(results)} results: {len(families)} dataset(s) ({', '.join(families)}), "
            f"{len({r.label for r in results})} system(s), language pairs "
            f"{', '.join(sorted({r.pair for r in results}))}.",
            f"Main metric {opts.metric}; baseline {baseline}; significance: {opts.test} test at alpha "
            f"{opts.alpha:g}, Holm-Bonferroni per table, {opts.permutations:,} permutations, seed {opts.seed}.",
            "Language pairs: \"xx\" = queries and corpus in language xx; \"q2c\" = queries in q on the corpus, "
            "qrels and documents in c (e.g. es2en = Spanish queries on the English corpus)."]


def _text(path: Path, text: str, files: list[Path]) -> None:
    with atomic_writer(path) as fh:
        fh.write(text)
    files.append(path)


def _write(report: Report, output_dir: Path, title: str, notes: list[str], sources: Sources) -> None:
    tables = list(report.tables.values())
    files = report.files
    for table in tables:
        _text(output_dir / "tables" / f"{table.name}.md", table_markdown(table), files)
        _text(output_dir / "tables" / f"{table.name}.tex", table_latex(table), files)
        _text(output_dir / "tables" / f"{table.name}.csv", table_csv(table), files)
    figures_md = [(p.title, p.png.relative_to(output_dir).as_posix()) for p in report.figures]
    _text(output_dir / "report.md", document_markdown(title, tables, figures_md, notes), files)
    _text(output_dir / "report.tex", document_latex(title, tables), files)
    _text(output_dir / "report.html",
          document_html(title, tables, [(p.title, p.png) for p in report.figures], notes, sources), files)
    log.info("report written to %s (%d tables, %d figures)", output_dir, len(tables), len(report.figures))
