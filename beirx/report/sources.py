"""Provenance of every number: each results document (and translation) a cell is computed from gets a
number; cells carry the numbers, and the report lists what each number is (results file, dataset
checksums, model revisions, versions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from beirx.artifacts.subset import SubsetManifest
from beirx.report.load import Result
from beirx.report.translations import Translation


@dataclass
class Source:
    number: int
    what: str
    file: str | None
    details: dict[str, str]


@dataclass
class Sources:
    items: list[Source] = field(default_factory=list)
    _index: dict[int, int] = field(default_factory=dict)

    def _add(self, key: int, what: str, file: str | None, details: dict[str, str]) -> int:
        if key not in self._index:
            self.items.append(Source(len(self.items) + 1, what, file, details))
            self._index[key] = len(self.items)
        return self._index[key]

    def result(self, row: Result) -> int:
        details = {"dataset": f"{row.family} [{row.pair}/{row.split}]", "system": row.label,
                   "dataset checksum": row.dataset_checksum or "–"}
        if row.query_checksum:
            details["query dataset checksum"] = row.query_checksum
        models = row.model_revisions()
        if models:
            details["model revisions"] = ", ".join(models)
        if row.versions.get("beirx"):
            details["beirx"] = row.versions["beirx"]
        if row.created:
            details["created"] = row.created
        return self._add(id(row), "results", row.path, details)

    def translation(self, translation: Translation) -> int:
        details: dict[str, str] = {}
        manifest, quality = translation.manifest, translation.quality
        if manifest is not None:
            details.update({"translator": manifest.backend or "–", "model": manifest.model or "–",
                            "model revision": manifest.revision or "–", "source checksum": manifest.source.checksum})
        if quality is not None:
            details.update({"quality report": translation.quality_path or "–",
                            "quality encoder": f"{quality.encoder_model}@{quality.encoder_revision}",
                            "translated checksum": quality.translated.checksum})
        return self._add(id(translation), "translation", translation.folder, details)

    def subset(self, folder, manifest: SubsetManifest) -> int:
        method = manifest.method
        details = {"source": f"{manifest.family} [{manifest.split}] {manifest.source.checksum}",
                   "method": f"{manifest.counts.queries} queries (seed {method.seed}), pool depth "
                             f"{method.depth_reached} of {method.depth}, max_docs {method.max_docs}",
                   "pooling systems": ", ".join(p.label for p in manifest.pool) or "–"}
        return self._add(id(manifest), "subset", str(folder), details)
