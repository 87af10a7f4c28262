"""Write a translated dataset by streaming (step 4 of :mod:`beirx.translate.pipeline`): render each record
from the translation memory, copy what is not translated byte for byte, and build the manifest.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import DatasetSide, MemoryRef, TargetSide, TranslationManifest, TranslationOptions
from beirx.atomic import atomic_writer
from beirx.data import beir_io
from beirx.data.dataset import BeirDataset
from beirx.data.records import Doc, Query
from beirx.provenance import Timer, environment_versions
from beirx.translate.backends.base import Translator
from beirx.translate.output.outcome import FLAGS_FILE, flag_rows, summarise
from beirx.translate.planning.dataset_plan import FIELDS, RECORDS_PER_CHUNK, Counts, chunks, read_records, record_parts
from beirx.translate.planning.text_plan import Part, Planner, Unit, lost_placeholders, render, units
from beirx.translate.translation_memory import TranslationMemory


def write_dataset(dataset: BeirDataset, output: Path, fields: tuple[str, ...], limit: int | None, planner: Planner,
                  memory: TranslationMemory, system: str,
                  validated: bool = False) -> tuple[dict[str, str], dict | None]:
    """Write corpus, queries and qrels by streaming; return ``{relative path: how it was produced}`` and, for a
    ``validated`` (LLM) backend, the summary of ``translation_flags.jsonl`` (written beside them)."""
    output.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    summary = None
    with contextlib.ExitStack() as stack:
        flags = stack.enter_context(atomic_writer(output / FLAGS_FILE)) if validated else None
        rows: list[dict] = []
        for field_name, source in (("corpus", dataset.corpus_path), ("queries", dataset.queries_path)):
            target = output / source.name
            if field_name not in fields:
                _copy(source, target)
                files[source.name] = "copied"
                continue

            def flag(row: dict) -> None:
                flags.write(json.dumps(row, ensure_ascii=False) + "\n")
                rows.append({"field": row["field"], "outcome": row["outcome"], "reasons": row["reasons"]})

            rendered = _rendered(dataset, field_name, limit, planner, memory, system, flag if validated else None)
            (beir_io.write_corpus if field_name == "corpus" else beir_io.write_queries)(target, rendered)
            files[source.name] = "translated"
        if validated:
            files[FLAGS_FILE] = "flags"
            summary = summarise(rows)
    for split in dataset.splits():
        source = dataset.qrels_path(split)
        _copy(source, output / "qrels" / source.name)
        files[f"qrels/{source.name}"] = "copied"
    return files, summary


def _rendered(dataset: BeirDataset, field_name: str, limit: int | None, planner: Planner, memory: TranslationMemory,
              system: str, flag: Callable[[dict], None] | None = None) -> Iterator[Doc | Query]:
    """The translated records of one field, in source order, a chunk of records per memory lookup; ``flag``
    receives the flag row of each record whose units fell back or were flagged (LLM backends)."""
    for chunk in chunks(read_records(dataset, (field_name,), limit), RECORDS_PER_CHUNK):
        planned = [(item, *record_parts(item, planner)) for _, item in chunk]
        every = [u for _, title, text in planned for u in (*units(title), *units(text))]
        translations = memory.lookup(system, {u.masked for u in every})
        fallbacks: dict[Unit, list[Part]] = {u: planner.fallback(u) for u in every if lost_placeholders(u, translations)}
        if fallbacks:
            translations.update(memory.lookup(system, {x.masked for p in fallbacks.values() for x in units(p)}))
        notes = memory.notes(system, {u.masked for u in every}) if flag else {}
        for item, title, text in planned:
            row = notes and flag_rows(field_name, item.id, [(u.source, notes[u.masked]) for u in
                                                            (*units(title), *units(text)) if u.masked in notes])
            if row:
                flag(row)
            if isinstance(item, Doc):
                yield item.with_text(render(text, translations, fallbacks), render(title, translations, fallbacks))
            else:
                yield item.with_text(render(text, translations, fallbacks))


def _copy(source: Path, target: Path) -> None:
    """Byte-identical, atomic copy."""
    with open(source, "rb") as src, atomic_writer(target, binary=True) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def build_manifest(dataset: BeirDataset, output: Path, translator: Translator, description: dict[str, Any],
                   memory: TranslationMemory, system: str, counts: Counts, timer: Timer, started: float,
                   options: TranslationOptions, files: dict[str, str], fields: tuple[str, ...],
                   limit: int | None) -> TranslationManifest:
    """The ``translation.json`` record of a finished run."""
    return TranslationManifest(
        source=DatasetSide(path=str(dataset.root), name=dataset.name, lang=translator.src,
                           checksum=dataset.checksum()),
        target=TargetSide(path=str(output), lang=translator.tgt, files=files),
        translator=description,
        memory=MemoryRef(path=str(memory.path), system=system),
        options=options,
        partial=limit is not None,
        untranslated_fields=[f for f in FIELDS if f not in fields],
        counts=counts.as_dict(),
        timings={**timer.seconds, "total": round(time.time() - started, 3)},
        versions=environment_versions(),
    )
