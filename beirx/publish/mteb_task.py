"""A beirx dataset as an MTEB retrieval task: metadata, an ``AbsTaskRetrieval`` subclass, a PR-ready file.

The metadata of a translated dataset starts from the English MTEB task it was adapted from (description,
reference, domains, sub-types, annotators, date, prompt, citation — ``mteb.get_task(...).metadata``) and
changes what translation changes: the name (``SciFact`` -> ``SciFact-PL``), the language
(``pack.mteb_code``, e.g. ``pol-Latn``), ``sample_creation`` (decided from the review and quality evidence:
:mod:`beirx.publish.verification`), ``adapted_from``, the dataset path and revision, and the citation (BEIR
and BEIR-PL added). ``ignore_identical_ids`` is a
class attribute in mteb 2.x (``AbsTaskRetrieval.ignore_identical_ids``) and comes from beirx's
catalogue, which follows MTEB's per-task setting.

A task name MTEB already uses for another dataset (its own ``SciFact-PL`` is BEIR-PL's translation) is
never reused silently: the name gets a ``-beirx`` suffix, so results of the two can never be confused.

The class is used as an object, never by name: ``mteb.evaluate(model, cls())`` runs it (pointed at a local
export, offline) and saves its ``TaskResult``; mteb's registry (``mteb.get_task(name)``) knows only its own
tasks and has no public registration call, so beirx adds nothing to it. The few mteb conveniences that look a
task up by name (``TaskResult.task``, ``validate_and_filter_scores()`` without a task, the per-type benchmark
means) are not on beirx's paths: they get the task object instead (``load_results(tasks=...)``), see
:func:`beirx.publish.mteb_benchmark.results_table`. :func:`task_source` writes the same class as a standalone
Python file for a pull request to mteb (dataset path = the Hub repository), where mteb registers it itself.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.artifacts.subset import SUFFIX as SUBSET_SUFFIX
from beirx.atomic import atomic_writer
from beirx.data.dataset import BeirDataset
from beirx.errors import BeirxError, require
from beirx.network import hub_call
from beirx.publish import cards, verification
from beirx.publish.python_literals import citation_literal, literal, string_literal

log = logging.getLogger(__name__)

MAIN_SCORE = "ndcg_at_10"


@dataclass
class TaskSpec:
    """Every ``TaskMetadata`` field beirx sets, as plain values (so it can be built or written as source)."""

    name: str
    description: str
    dataset_path: str
    dataset_revision: str
    eval_splits: list[str]
    eval_langs: list[str]
    reference: str | None = None
    date: tuple[str, str] | None = None
    domains: list[str] | None = None
    task_subtypes: list[str] | None = None
    license: str | None = None
    annotations_creators: str | None = None
    sample_creation: str = "found"
    bibtex_citation: str = ""
    adapted_from: list[str] | None = None
    prompt: dict[str, str] | str | None = None
    ignore_identical_ids: bool = False

    def metadata_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "reference": self.reference,
            "dataset": {"path": self.dataset_path, "revision": self.dataset_revision},
            "type": "Retrieval",
            "category": "t2t",
            "modalities": ["text"],
            "eval_splits": list(self.eval_splits),
            "eval_langs": list(self.eval_langs),
            "main_score": MAIN_SCORE,
            "date": self.date,
            "domains": self.domains,
            "task_subtypes": self.task_subtypes,
            "license": self.license,
            "annotations_creators": self.annotations_creators,
            "dialect": [],
            "sample_creation": self.sample_creation,
            "bibtex_citation": self.bibtex_citation,
            "adapted_from": self.adapted_from,
        }
        if self.prompt:
            kwargs["prompt"] = self.prompt
        return kwargs

    @property
    def class_name(self) -> str:
        parts = re.split(r"[^0-9A-Za-z]+", self.name)
        name = "".join(p[:1].upper() + p[1:] for p in parts if p)
        return name if name[:1].isalpha() else f"Task{name}"


def require_mteb():
    require("mteb", "mteb", "MTEB tasks and results")
    import mteb

    return mteb


def _license(value: str | None) -> str:
    """A licence MTEB's ``Licenses`` type accepts: the value itself, a URL, or ``not specified``."""
    from mteb.types import Licenses

    allowed = set(typing.get_args(Licenses))
    value = (value or "").strip().lower()
    if value in allowed or value.startswith(("http://", "https://")):
        return value
    return "not specified"


