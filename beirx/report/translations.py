"""The translation side of a result: the manifest (``translation.json``) and quality report of the
dataset its queries came from.

``beirx translate`` writes ``translation.json`` into the translated folder and the quality report into
``<folder>/quality/quality.json`` (:mod:`beirx.translate.quality_report`). The quality report's
``per_query_similarity`` (``{qid: cosine}``) is what relates translation quality to retrieval drop;
a report without it still gives the dataset-level mean similarity.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.report.load import MANIFEST, Result

log = logging.getLogger(__name__)

QUALITY = Path("quality") / "quality.json"


@dataclass(frozen=True)
class Translation:
    """What is known about one translated dataset folder."""

    folder: str
    manifest: dict[str, Any] = field(default_factory=dict)
    quality: dict[str, Any] = field(default_factory=dict)
    quality_path: str | None = None

    @property
    def per_query_similarity(self) -> dict[str, float]:
        return {str(k): float(v) for k, v in (self.quality.get("per_query_similarity") or {}).items()}

    @property
    def mean_similarity(self) -> dict[str, float]:
        fields = self.quality.get("fields") or {}
        return {name: f["similarity"]["mean"] for name, f in fields.items()
                if isinstance(f, dict) and (f.get("similarity") or {}).get("mean") is not None}

    def lookup(self, *dotted: str) -> Any:
        """The first of ``dotted`` paths present in the manifest (its shape differs between formats)."""
        for path in dotted:
            node: Any = self.manifest
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is not None:
                return node
        return None


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def read_translation(folder: str | Path, quality_path: str | Path | None = None) -> Translation | None:
    """The manifest and quality report of ``folder``; None when it is not a translated dataset."""
    folder = Path(folder)
    manifest = _json(folder / MANIFEST) if (folder / MANIFEST).is_file() else {}
    qpath = Path(quality_path) if quality_path else folder / QUALITY
    quality = _json(qpath) if qpath.is_file() else {}
    if not manifest and not quality:
        return None
    return Translation(str(folder), manifest, quality, str(qpath) if quality else None)


def translations_for(results: list[Result], extra_quality: list[str | Path] = ()) -> dict[str, Translation]:
    """``{queries folder: Translation}`` for every translated query set among ``results``.

    ``extra_quality`` adds quality reports kept elsewhere; each is joined to the folder named in its
    ``translated.path``.
    """
    found: dict[str, Translation] = {}
    for row in results:
        folder = row.queries_folder
        if folder and folder not in found and Path(folder).is_dir():
            translation = read_translation(folder)
            if translation is not None:
                found[folder] = translation
    for path in extra_quality:
        report = _json(Path(path))
        folder = (report.get("translated") or {}).get("path")
        if not folder:
            log.warning("ignoring %s: it names no translated dataset (translated.path)", path)
            continue
        base = found.get(folder) or read_translation(folder, path) or Translation(folder)
        found[folder] = Translation(folder, base.manifest, report, str(path))
    return found
