"""Dataset and results cards: the README.md a Hub repository shows, rendered from ``cards/*.md``.

A card is YAML metadata (what the Hub indexes and what ``datasets`` reads its ``configs`` from) followed
by a markdown body. The YAML is produced with ``yaml.safe_dump`` so it is always valid; the body comes
from a ``string.Template`` in the repository's ``cards/`` folder, where wording can be changed without
touching code. Provenance is read from what the translation stage leaves in a dataset folder
(``translation.json`` and ``quality/quality.json``), tolerantly: a missing or differently shaped file only
leaves a field out of the card, it never stops a publish.
"""

from __future__ import annotations

import json
import logging
import string
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "card_templates"  # a link to the repository's cards/ folder

# Licence identifiers the Hub accepts in a card's ``license`` field (the ones BEIR datasets use).
_HUB_LICENSES = {"apache-2.0", "mit", "cc-by-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-4.0", "cc-by-nc-sa-3.0",
                 "cc-by-nc-sa-4.0", "cc-by-nc-3.0", "cc-by-nd-4.0", "cc0-1.0", "odc-by", "other", "unknown"}

# BEIR task (catalogue wording) -> the Hub's text-retrieval task id.
_TASK_IDS = {"Fact Checking": "fact-checking-retrieval", "Entity-Retrieval": "entity-linking-retrieval"}


def template(name: str) -> string.Template:
    """The body template ``cards/<name>``."""
    return string.Template((TEMPLATES / name).read_text(encoding="utf-8"))


def citations() -> str:
    """BibTeX of BEIR and BEIR-PL (``cards/citations.bib``), cited by every card and MTEB task."""
    return (TEMPLATES / "citations.bib").read_text(encoding="utf-8").strip()


def with_front_matter(metadata: dict[str, Any], body: str) -> str:
    """``---`` YAML ``---`` then the body: the README.md layout the Hub and ``datasets`` read."""
    header = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{header}---\n\n{body.lstrip()}"


def read_front_matter(readme: Path) -> dict[str, Any]:
    """The YAML metadata of a README.md, or ``{}`` when it has none or it does not parse."""
    if not readme.is_file():
        return {}
    text = readme.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        return {}
    try:
        data = yaml.safe_load(text[3:end])
    except yaml.YAMLError as exc:
        log.warning("%s: YAML metadata does not parse (%s); ignoring it", readme, exc)
        return {}
    return data if isinstance(data, dict) else {}


