"""The translation side of a result: the manifest (``translation.json``) and quality report
(``quality.json``) of the dataset its queries came from.

``beirx translate`` writes ``translation.json`` into the translated folder and the quality report into
``<folder>/quality/quality.json``. The quality report's ``per_query_similarity`` (``{qid: cosine}``) is what
relates translation quality to retrieval drop; a report without it (older files) still gives the
dataset-level mean similarity. Quality reports kept elsewhere (``beirx report --quality``) join the folder named in
their ``translated.path``: the first replaces the folder's own, later ones for the same folder are *further* reports
of the same translation (e.g. a second similarity encoder), whose signals the damage analysis reads too. A
malformed manifest is logged and left out, not fatal: the retrieval tables do not depend on it. A quality report is
read with its sidecar verified (:meth:`~beirx.artifacts.quality.QualityReport.load_verified`): a damaged one stops
the report, naming the file and line, since its analysis would otherwise rest on fewer rows than the report
describes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from beirx.artifacts.manifest import TranslationManifest
from beirx.artifacts.quality import QualityReport
from beirx.report.load import Result


@dataclass(frozen=True)
class Translation:
    """What is known about one translated dataset folder."""

    folder: str
    manifest: TranslationManifest | None = None
    quality: QualityReport | None = None
    quality_path: str | None = None
    further: tuple[tuple[str, QualityReport], ...] = ()  # (path, report): more quality reports of this translation

    @property
    def per_query_similarity(self) -> dict[str, float]:
        return dict(self.quality.per_query_similarity) if self.quality else {}


def read_translation(folder: str | Path, quality_path: str | Path | None = None) -> Translation | None:
    """The manifest and quality report of ``folder``; None when it is not a translated dataset."""
    folder = Path(folder)
    manifest = TranslationManifest.load_optional(TranslationManifest.path_in(folder))
    qpath = Path(quality_path) if quality_path else QualityReport.path_in(folder)
    quality = _quality(qpath) if quality_path or qpath.is_file() else None
    if manifest is None and quality is None:
        return None
    return Translation(str(folder), manifest, quality, str(qpath) if quality else None)


def translations_for(results: list[Result], extra_quality: list[str | Path] = ()) -> dict[str, Translation]:
    """``{queries folder: Translation}`` for every translated query set among ``results``.

    ``extra_quality`` adds quality reports kept elsewhere; each is joined to the folder named in its
    ``translated.path``: the first for a folder replaces the folder's own report, the next ones are further reports.
    """
    found: dict[str, Translation] = {}
    for row in results:
        folder = row.queries_folder
        if folder and folder not in found and Path(folder).is_dir():
            translation = read_translation(folder)
            if translation is not None:
                found[folder] = translation
    given: set[str] = set()
    for path in extra_quality:
        report = _quality(Path(path))
        folder = report.translated.path
        base = found.get(folder) or (read_translation(folder) if Path(folder).is_dir() else None)
        if folder in given:
            found[folder] = replace(base, further=base.further + ((str(path), report),))
            continue
        given.add(folder)
        found[folder] = Translation(folder, base.manifest if base else None, report, str(path))
    return found


def _quality(path: Path) -> QualityReport:
    """The quality report in ``path``, its sidecar verified."""
    return QualityReport.load_verified(path)
