"""Dataset and results cards: the README.md a Hub repository shows, rendered from ``cards/*.md``.

A card is YAML metadata (what the Hub indexes and what ``datasets`` reads its ``configs`` from) followed
by a markdown body. The YAML is produced with ``yaml.safe_dump`` so it is always valid; the body comes
from a ``string.Template`` in the repository's ``cards/`` folder, where wording can be changed without
touching code. Provenance is read from the typed artifacts the translation stage leaves in a dataset folder
(``translation.json`` and ``quality/quality.json``), tolerantly: a missing or malformed file (logged with the
file and field) only leaves its fields out of the card, it never stops a publish.
"""

from __future__ import annotations

import logging
import string
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import FILENAME, TranslationManifest
from beirx.artifacts.quality import QualityReport
from beirx.artifacts.results import ResultsDocument
from beirx.artifacts.subset import SubsetManifest
from beirx.data.front_matter import with_front_matter

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


# -- provenance left by the translation stage ----------------------------------------------------
MANIFEST_NAMES = (FILENAME, "manifest.json")  # beirx translate writes translation.json


def manifest_path(root: Path) -> Path | None:
    return next((Path(root) / n for n in MANIFEST_NAMES if (Path(root) / n).is_file()), None)


def read_manifest(root: Path) -> TranslationManifest | None:
    """The translation manifest in ``root``, or None for an untranslated dataset or a malformed manifest
    (logged with the file and field: it leaves provenance out of the card, it does not stop a publish)."""
    path = manifest_path(root)
    return TranslationManifest.load_optional(path, "leaving it out of the card") if path else None


def translation_provenance(manifest: TranslationManifest | None) -> dict[str, Any]:
    """Translator, model, revision, languages and source for a card (all None without a manifest)."""
    if manifest is None:
        return {"translator": None, "model": None, "model_revision": None, "source_language": None,
                "target_language": None, "source_dataset": None, "source_checksum": None, "partial": False,
                "created": None}
    return {
        "translator": manifest.backend,
        "model": manifest.model,
        "model_revision": manifest.revision,
        "source_language": manifest.source_language,
        "target_language": manifest.target_language,
        "source_dataset": manifest.family,
        "source_checksum": manifest.source.checksum,
        "partial": manifest.partial,
        "created": manifest.created,
    }


def subset_note(root: Path) -> str | None:
    """One sentence on how a beirx subset (or a translation of one) was cut, for cards and MTEB task descriptions;
    None for any other dataset."""
    behind = SubsetManifest.behind(root)
    if behind is None:
        return None
    manifest = behind[1]
    counts, method = manifest.counts, manifest.method
    pool = ", ".join(p.label for p in manifest.pool)
    kept = (f"the top {method.depth_reached} of {pool} ({counts.pooled:,}) and a random fill ({counts.random:,})"
            if pool else f"a uniform random sample of the others ({counts.random:,}; no pool, so no system is favoured "
                         "by how the documents were chosen)")
    note = (f"A beirx subset of {manifest.family} ({manifest.split}): {counts.queries} of {counts.candidate_queries} "
            f"judged queries (seed {method.seed}{', stratified' if method.stratify else ''}) and {counts.documents:,} "
            f"of {counts.source_documents:,} documents: every judged document ({counts.judged:,}), {kept}.")
    check = manifest.ranking_check
    if check is not None and check.tau is not None:
        note += (f" Kendall's tau between the full set's and the subset's ordering of {len(check.systems)} systems "
                 f"by {check.metric}: {check.tau:.3f}.")
    if check is not None and check.subset_resolution and check.subset_resolution.smallest_separated is not None:
        note += f" It resolves {check.metric} differences of {check.subset_resolution.smallest_separated:.3f} at 95%."
    power = check.discriminative_power if check is not None else None
    if power is not None and power.retained is not None:
        note += (f" Of the {power.full_separated} system pairs the full set separates at 95%, it separates "
                 f"{power.retained:.0%} in the same order and {power.reversals} in the opposite order.")
    bias = check.pool_bias if check is not None else None
    if check is not None and check.systems:
        change = sum(s.subset - s.full for s in check.systems) / len(check.systems)
        note += (f" The checked systems score {change:+.3f} {check.metric} higher on it than on the full set on "
                 "average (a smaller corpus is easier).")
    if bias is not None and bias.expected is not None and bias.families and not bias.families[0].cut:
        note += (f" No system pooled, so a new system is cut like the checked ones; the cut raises the families' "
                 f"scores unevenly, by up to {bias.expected:+.3f} over the others ({bias.expected_family}).")
    elif bias is not None and bias.expected is not None:
        interval = (f" (95% interval {bias.expected_interval[0]:+.3f} to {bias.expected_interval[1]:+.3f})"
                    if bias.expected_interval else "")
        note += (f" A system that did not pool should expect to gain {bias.expected:+.3f} {check.metric}{interval} "
                 f"relative to those that did (leave-one-family-out, {len(bias.families)} pooling families): "
                 "compare new systems with that in mind.")
    return note


