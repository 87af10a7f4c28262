"""Export a BEIR folder as a Hugging Face dataset repository, and push folders to the Hub.

The exported layout is the one MTEB's retrieval loader (``mteb.abstasks.retrieval_dataset_loaders``)
and ``datasets.load_dataset`` read, declared in the README's YAML ``configs:`` section:

* config ``corpus`` (split ``corpus``): ``_id``, ``title``, ``text`` — parquet shards;
* config ``queries`` (split ``queries``): ``_id``, ``text``;
* config ``default``: the qrels, one split per ``qrels/<split>.tsv``: ``query-id``, ``corpus-id``, ``score``.

MTEB's loader takes the requested split of each config, or the only split when there is one, so one
corpus serves every qrels split (as in BEIR). The configs list the exact files rather than globs, so a
stale shard left in a repository by an earlier push can never be read twice. The translation manifest
(``translation.json``) and quality report, when present, are copied to ``provenance/``, so the published
repository carries its own provenance.

Pushing uses ``huggingface_hub``: one ``create_repo`` then one ``create_commit`` adding every file
(regular or LFS upload as the server decides) and deleting data files of an earlier export that this
one no longer has. The token comes from ``HF_TOKEN`` or the ``huggingface-cli login`` store, read by
``huggingface_hub`` itself; beirx never reads, logs or writes it.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from beirx import __version__
from beirx.artifacts.quality import QualityReport
from beirx.artifacts.review import ReviewDocument
from beirx.atomic import atomic_dir
from beirx.data.dataset import BeirDataset
from beirx.data.front_matter import read_front_matter
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError, DataError, require
from beirx.network import hub_call, is_network_error
from beirx.publish import cards, verification

log = logging.getLogger(__name__)

CORPUS_SHARD_ROWS = 500_000  # ~0.3-1 GB of text per parquet file: well under the Hub's recommended file size
BATCH_ROWS = 10_000
EXPORT_MARKER = "beirx"  # a README tag that marks a folder as a previous beirx export (safe to replace)
DATA_DIRS = ("corpus", "queries", "qrels", "provenance")


def _pyarrow():
    require("pyarrow", "hub", "exporting datasets as parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa, pq


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_corpus(docs: Iterable[Doc], folder: Path, shard_rows: int) -> tuple[list[str], int]:
    """Parquet shards ``corpus/corpus-NNNNN.parquet`` of at most ``shard_rows`` documents, streamed."""
    pa, pq = _pyarrow()
    schema = pa.schema([("_id", pa.string()), ("title", pa.string()), ("text", pa.string())])
    paths: list[str] = []
    total = 0
    writer = None
    in_shard = 0
    try:
        for batch in _batches(docs, BATCH_ROWS):
            start = 0
            while start < len(batch):
                if writer is None or in_shard >= shard_rows:
                    if writer is not None:
                        writer.close()
                    rel = f"corpus/corpus-{len(paths):05d}.parquet"
                    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                    writer = pq.ParquetWriter(folder / rel, schema)
                    paths.append(rel)
                    in_shard = 0
                part = batch[start:start + shard_rows - in_shard]
                writer.write_table(pa.table({"_id": [d.id for d in part], "title": [d.title for d in part],
                                             "text": [d.text for d in part]}, schema=schema))
                in_shard += len(part)
                total += len(part)
                start += len(part)
    finally:
        if writer is not None:
            writer.close()
    return paths, total


def _write_queries(queries: Iterable[Query], folder: Path) -> tuple[list[str], int]:
    pa, pq = _pyarrow()
    rows = list(queries)
    rel = "queries/queries-00000.parquet"
    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"_id": [q.id for q in rows], "text": [q.text for q in rows]},
                            schema=pa.schema([("_id", pa.string()), ("text", pa.string())])), folder / rel)
    return [rel], len(rows)


def _write_qrels(qrels: dict[str, dict[str, int]], folder: Path, split: str) -> tuple[list[str], int]:
    pa, pq = _pyarrow()
    qids, dids, scores = [], [], []
    for qid, docs in qrels.items():
        for did, rel in docs.items():
            qids.append(qid)
            dids.append(did)
            scores.append(int(rel))
    path = f"qrels/{split}.parquet"
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("query-id", pa.string()), ("corpus-id", pa.string()), ("score", pa.int32())])
    pq.write_table(pa.table({"query-id": qids, "corpus-id": dids, "score": scores}, schema=schema), folder / path)
    return [path], len(qids)


def _catalogue_info(name: str):
    from beirx.data import catalogue

    return catalogue.lookup(name)


def card_info(dataset: BeirDataset, *, repo_id: str, configs: list[dict[str, Any]],
              rows: dict[tuple[str, str], int], eval_split: str, min_review_items: int = verification.MIN_ITEMS,
              min_review_alpha: float = verification.MIN_ALPHA) -> dict[str, Any]:
    """Everything the dataset card shows: names, licence, provenance, quality, verification, file table."""
    from beirx.language_packs import get_pack

    manifest = cards.read_manifest(dataset.root)
    prov = cards.translation_provenance(manifest)
    info = _catalogue_info(dataset.name)
    pack = get_pack(dataset.lang)
    base_title = info.title if info else dataset.name
    translated = bool(prov.get("translator"))
    title = f"{base_title} ({pack.name})" if dataset.lang != "en" or translated else base_title
    if translated:
        summary = (f"{base_title} from BEIR, machine-translated into {pack.name} with beirx, following the BEIR-PL "
                   "recipe: titles, documents and queries are translated; IDs and relevance judgements are kept.")
    else:
        summary = f"{base_title} in BEIR layout, exported by beirx for `datasets`, MTEB and beirx."
    if info:
        summary += f" Task: {info.task}; domain: {info.domain}."
    note = cards.subset_note(dataset.root)
    if note:
        summary += f" {note}"
    return {
        "name": dataset.name,
        "lang": pack.code,
        "title": title,
        "summary": summary,
        "repo_id": repo_id,
        "checksum": dataset.checksum(),
        "license": info.license if info else None,
        "task": info.task if info else None,
        "source_id": info.hf_id if info else None,
        "ignore_identical_ids": info.ignore_identical_ids if info else None,
        "eval_split": eval_split,
        "provenance": prov,
        "quality": cards.read_quality(dataset.root),
        "verification": verification.verification(dataset.root, dataset.checksum(), translated, min_review_items,
                                                  min_review_alpha),
        "configs": configs,
        "rows": rows,
        "beirx_version": __version__,
    }


def _is_previous_export(folder: Path) -> bool:
    meta = read_front_matter(folder / "README.md")
    return EXPORT_MARKER in (meta.get("tags") or []) and "configs" in meta


def export_dataset(dataset: BeirDataset, out_dir: Path | str, *, repo_id: str | None = None,
                   shard_rows: int = CORPUS_SHARD_ROWS, min_review_items: int = verification.MIN_ITEMS,
                   min_review_alpha: float = verification.MIN_ALPHA) -> Path:
    """Write ``dataset`` to ``out_dir`` in the Hub layout described in the module docstring.

    The folder is built beside ``out_dir`` and renamed into place only when complete. An existing
    ``out_dir`` is replaced only if it is empty or an earlier beirx export; anything else is refused.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()) and not _is_previous_export(out_dir):
        raise BeirxError(f"{out_dir} exists and is not a beirx export; choose an empty or new folder")
    from beirx.data.catalogue import test_split_for

    splits = dataset.splits()
    if not splits:
        raise BeirxError(f"{dataset.root}: no qrels/<split>.tsv files; nothing to evaluate against")
    eval_split = test_split_for(dataset.name)
    if eval_split not in splits:
        eval_split = "test" if "test" in splits else splits[0]
    repo_id = repo_id or f"{dataset.name.replace('/', '-')}-{dataset.lang}"
    quality_dir = verified_quality(dataset.root)
    with atomic_dir(out_dir) as tmp:
        corpus_files, n_docs = _write_corpus(dataset.iter_corpus(), tmp, shard_rows)
        query_files, n_queries = _write_queries(dataset.queries.values(), tmp)
        configs = [
            {"config_name": "corpus", "data_files": [{"split": "corpus", "path": corpus_files}]},
            {"config_name": "queries", "data_files": [{"split": "queries", "path": query_files}]},
            {"config_name": "default", "data_files": []},
        ]
        rows = {("corpus", "corpus"): n_docs, ("queries", "queries"): n_queries}
        for split in splits:
            files, n = _write_qrels(dataset.qrels(split), tmp, split)
            configs[2]["data_files"].append({"split": split, "path": files})
            rows[("default", split)] = n
        manifest = cards.manifest_path(dataset.root)
        if manifest is not None:
            (tmp / "provenance").mkdir(exist_ok=True)
            shutil.copy2(manifest, tmp / "provenance" / manifest.name)
        if quality_dir is not None:
            shutil.copytree(quality_dir, tmp / "provenance" / quality_dir.name)
        review = ReviewDocument.path_in(dataset.root)
        if review.is_file():  # the ratings' summary; the review database (with its secret) stays home
            (tmp / "provenance" / review.parent.name).mkdir(parents=True)
            shutil.copy2(review, tmp / "provenance" / review.parent.name / review.name)
        info = card_info(dataset, repo_id=repo_id, configs=configs, rows=rows, eval_split=eval_split,
                         min_review_items=min_review_items, min_review_alpha=min_review_alpha)
        (tmp / "README.md").write_text(cards.render_dataset_card(info), encoding="utf-8")
    log.info("exported %s (%s): %d documents, %d queries, qrels %s -> %s", dataset.name, dataset.lang, n_docs,
             n_queries, ", ".join(splits), out_dir)
    return out_dir


