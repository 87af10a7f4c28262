"""Synthetic queries for a corpus with a seq2seq model (GenQ, Thakur et al. 2021; doc2query, Nogueira et al.
2019), written as a BEIR training split that ``beirx train`` reads like any other.

For each document, ``per_doc`` queries are sampled from the model given ``(title + " " + text).strip()`` (the
text dense retrieval encodes) with BEIR's GenQ settings by default: nucleus sampling ``top_p`` 0.95, ``top_k``
25, at most 64 query tokens. The output folder holds the source corpus (hard-linked when possible, else copied:
the same bytes, so document IDs are the corpus's), ``queries.jsonl`` with IDs ``genq-<doc id>-<n>`` (n from 1;
an empty generation is dropped and its number skipped), ``qrels/<split>.tsv`` pairing each query with its
document (score 1), and ``generation.json`` (:mod:`beirx.artifacts.generation`).

Resumable and reproducible: documents are taken in corpus order in batches of ``batch_size``; each batch's
sampling is seeded from ``seed`` and the batch's first document ID, and its queries are committed to the
SQLite cache (:mod:`beirx.train.genq_cache`) in one transaction. A rerun after a kill serves finished batches
from the cache and generates the rest exactly as an uninterrupted run would (for the same batch size); the
output files are written atomically once every document has its queries.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.atomic import atomic_writer
from beirx.checksums import corpus_checksum
from beirx.data.beir_io import QRELS_HEADER, query_to_json
from beirx.data.cache import cache_dir
from beirx.data.dataset import BeirDataset
from beirx.data.records import Query
from beirx.errors import BeirxError, require
from beirx.evaluate.retrievers.dense import document_text
from beirx.models.checks import checked_model
from beirx.models.device import choose_device
from beirx.progress import progress, skip
from beirx.provenance import environment_versions
from beirx.train.genq_cache import QueryCache
from beirx.train.options import flag
from beirx.artifacts.generation import GeneratedSplit, GenerationManifest, SourceCorpus
from beirx.train.session import dataset_in_its_language

log = logging.getLogger(__name__)


NUMBERS = (("per_doc", lambda v: v >= 1, "a whole number, at least 1"),
           ("batch_size", lambda v: v >= 1, "a whole number, at least 1"),
           ("max_length", lambda v: v >= 1, "a whole number, at least 1"),
           ("doc_max_length", lambda v: v >= 1, "a whole number, at least 1"),
           ("top_p", lambda v: 0 < v <= 1, "more than 0 and at most 1"),
           ("top_k", lambda v: v >= 0, "a whole number, 0 or more"),
           ("seed", lambda v: 0 <= v < 2 ** 32, "a whole number between 0 and 2**32 - 1"))


@dataclass
class GenerationOptions:
    dataset: str
    model: str
    output: Path
    per_doc: int = 3
    lang: str | None = None
    split: str = "train"
    batch_size: int = 16
    max_length: int = 64          # query tokens
    doc_max_length: int = 350     # document tokens the model reads
    top_p: float = 0.95
    top_k: int = 25
    seed: int = 42
    prefix: str = ""              # e.g. "generate query: " for models trained with one
    device: str | None = None
    cache: Path | None = None     # default $BEIRX_HOME/generated_queries/queries.sqlite

    def __post_init__(self) -> None:
        """Every number checked before anything is read or written: finite, whole where it counts, in range."""
        self.output = Path(self.output)
        for name, holds, requirement in NUMBERS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise BeirxError(f"{flag(name)} must be a finite number, got {value!r}")
            if not holds(value) or (name != "top_p" and value != int(value)):
                raise BeirxError(f"{flag(name)} must be {requirement}, got {value}")


def query_id(doc_id: str, n: int) -> str:
    """The ID of the ``n``-th (from 1) query generated for ``doc_id``."""
    return f"genq-{doc_id}-{n}"


def batch_seed(seed: int, first_doc_id: str) -> int:
    """The sampling seed of a batch: independent of the batches before it, so a resumed run matches."""
    return int.from_bytes(hashlib.sha256(f"{seed}\0{first_doc_id}".encode()).digest()[:4], "big")


class Seq2SeqGenerator:
    """A seq2seq model (T5, BART ...) that samples ``per_doc`` queries for each text."""

    def __init__(self, opts: GenerationOptions):
        transformers = require("transformers", "neural", "generating queries")
        self.torch = require("torch", "neural", "generating queries")
        self.opts = opts
        self.files = checked_model(opts.model, "seq2seq", None, "--model", "generate-queries")
        self.device = choose_device(opts.device)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(self.files.folder))
        self.model = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(self.files.folder))
        self.model.to(self.device).eval()

    def describe(self) -> dict[str, Any]:
        o = self.opts
        return {"generator": "seq2seq", "model": self.files.name, "revision": self.files.revision,
                "per_doc": o.per_doc, "sampling": {"top_p": o.top_p, "top_k": o.top_k}, "max_length": o.max_length,
                "doc_max_length": o.doc_max_length, "prefix": o.prefix, "seed": o.seed,
                "document_text": "(title + ' ' + text).strip()"}

    def generate(self, texts: list[str], seed: int) -> list[list[str]]:
        """``per_doc`` queries for each text (stripped; sampling seeded with ``seed``)."""
        torch, o = self.torch, self.opts
        torch.manual_seed(seed)
        inputs = self.tokenizer([o.prefix + t for t in texts], truncation=True, max_length=o.doc_max_length,
                                padding=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            out = self.model.generate(**inputs, do_sample=True, top_p=o.top_p, top_k=o.top_k,
                                      max_length=o.max_length, num_return_sequences=o.per_doc)
        decoded = [q.strip() for q in self.tokenizer.batch_decode(out, skip_special_tokens=True)]
        return [decoded[i * o.per_doc:(i + 1) * o.per_doc] for i in range(len(texts))]


def _place_corpus(source: Path, target: Path) -> str:
    """The corpus file in the output: a hard link (same bytes, no space), else a copy."""
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
        how = "linked"
    except OSError:
        shutil.copyfile(source, tmp)
        how = "copied"
    os.replace(tmp, target)
    return how


def _batches(dataset: BeirDataset, size: int):
    batch = []
    for doc in dataset.iter_corpus():
        batch.append((doc.id, document_text(doc)))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def generate_queries(opts: GenerationOptions, show_progress: bool = True) -> GenerationManifest:
    """Generate (or take from the cache) the queries of every document and write the split and manifest."""
    start = time.perf_counter()
    dataset, lang = dataset_in_its_language(opts.dataset, opts.lang)
    out = opts.output
    if out.resolve() == dataset.root.resolve():
        raise BeirxError(f"--output {out} is the source dataset's folder; pass a new folder")
    generator = Seq2SeqGenerator(opts)
    cache_path = opts.cache or cache_dir("generated_queries") / "queries.sqlite"
    counts = {"documents": 0, "skipped_documents": 0, "queries": 0, "empty_queries": 0, "from_cache": 0,
              "generated": 0}
    corpus_name = dataset.corpus_path.name
    qrels_name = f"qrels/{opts.split}.tsv"
    with QueryCache(cache_path) as cache, \
            atomic_writer(out / "queries.jsonl") as queries_fh, atomic_writer(out / qrels_name) as qrels_fh:
        key = cache.register(generator.describe())
        qrels_fh.write("\t".join(QRELS_HEADER) + "\n")
        bar = progress(desc=f"generate queries ({generator.files.name})", unit="doc", enabled=show_progress)
        for batch in _batches(dataset, opts.batch_size):
            texts = [(d, t) for d, t in batch if t]
            counts["skipped_documents"] += len(batch) - len(texts)
            found = cache.lookup(key, texts)
            missing = [(d, t) for d, t in texts if d not in found]
            if missing:
                made = generator.generate([t for _, t in missing], batch_seed(opts.seed, missing[0][0]))
                cache.add(key, [(d, t, q) for (d, t), q in zip(missing, made)])
                found.update({d: q for (d, _), q in zip(missing, made)})
            counts["from_cache"] += len(texts) - len(missing)
            counts["generated"] += len(missing)
            for doc_id, _ in texts:
                for n, text in enumerate(found[doc_id], 1):
                    if not text:
                        counts["empty_queries"] += 1
                        continue
                    qid = query_id(doc_id, n)
                    queries_fh.write(_json_line(query_to_json(Query(qid, text))))
                    qrels_fh.write(f"{qid}\t{doc_id}\t1\n")
                    counts["queries"] += 1
            counts["documents"] += len(batch)
            skip(bar, len(batch) - len(missing))  # skipped or cached: no generation time
            bar.update(len(missing))
        bar.close()
    if counts["queries"] == 0:
        raise BeirxError(f"no query was generated for {dataset.root}; check --model and the corpus")
    how = _place_corpus(dataset.corpus_path, out / corpus_name)
    manifest = GenerationManifest(
        source=SourceCorpus(path=str(dataset.root), name=dataset.name, lang=lang,
                            corpus_checksum=corpus_checksum(dataset.corpus_path)),
        output=GeneratedSplit(path=str(out), split=opts.split, query_ids="genq-<doc id>-<n>, n from 1",
                              files={corpus_name: how, "queries.jsonl": "generated", qrels_name: "generated"}),
        generator=generator.describe(), cache={"path": str(cache_path), "generator": key}, counts=counts,
        timings={"total": round(time.perf_counter() - start, 3)}, versions=environment_versions())
    manifest.save(GenerationManifest.path_in(out))
    log.info("%d queries for %d documents (%d from the cache) in %s", counts["queries"], counts["documents"],
             counts["from_cache"], out)
    return manifest


def _json_line(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"