def read_quality(root: Path) -> dict[str, float] | None:
    """Headline numbers of the ``beirx quality`` report ``root/quality/quality.json``, per field.

    The share of flagged pairs and each method's own headline figures as the report recorded them
    (:meth:`~beirx.artifacts.quality.FieldQuality.figures`: mean similarity, share detected in the target language,
    round-trip chrF...), for each field the report covers; ``{}`` for a report without such figures, None when there
    is no (readable) report.
    """
    report = QualityReport.load_optional(QualityReport.path_in(root), "leaving it out of the card")
    if report is None:
        return None
    found: dict[str, float] = {}
    for name, entry in report.fields.items():
        flagged = {"flagged share": entry.flagged_items / entry.pairs} if entry.pairs else {}
        found.update({f"{name} {label}": float(value) for label, value in {**flagged, **entry.figures()}.items()})
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


def _figures_table(figures: dict[str, Any]) -> str:
    """A two-column ``measure | value`` table, numbers to four significant digits."""
    rows = [_table_row(k, f"{v:.4g}" if isinstance(v, float) else v) for k, v in figures.items()]
    return "\n".join([_table_row("measure", "value"), _table_row("---", "---:"), *rows])


def render_dataset_card(info: dict[str, Any]) -> str:
    """The README.md of an exported dataset. ``info`` is built by :func:`beirx.publish.hub.card_info`."""
    license_id, license_name = hub_license(info.get("license"))
    body = template("dataset_card.md").substitute(
        title=info["title"],
        summary=info["summary"],
        contents_table=_contents_table(info),
        repo_id=info["repo_id"],
        eval_split=info["eval_split"],
        lang=info["lang"],
        provenance_list=_provenance_list(info),
        quality_section=_quality_section(info),
        verification_section=_verification_section(info["verification"]),
        license_text=_license_text(info, license_id, license_name),
        citations=citations(),
    )
    return with_front_matter(_dataset_metadata(info, license_id, license_name), body)


def _dataset_metadata(info: dict[str, Any], license_id: str, license_name: str | None) -> dict[str, Any]:
    """The card's YAML: what the Hub indexes, ``datasets``' configs, and beirx's own block."""
    prov = info["provenance"]
    metadata: dict[str, Any] = {"language": [info["lang"]], "license": license_id}
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
            "sample_creation": info["verification"].sample_creation,
            "review": info["verification"].figures or None,
            "ignore_identical_ids": info.get("ignore_identical_ids"),
            "eval_split": info["eval_split"],
            "beirx_version": info["beirx_version"],
        }.items() if v is not None},
    })
    return metadata


def _contents_table(info: dict[str, Any]) -> str:
    """One row per data file: config, split, rows, paths."""
    return "\n".join(_table_row(c["config_name"], f["split"], f"{info['rows'][(c['config_name'], f['split'])]:,}",
                                ", ".join(f"`{p}`" for p in f["path"]))
                     for c in info["configs"] for f in c["data_files"])