def _builtin_task(name: str):
    """The class MTEB itself has under ``name``, else None: looked up with mteb's public ``mteb.get_task`` (a
    ``KeyError`` for an unknown name; the instance is cheap, no data is loaded). beirx registers nothing, so
    every name mteb knows is one of its own tasks."""
    mteb = require_mteb()
    try:
        return type(mteb.get_task(name))
    except KeyError:
        return None


def default_task_name(dataset: BeirDataset, translated: bool) -> tuple[str, Any]:
    """``(name, original_mteb_task_class_or_None)``: ``SciFact-PL`` for a Polish SciFact, ``-beirx`` if taken;
    ``SciFact-PLSubset`` for a Polish translation of a beirx subset of SciFact (``SciFactSubset`` in English)."""
    from beirx.data import catalogue

    info = catalogue.lookup(dataset.name)
    original = _builtin_task(info.mteb_task) if info and info.mteb_task else None
    base = info.mteb_task if original is not None else (info.title if info else dataset.name)
    base = re.sub(r"[^0-9A-Za-z._-]+", "-", base).strip("-")
    name = f"{base}-{dataset.lang.upper()}" if translated or dataset.lang != "en" else base
    if info is not None and dataset.name.endswith(SUBSET_SUFFIX):
        name += "Subset"  # a beirx subset, spelled as MTEB spells its variants (MSMARCO-PLHardNegatives)
    return name, original


def build_spec(dataset: BeirDataset, *, dataset_path: str, dataset_revision: str, name: str | None = None,
               reference: str | None = None, min_review_items: int = verification.MIN_ITEMS,
               min_review_alpha: float = verification.MIN_ALPHA) -> TaskSpec:
    """The task metadata for ``dataset`` stored at ``dataset_path``@``dataset_revision`` (see module doc)."""
    require_mteb()
    from beirx.data import catalogue
    from beirx.language_packs import get_pack

    pack = get_pack(dataset.lang)
    prov = cards.translation_provenance(cards.read_manifest(dataset.root))
    translated = bool(prov.get("translator"))
    default_name, original = default_task_name(dataset, translated)
    if name is not None:
        check_task_name(name)
    if name:
        if _builtin_task(name) is not None:
            raise BeirxError(f"mteb already has a task named {name}; choose another name")
        chosen = name
    else:
        chosen = default_name
        taken = _builtin_task(chosen)
        if taken is not None:
            chosen = f"{default_name}-beirx"
            log.warning("mteb already has a task named %s (dataset %s); naming this one %s (choose with --name)",
                        default_name, taken.metadata.dataset.get("path"), chosen)
    info = catalogue.lookup(dataset.name)
    splits = dataset.splits()
    eval_split = catalogue.test_split_for(dataset.name)
    eval_splits = [eval_split] if eval_split in splits else splits[:1]
    meta = original.metadata if original is not None else None
    title = info.title if info else dataset.name
    if translated:
        how = f"machine-translated from English into {pack.name} with beirx"
        engine = ", ".join(str(v) for v in (prov.get("translator"), prov.get("model"), prov.get("model_revision")) if v)
        description = f"{title} ({pack.name}): {how}" + (f" ({engine})" if engine else "") + \
            ", keeping IDs and relevance judgements."
        if meta is not None:
            description += f" Original task: {meta.description}"
    else:
        description = meta.description if meta is not None else f"{title} retrieval (BEIR layout), via beirx."
    note = cards.subset_note(dataset.root)
    if note:
        description += f" {note}"
    bibtex = "\n\n".join(b.strip() for b in (meta.bibtex_citation if meta is not None else "", cards.citations()) if b)
    bibtex = f"\n{bibtex}\n"  # mteb's own layout: the entries start and end on a line of their own
    license_id = (info.license if info else None) or (meta.license if meta is not None else None)
    return TaskSpec(
        name=chosen,
        description=description,
        reference=reference or (meta.reference if meta is not None else "https://github.com/beir-cellar/beir"),
        dataset_path=dataset_path,
        dataset_revision=dataset_revision,
        eval_splits=eval_splits,
        eval_langs=[pack.mteb_code],
        date=tuple(meta.date) if meta is not None and meta.date else None,
        domains=list(meta.domains) if meta is not None and meta.domains else None,
        task_subtypes=list(meta.task_subtypes) if meta is not None and meta.task_subtypes else None,
        license=_license(license_id),
        annotations_creators=meta.annotations_creators if meta is not None else "derived",
        sample_creation=verification.verification(dataset.root, dataset.checksum(), translated, min_review_items,
                                                  min_review_alpha).sample_creation,
        bibtex_citation=bibtex,
        adapted_from=[meta.name if meta is not None else title] if translated else None,
        prompt=dict(meta.prompt) if meta is not None and isinstance(meta.prompt, dict) else (
            meta.prompt if meta is not None else None),
        ignore_identical_ids=catalogue.ignore_identical_ids_for(dataset.name),
    )


_TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_task_name(name: str) -> str:
    """MTEB task names are plain (``SciFact-PL``): letters, digits, ``._-``; the name also becomes a file name."""
    if not _TASK_NAME.match(name or ""):
        raise BeirxError(f"invalid MTEB task name {name!r}: use letters, digits and . _ - (e.g. SciFact-PL)")
    return name


def build_task_class(spec: TaskSpec):
    """An ``AbsTaskRetrieval`` subclass carrying ``spec`` (validated by mteb's ``TaskMetadata``)."""
    require_mteb()
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.task_metadata import TaskMetadata

    try:
        metadata = TaskMetadata(**spec.metadata_kwargs())
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise BeirxError(f"mteb rejects the task metadata for {spec.name}: {exc}") from exc
    return type(spec.class_name, (AbsTaskRetrieval,), {
        "__module__": __name__,
        "__doc__": f"{spec.name}: built by beirx from {spec.dataset_path}@{spec.dataset_revision}.",
        "metadata": metadata,
        "ignore_identical_ids": spec.ignore_identical_ids,
    })


def task_source(spec: TaskSpec) -> str:
    """A standalone Python module defining the task, in the style of mteb's own task files.

    User-controlled strings (name, description, paths, citation...) enter only as literals, and the
    result is checked with :func:`check_task_source` before it is returned.
    """
    kwargs = spec.metadata_kwargs()
    lines = [f"        {key}={literal(value)}," for key, value in kwargs.items()
             if key != "bibtex_citation" and value is not None]
    lines.append(f"        bibtex_citation={citation_literal(spec.bibtex_citation)},")
    identical = "    ignore_identical_ids = True\n\n" if spec.ignore_identical_ids else ""
    doc = string_literal(f"{spec.name}: generated by beirx. Put it in mteb/tasks/retrieval/<lang>/ and import it in that "
               "folder's __init__.py.")
    source = (
        f"{doc}\n\n"
        "from mteb.abstasks.retrieval import AbsTaskRetrieval\n"
        "from mteb.abstasks.task_metadata import TaskMetadata\n\n\n"
        f"class {check_class_name(spec.class_name)}(AbsTaskRetrieval):\n"
        f"{identical}"
        "    metadata = TaskMetadata(\n" + "\n".join(lines) + "\n    )\n"
    )
    check_task_source(source, spec)
    return source


def check_class_name(name: str) -> str:
    if not name.isidentifier() or not name.isascii():
        raise BeirxError(f"cannot make a Python class name from the task name ({name!r})")
    return name