def verified_quality(root: Path) -> Path | None:
    """The quality folder of the dataset in ``root`` when there is one, after verifying its report and every row of
    its sidecar (:meth:`~beirx.artifacts.quality.QualityReport.load_verified`): the export copies the folder whole,
    so a damaged or incomplete one stops the export, naming the file and line, and is never published."""
    path = QualityReport.path_in(root)
    if not path.parent.is_dir():
        return None
    if not path.is_file():
        raise DataError(path, f"missing, though {path.parent} is there (beirx quality writes quality.json last, so an "
                              "interrupted run leaves this): run beirx quality again, or move the folder away to "
                              "publish without a quality report")
    QualityReport.load_verified(path)
    return path.parent


# -- pushing ---------------------------------------------------------------------------------------
def local_files(folder: Path) -> list[str]:
    """Repository-relative paths of the files to upload (hidden files and folders skipped)."""
    folder = Path(folder)
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def push_folder(folder: Path | str, repo_id: str, *, private: bool = False, endpoint: str | None = None,
                commit_message: str = "Upload with beirx", stale_dirs: tuple[str, ...] = DATA_DIRS,
                repo_type: str = "dataset") -> str:
    """Create ``repo_id`` if needed and commit every file of ``folder`` to it in one commit.

    Files under ``stale_dirs`` that the repository has but ``folder`` does not (shards of an earlier,
    larger export) are deleted in the same commit. Returns the commit URL.
    """
    require("huggingface_hub", "hub", "pushing to the Hugging Face Hub")
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    folder = Path(folder)
    files = local_files(folder)
    if not files:
        raise BeirxError(f"{folder} has no files to push")
    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None)
    with hub_call(f"push to {repo_id}", f"pushing needs the Hub: the export in {folder} is complete, push it later"):
        try:
            url = api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
            remote = set(api.list_repo_files(repo_id, repo_type=repo_type))
            stale = sorted(p for p in remote - set(files) if p.split("/", 1)[0] in stale_dirs)
            operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(folder / rel)) for rel in files]
            operations += [CommitOperationDelete(path_in_repo=rel) for rel in stale]
            info = api.create_commit(repo_id, operations=operations, commit_message=commit_message,
                                     repo_type=repo_type)
        except HfHubHTTPError as exc:
            if is_network_error(exc):
                raise
            raise BeirxError(f"pushing to {repo_id} failed: {exc}") from exc
    log.info("pushed %d files to %s (%d stale files removed): %s", len(files), url, len(stale), info.commit_url)
    return info.commit_url
