"""``beirx review apply``: write the annotators' corrected translations into the dataset.

Only ``text`` (and a document's ``title``) changes: IDs, metadata, record order and the qrels files stay as
they are, so results before and after compare query by query. ``review/corrections.jsonl`` keeps, per
corrected record, the machine output it replaced, the correction and who made it; the translation manifest
records the application. The new data files, the log and the manifest are all written first, in a copy of the
dataset's folder beside it (every other file hard-linked, not copied: :func:`beirx.atomic.carry_over`), which
then replaces the folder in one atomic exchange (:func:`beirx.atomic.atomic_dir`, as ``beirx translate``
writes its output): a failure or a kill at any point leaves the dataset as it was or fully applied, never
corrected data without the log of the machine output it replaced (which a rerun would skip as applied). A
review database in use by a running app stays usable: it is carried over as a hard link to the same file. The
translation memory is not touched: it keeps the machine output, which is the provenance of the first version
(a later ``beirx translate`` would rebuild that version; apply again then).

A correction is applied only where the dataset still holds the machine output the annotator saw; a record
that changed since the sample was drawn is refused (``force`` overrides), and a record already carrying
the correction is skipped, so applying twice changes nothing. When annotators corrected one item
differently, ``annotator`` names whose corrections win.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from beirx.artifacts.base import utc_now
from beirx.artifacts.manifest import HumanCorrections, TranslationManifest
from beirx.atomic import atomic_dir, atomic_writer, carry_over
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.errors import BeirxError
from beirx.review.store import FOLDER, Item, ReviewStore

log = logging.getLogger(__name__)

LOG_FILE = "corrections.jsonl"


@dataclass(frozen=True)
class Change:
    item: Item
    text: str
    title: str | None
    annotators: tuple[str, ...]


def corrections(store: ReviewStore, annotator: str | None = None) -> list[Change]:
    """One change per corrected item; several annotators agreeing count once, disagreeing need ``annotator``."""
    items = {i.position: i for i in store.items()}
    found: dict[int, dict[tuple[str, str | None], list[str]]] = {}
    for rating in store.ratings():
        if rating.correction and (annotator is None or rating.annotator == annotator):
            key = (rating.correction["text"], rating.correction.get("title"))
            found.setdefault(rating.position, {}).setdefault(key, []).append(rating.annotator)
    conflicts = [items[p] for p, versions in found.items() if len(versions) > 1]
    if conflicts:
        first = conflicts[0]
        raise BeirxError(f"annotators corrected {len(conflicts)} item(s) differently (e.g. {first.field} {first.id}: "
                         f"{', '.join(sorted(a for names in found[first.position].values() for a in names))}); "
                         "choose whose corrections to apply with --annotator NAME")
    return [Change(items[p], text, title, tuple(sorted(names)))
            for p, versions in sorted(found.items()) for (text, title), names in versions.items()]


def apply_corrections(dataset: BeirDataset, annotator: str | None = None, force: bool = False,
                      dry_run: bool = False) -> dict[str, int]:
    """Apply the review's corrections to ``dataset``; return the records changed per field."""
    with ReviewStore.in_folder(dataset.root) as store:
        changes = corrections(store, annotator)
    by_field = {f: {c.item.id: c for c in changes if c.item.field == f} for f in ("queries", "corpus")}
    todo: dict[str, dict[str, Change]] = {"queries": {}, "corpus": {}}
    for field, wanted in by_field.items():
        if not wanted:
            continue
        lookup = dataset.queries if field == "queries" else {d.id: d for d in dataset.iter_corpus() if d.id in wanted}
        for item_id, change in wanted.items():
            record = lookup.get(item_id)
            if record is None:
                raise BeirxError(f"{dataset.root}: {field} has no record {item_id!r} any more; nothing was applied")
            title = getattr(record, "title", None)
            if record.text == change.text and (change.title is None or title == change.title):
                continue  # applied before
            current = record.joined() if isinstance(record, Doc) else record.text
            if current != change.item.translation and not force:
                raise BeirxError(f"{dataset.root}: {field} {item_id} changed since the review sample was drawn (it no "
                                 "longer holds the machine output the annotator corrected); nothing was applied "
                                 "(--force applies the correction anyway)")
            todo[field][item_id] = change
    counts = {field: len(changes_) for field, changes_ in todo.items()}
    if dry_run or not any(counts.values()):
        return counts
    with atomic_dir(dataset.root) as staging:
        _write(dataset, todo, staging)
        carry_over(dataset.root, staging)  # everything else (qrels, the review database, ...) as it is
        _update_manifest(dataset, staging, counts, sorted({a for c in changes for a in c.annotators}))
    return counts


def _write(dataset: BeirDataset, todo: dict[str, dict[str, Change]], staging: Path) -> None:
    """The corrected data files and the log (old entries, then one per change) in ``staging``."""
    stamp = utc_now()
    lines: list[str] = []

    def corrected(field: str, records: Iterable[Doc | Query]) -> Iterator[Doc | Query]:
        for record in records:
            change = todo[field].get(record.id)
            if change is not None:
                corpus = isinstance(record, Doc)
                machine = ({"title": record.title} if corpus else {}) | {"text": record.text}
                typed = {"text": change.text} | ({"title": change.title} if change.title is not None else {})
                lines.append(beir_io.jsonl_line({"field": field, "id": record.id, "machine": machine,
                                                 "corrected": typed, "annotators": list(change.annotators),
                                                 "applied": stamp}))
                record = record.with_text(change.text, change.title) if corpus else record.with_text(change.text)
            yield record

    if todo["queries"]:
        beir_io.write_queries(staging / dataset.queries_path.relative_to(dataset.root),
                              corrected("queries", dataset.queries.values()))
    if todo["corpus"]:
        beir_io.write_corpus(staging / dataset.corpus_path.relative_to(dataset.root),
                             corrected("corpus", dataset.iter_corpus()))
    log_path = dataset.root / FOLDER / LOG_FILE
    with atomic_writer(staging / FOLDER / LOG_FILE) as out:
        if log_path.is_file():
            out.write(log_path.read_text(encoding="utf-8"))
        out.writelines(lines)


def _update_manifest(dataset: BeirDataset, staging: Path, counts: dict[str, int], annotators: list[str]) -> None:
    """The manifest, recording this application and the checksum of the data it wrote, in ``staging``."""
    path = TranslationManifest.path_in(dataset.root)
    if not path.is_file():
        log.warning("%s has no translation manifest: the corrections are recorded only in %s/%s", dataset.root,
                    FOLDER, LOG_FILE)
        return
    manifest = TranslationManifest.load(path)
    before = manifest.corrections
    total = {f: counts.get(f, 0) + (before.records.get(f, 0) if before else 0) for f in ("queries", "corpus")}
    who = sorted(set(annotators) | set(before.annotators if before else []))
    replace(manifest, corrections=HumanCorrections(records=total, log=f"{FOLDER}/{LOG_FILE}", annotators=who,
                                                   applied=utc_now(), checksum=BeirDataset(staging).checksum())
            ).save(TranslationManifest.path_in(staging))