# -- provenance left by the translation stage ----------------------------------------------------
def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("%s: not readable as JSON (%s); leaving it out of the card", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


MANIFEST_NAMES = ("translation.json", "manifest.json")  # beirx translate writes translation.json


def read_manifest(root: Path) -> dict[str, Any]:
    """The translation manifest in ``root`` (``translation.json``), or ``{}`` for an untranslated dataset."""
    path = manifest_path(root)
    return _read_json(path) if path else {}


def manifest_path(root: Path) -> Path | None:
    return next((Path(root) / n for n in MANIFEST_NAMES if (Path(root) / n).is_file()), None)


def _lookup(data: dict[str, Any], *paths: str) -> Any:
    """The first value found at one of the dotted ``paths`` (``"translator.model"``), else None."""
    for path in paths:
        node: Any = data
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if node not in (None, "", [], {}):
            return node
    return None


def translation_provenance(manifest: dict[str, Any]) -> dict[str, Any]:
    """Translator, model, revision, languages and source from a manifest, tolerating other shapes."""
    translator = _lookup(manifest, "translator.backend", "translator.name", "backend", "translator")
    return {
        "translator": translator if isinstance(translator, str) else None,
        "model": _lookup(manifest, "translator.model", "translator.model_name", "model"),
        "model_revision": _lookup(manifest, "translator.revision", "translator.model_revision", "model_revision"),
        "source_language": _lookup(manifest, "source.lang", "translator.src", "source_lang"),
        "target_language": _lookup(manifest, "target.lang", "translator.tgt", "target_lang"),
        "source_dataset": _lookup(manifest, "source.name", "source_dataset"),
        "source_checksum": _lookup(manifest, "source.checksum", "source_checksum"),
        "license": _lookup(manifest, "license", "licence", "source.license"),
        "partial": bool(manifest.get("partial")),
        "created": _lookup(manifest, "created"),
    }


def read_quality(root: Path) -> dict[str, float]:
    """Headline numbers of the ``beirx quality`` report ``root/quality/quality.json``, per field.

    Mean source/translation similarity, share of flagged pairs, share detected in the target language
    and round-trip chrF, for each field the report covers; ``{}`` when there is no report.
    """
    path = Path(root) / "quality" / "quality.json"
    report = _read_json(path) if path.is_file() else {}
    found: dict[str, float] = {}
    fields = report.get("fields") if isinstance(report.get("fields"), dict) else {}
    for name, entry in fields.items():
        if not isinstance(entry, dict):
            continue
        values = {
            "similarity (mean)": _lookup(entry, "similarity.mean"),
            "flagged share": (entry["flagged_items"] / entry["pairs"]
                              if isinstance(entry.get("flagged_items"), int) and entry.get("pairs") else None),
            "in target language": _lookup(entry, "language.target_share"),
            "round-trip chrF": _lookup(entry, "roundtrip.chrF"),
        }
        for label, value in values.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found[f"{name} {label}"] = float(value)
    return found


def hub_license(license_id: str | None) -> tuple[str, str | None]:
    """``(license, license_name)`` for a card: a Hub licence id, or ``other`` plus the original name."""
    value = (license_id or "").strip().lower()
    if not value:
        return "other", "not specified by the source dataset"
    if value == "not specified":
        return "unknown", None
    if value in _HUB_LICENSES:
        return value, None
    return "other", license_id


def hub_task_id(task: str | None) -> str:
    return _TASK_IDS.get(task or "", "document-retrieval")


# -- rendering -----------------------------------------------------------------------------------
def _table_row(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def render_dataset_card(info: dict[str, Any]) -> str:
    """The README.md of an exported dataset. ``info`` is built by :func:`beirx.publish.hub.card_info`."""
    prov = info["provenance"]
    license_id, license_name = hub_license(info.get("license"))
    metadata: dict[str, Any] = {
        "language": [info["lang"]],
        "license": license_id,
    }
    if license_name:
        metadata["license_name"] = license_name
    metadata.update({
        "pretty_name": info["title"],
        "task_categories": ["text-retrieval"],
        "task_ids": [hub_task_id(info.get("task"))],
        "multilinguality": ["translation"] if prov.get("translator") else ["monolingual"],
        "source_datasets": [f"extended|{info['source_id']}"] if info.get("source_id") else ["original"],
        "tags": ["beir", "beirx", "mteb", "text-retrieval"]
        + (["machine-translated"] if prov.get("translator") else []),
        "configs": info["configs"],
        "beirx": {k: v for k, v in {
            "dataset": info["name"],
            "language": info["lang"],
            "checksum": info["checksum"],
            "source_dataset": info.get("source_id") or prov.get("source_dataset"),
            "translator": prov.get("translator"),
            "model": prov.get("model"),
            "model_revision": prov.get("model_revision"),
            "quality": info.get("quality") or None,
            "ignore_identical_ids": info.get("ignore_identical_ids"),
            "eval_split": info["eval_split"],
            "beirx_version": info["beirx_version"],
        }.items() if v is not None},
    })
    contents = [_table_row(c["config_name"], f["split"], f"{info['rows'][(c['config_name'], f['split'])]:,}",
                           ", ".join(f"`{p}`" for p in f["path"]))
                for c in info["configs"] for f in c["data_files"]]
    provenance = [f"- Dataset: `{info['name']}` ({info['lang']}), content checksum `{info['checksum']}`"]
    if info.get("source_id") or prov.get("source_dataset"):
        provenance.append(f"- Source dataset: {info.get('source_id') or prov.get('source_dataset')}"
                          + (f" (checksum `{prov['source_checksum']}`)" if prov.get("source_checksum") else ""))
    if prov.get("translator"):
        model = f", model `{prov['model']}`" if prov.get("model") else ""
        revision = f" at revision `{prov['model_revision']}`" if prov.get("model_revision") else ""
        langs = (f" from `{prov['source_language']}`" if prov.get("source_language") else "")
        provenance.append(f"- Machine translation{langs} by `{prov['translator']}`{model}{revision}")
    else:
        provenance.append("- Not machine-translated: the text is the source dataset's")
    if prov.get("created"):
        provenance.append(f"- Translated: {prov['created']}")
    if prov.get("partial"):
        provenance.append("- **Partial translation** (a preview of the first records only): not a full benchmark")
    provenance.append(f"- Exported by beirx {info['beirx_version']}")
    if info.get("ignore_identical_ids") is not None:
        provenance.append(f"- Evaluation protocol: `ignore_identical_ids={info['ignore_identical_ids']}`, "
                          "MTEB's setting "
                          "for this dataset (when true, a document whose ID equals the query ID is dropped from the "
                          "ranking before scoring)")
    quality = info.get("quality") or {}
    if quality:
        quality_section = "\n".join([_table_row("measure", "value"), _table_row("---", "---:")]
                                    + [_table_row(k, f"{v:.4g}") for k, v in quality.items()])
        quality_section += "\n\nFrom the `beirx quality` report, kept in `provenance/quality/`."
    elif prov.get("translator"):
        quality_section = "No quality report was found beside this translation (`beirx quality` writes one)."
    else:
        quality_section = "Not applicable: this dataset is not machine-translated."
    if license_name:
        license_text = f"Inherited from the source dataset: {license_name}."
    else:
        license_text = f"Inherited from the source dataset: `{license_id}`."
    if prov.get("translator"):
        license_text += " The translation does not change the terms of the original data."
    body = template("dataset_card.md").substitute(
        title=info["title"],
        summary=info["summary"],
        contents_table="\n".join(contents),
        repo_id=info["repo_id"],
        eval_split=info["eval_split"],
        lang=info["lang"],
        provenance_list="\n".join(provenance),
        quality_section=quality_section,
        license_text=license_text,
        citations=citations(),
    )
    return with_front_matter(metadata, body)


RESULTS_METRICS = ("NDCG@10", "MAP@100", "Recall@100", "MRR@10")


def render_results_card(results: list[tuple[str, dict[str, Any]]], *, title: str, beirx_version: str) -> str:
    """The README.md of a results repository: one markdown table per (dataset, language, split).

    ``results`` holds ``(relative_path, beirx_results_document)`` pairs.
    """
    groups: dict[tuple[str, str, str], list[tuple[str, str, dict[str, float]]]] = {}
    for rel, doc in results:
        ds = doc.get("dataset", {})
        key = (str(ds.get("name")), str(ds.get("language")), str(ds.get("split")))
        system = doc.get("system", {})
        label = str(system.get("name") or system.get("retriever") or system.get("model") or rel)
        if system.get("model") and system.get("model") != label:
            label += f" ({system['model']})"
        groups.setdefault(key, []).append((label, rel, doc.get("metrics", {})))
    tables = []
    for (name, lang, split), rows in sorted(groups.items()):
        lines = [f"## {name} — {lang} ({split})", "",
                 _table_row("system", *RESULTS_METRICS, "file"),
                 _table_row("---", *("---:" for _ in RESULTS_METRICS), "---")]
        for label, rel, metrics in sorted(rows, key=lambda r: -float(r[2].get("NDCG@10", 0.0))):
            cells = [f"{metrics[m]:.4f}" if isinstance(metrics.get(m), (int, float)) else "–" for m in RESULTS_METRICS]
            lines.append(_table_row(label, *cells, f"`{rel}`"))
        tables.append("\n".join(lines))
    datasets = sorted({name for name, _, _ in groups})
    languages = sorted({lang for _, lang, _ in groups})
    metadata = {
        "tags": ["beirx", "beir", "retrieval", "results", "mteb"],
        "language": languages,
        "beirx": {"datasets": datasets, "files": len(results), "beirx_version": beirx_version},
    }
    body = template("results_card.md").substitute(
        title=title,
        beirx_version=beirx_version,
        num_files=len(results),
        num_datasets=len(datasets),
        tables="\n\n".join(tables) if tables else "No beirx results files were found.",
        files_list="\n".join(f"- `{rel}`" for rel, _ in sorted(results)) or "(none)",
        citations=citations(),
    )
    return with_front_matter(metadata, body)
