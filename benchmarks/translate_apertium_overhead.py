"""Overhead of the translation pipeline over the raw Apertium command, on the same text, in one run.

Baseline: ``apertium -u eng-spa`` on one text file holding every title, document text and query of the
dataset (one record per paragraph, blank lines between), timed as a subprocess. Pipeline: beirx's
``translate_dataset`` (segmentation, placeholders, dedup, SQLite memory, batching, reassembly, writing
the dataset and manifest) with a fresh translation memory. Both sides are timed wall-clock; the
baseline is run before and after the pipeline and averaged, since the machine may be shared. Words
are whitespace-separated words of the source text. Target: pipeline overhead < 20 %.

Run:  python benchmarks/translate_apertium_overhead.py [--dataset ../shared/data/beir/scifact] [--docs N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def source_texts(dataset: Path, docs: int | None) -> tuple[list[str], Path]:
    """Every title, text and query (in file order), and a dataset folder holding exactly those records."""
    from beirx.data import beir_io

    corpus = list(beir_io.iter_corpus(beir_io.find_file(dataset, "corpus")))[:docs]
    queries = list(beir_io.iter_queries(beir_io.find_file(dataset, "queries")))
    if docs is None:
        return [t for d in corpus for t in (d.title, d.text)] + [q.text for q in queries], dataset
    root = Path(tempfile.mkdtemp(prefix="beirx-bench-src-"))
    beir_io.write_corpus(root / "corpus.jsonl", corpus)
    beir_io.write_queries(root / "queries.jsonl", queries)
    (root / "qrels").mkdir()
    for path in (dataset / "qrels").glob("*.tsv"):
        (root / "qrels" / path.name).write_bytes(path.read_bytes())
    return [t for d in corpus for t in (d.title, d.text)] + [q.text for q in queries], root


def raw_apertium(text_file: Path, mode: str) -> float:
    start = time.perf_counter()
    with open(text_file, "rb") as src, open(os.devnull, "wb") as sink:
        subprocess.run(["apertium", "-u", mode, str(text_file)], stdin=src, stdout=sink, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--docs", type=int, help="first N documents only (default: all)")
    parser.add_argument("--lang", default="es")
    args = parser.parse_args()

    from beirx.data.dataset import BeirDataset
    from beirx.translate.backends.apertium import ApertiumTranslator
    from beirx.translate.pipeline import translate_dataset
    from beirx.translate.translation_memory import TranslationMemory

    texts, root = source_texts(args.dataset, args.docs)
    translator = ApertiumTranslator("en", args.lang)
    words = sum(len(t.split()) for t in texts)
    work = Path(tempfile.mkdtemp(prefix="beirx-bench-"))
    text_file = work / "source.txt"
    text_file.write_text("\n\n".join(" ".join(t.split()) for t in texts if t.strip()) + "\n", encoding="utf-8")

    raw_before = raw_apertium(text_file, translator.mode)
    start = time.perf_counter()
    with TranslationMemory(work / "tm.sqlite") as tm:
        manifest = translate_dataset(BeirDataset(root, name=args.dataset.name), work / "out", translator, tm,
                                     progress=False)
    pipeline = time.perf_counter() - start
    raw_after = raw_apertium(text_file, translator.mode)
    raw = (raw_before + raw_after) / 2

    result = {
        "dataset": str(args.dataset), "documents": manifest["counts"].get("corpus"),
        "queries": manifest["counts"].get("queries"), "mode": translator.mode, "words": words,
        "raw_apertium_s": {"before": round(raw_before, 2), "after": round(raw_after, 2), "mean": round(raw, 2)},
        "raw_words_per_s": round(words / raw), "pipeline_s": round(pipeline, 2),
        "pipeline_words_per_s": round(words / pipeline), "overhead": f"{(pipeline / raw - 1) * 100:+.1f}%",
        "pipeline_timings": manifest["timings"], "counts": manifest["counts"], "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