def check_task_source(source: str, spec: TaskSpec) -> None:
    """Parse ``source`` (never run it) and check it is exactly: a docstring, the two imports, one class whose
    body is ``ignore_identical_ids``/``metadata = TaskMetadata(<literals>)`` equal to ``spec``."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:  # pragma: no cover - repr() literals always parse
        raise BeirxError(f"generated task file for {spec.name!r} does not parse: {exc}") from exc
    body = tree.body
    ok = (len(body) == 4 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
          and all(isinstance(n, ast.ImportFrom) for n in body[1:3]) and isinstance(body[3], ast.ClassDef)
          and body[3].name == spec.class_name)
    kwargs: dict[str, Any] = {}
    if ok:
        for stmt in body[3].body:
            target = stmt.targets[0].id if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) else None
            if target == "ignore_identical_ids":
                ok = ok and isinstance(stmt.value, ast.Constant) and stmt.value.value is True
            elif target == "metadata" and isinstance(stmt.value, ast.Call) and not stmt.value.args and \
                    isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "TaskMetadata":
                try:
                    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in stmt.value.keywords}
                except ValueError:
                    ok = False
            else:
                ok = False
    expected = {k: v for k, v in spec.metadata_kwargs().items() if v is not None}
    expected["bibtex_citation"] = spec.bibtex_citation
    if not ok or kwargs != expected:
        raise BeirxError(f"generated task file for {spec.name!r} does not round-trip to its metadata")


def write_task_file(spec: TaskSpec, path: Path | str) -> Path:
    """Write :func:`task_source` to ``path`` atomically; mteb validates the same metadata, nothing is executed."""
    source = task_source(spec)
    build_task_class(spec)  # mteb's TaskMetadata accepts these values (the file holds the very same literals)
    with atomic_writer(path) as fh:
        fh.write(source)
    return Path(path)


def hub_revision(repo_id: str, endpoint: str | None = None) -> str:
    """The current commit of a Hub dataset repository (for a task file pinned to what was pushed)."""
    require("huggingface_hub", "hub", "looking up a Hub revision")
    from huggingface_hub import HfApi

    with hub_call(f"look up the revision of {repo_id}", "pass --revision SHA (the commit of the dataset repository)"):
        sha = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None).dataset_info(repo_id).sha
    if not sha:
        raise BeirxError(f"the Hub returned no revision for {repo_id}; pass --revision SHA")
    return sha


def local_task(dataset, export_dir: Path | None = None, name: str | None = None, **thresholds):
    """Export ``dataset`` in MTEB's layout (reused when unchanged) and build its task class, pointed at the export:
    ``(cls, spec)``; run it with ``mteb.evaluate(model, cls())`` (nothing is registered with mteb).
    ``thresholds``: ``min_review_items``/``min_review_alpha`` of :mod:`beirx.publish.verification`."""
    from beirx.data.cache import cache_dir
    from beirx.data.front_matter import read_front_matter
    from beirx.publish.hub import export_dataset
    from beirx.publish.mteb_results import local_revision

    checksum = dataset.checksum().split(":")[-1]
    folder = export_dir or cache_dir("hub") / "mteb" / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', dataset.name)}-" \
                                                       f"{dataset.lang}-{checksum[:12]}"
    exported = (read_front_matter(folder / "README.md").get("beirx") or {}).get("checksum")
    if exported != dataset.checksum():
        export_dataset(dataset, folder, **thresholds)
    spec = build_spec(dataset, dataset_path=str(folder), dataset_revision=local_revision(dataset.checksum()),
                      name=name, **thresholds)
    return build_task_class(spec), spec


def mteb_encoder(model_name: str):
    """``(model wrapped for MTEB, its prompts)``, with the prompts beirx's dense retriever uses for it.

    A bare ``SentenceTransformer`` would let sentence-transformers pick the ``document`` prompt, which it
    sets to ``""`` when a model's config defines only ``query``/``passage`` (E5 folders): MTEB would then
    encode documents without ``passage: `` (nDCG@10 0.866 instead of 0.876 on a 30-query SciFact slice).
    """
    from mteb.models import SentenceTransformerEncoderWrapper
    from sentence_transformers import SentenceTransformer

    from beirx.models.device import choose_device
    from beirx.models.checks import checked_model
    from beirx.models.prompts import model_prompts

    files = checked_model(model_name, "bi-encoder", None, "--model", "an MTEB run")
    prompts = model_prompts(files)
    mteb_prompts = {"query": prompts["query"]} if prompts.get("query") else {}
    if prompts.get("passage"):
        mteb_prompts["document"] = prompts["passage"]
    # A fresh instance, not the shared one of beirx.models.loaded: MTEB must see the model's own maximum
    # length (a dense retriever in this process may have changed the shared one), and loading by the name
    # the user gave keeps that name in MTEB's model metadata.
    model = SentenceTransformer(model_name, device=choose_device(None))
    if not model.model_card_data.model_name:  # else MTEB files a local folder's results as no_model_name/available
        model.model_card_data.model_name = Path(model_name).name if Path(model_name).is_dir() else model_name
    wrapper = SentenceTransformerEncoderWrapper(model, model_prompts=mteb_prompts or None)
    return wrapper, mteb_prompts