def _provenance_list(info: dict[str, Any]) -> str:
    prov = info["provenance"]
    lines = [f"- Dataset: `{info['name']}` ({info['lang']}), content checksum `{info['checksum']}`"]
    if info.get("source_id") or prov.get("source_dataset"):
        lines.append(f"- Source dataset: {info.get('source_id') or prov.get('source_dataset')}"
                     + (f" (checksum `{prov['source_checksum']}`)" if prov.get("source_checksum") else ""))
    if prov.get("translator"):
        model = f", model `{prov['model']}`" if prov.get("model") else ""
        revision = f" at revision `{prov['model_revision']}`" if prov.get("model_revision") else ""
        langs = f" from `{prov['source_language']}`" if prov.get("source_language") else ""
        lines.append(f"- Machine translation{langs} by `{prov['translator']}`{model}{revision}")
    else:
        lines.append("- Not machine-translated: the text is the source dataset's")
    if prov.get("created"):
        lines.append(f"- Translated: {prov['created']}")
    if prov.get("partial"):
        lines.append("- **Partial translation** (a preview of the first records only): not a full benchmark")
    lines.append(f"- Exported by beirx {info['beirx_version']}")
    if info.get("ignore_identical_ids") is not None:
        lines.append(f"- Evaluation protocol: `ignore_identical_ids={info['ignore_identical_ids']}`, MTEB's setting "
                     "for this dataset (when true, a document whose ID equals the query ID is dropped from the "
                     "ranking before scoring)")
    return "\n".join(lines)


def _quality_section(info: dict[str, Any]) -> str:
    if info.get("quality"):
        return _figures_table(info["quality"]) + "\n\nFrom the `beirx quality` report, kept in `provenance/quality/`."
    if info.get("quality") is not None:
        return "The `beirx quality` report, kept in `provenance/quality/`, has no headline figures (its `quality.md` " \
               "has the details)."
    if info["provenance"].get("translator"):
        return "No quality report was found beside this translation (`beirx quality` writes one)."
    return "Not applicable: this dataset is not machine-translated."


def _verification_section(verified: Any) -> str:
    """MTEB's ``sample_creation`` and why, with the review's figures when there are some."""
    section = f"MTEB `sample_creation`: **{verified.sample_creation}** ({verified.reason})."
    if verified.figures:
        section += "\n\n" + _figures_table(verified.figures)
        if "reviewed items" in verified.figures:
            section += ("\n\nFrom `beirx review export` (native speakers' ratings of a stratified sample), kept in "
                        "`provenance/review/`.")
    if verified.damage:
        section += "\n\n" + verified.damage
    return section


def _license_text(info: dict[str, Any], license_id: str, license_name: str | None) -> str:
    text = f"Inherited from the source dataset: {license_name or f'`{license_id}`'}."
    if info["provenance"].get("translator"):
        text += " The translation does not change the terms of the original data."
    return text


RESULTS_METRICS = ("NDCG@10", "MAP@100", "Recall@100", "MRR@10")


def render_results_card(results: list[tuple[str, ResultsDocument]], *, title: str, beirx_version: str) -> str:
    """The README.md of a results repository: one markdown table per (dataset, language pair, split).

    ``results`` holds ``(relative_path, results document)`` pairs.
    """
    groups: dict[tuple[str, str, str], list[tuple[str, str, ResultsDocument]]] = {}
    languages: set[str] = set()
    for rel, doc in results:
        key = (doc.family, doc.language_pair, doc.split)
        languages.update((doc.corpus_language, doc.query_language))
        label = doc.label
        model = doc.system.model
        if model and model != label:
            label += f" ({model})"
        groups.setdefault(key, []).append((label, rel, doc))
    tables = []
    for (name, pair, split), rows in sorted(groups.items()):
        lines = [f"## {name} — {pair} ({split})", "",
                 _table_row("system", *RESULTS_METRICS, "file"),
                 _table_row("---", *("---:" for _ in RESULTS_METRICS), "---")]
        for label, rel, doc in sorted(rows, key=lambda r: -(r[2].metric("NDCG@10") or 0.0)):
            cells = [f"{doc.metric(m):.4f}" if doc.metric(m) is not None else "–" for m in RESULTS_METRICS]
            lines.append(_table_row(label, *cells, f"`{rel}`"))
        tables.append("\n".join(lines))
    datasets = sorted({name for name, _, _ in groups})
    metadata = {
        "tags": ["beirx", "beir", "retrieval", "results", "mteb"],
        "language": sorted(languages),
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
