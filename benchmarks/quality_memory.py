"""Peak memory of ``beirx quality`` and of the review sampler against the translation's size.

A synthetic translation (short documents of 6-12 words from a 2,000-word vocabulary, 1,000 queries; the
"translation" upper-cases every third word, so no row is identical and some are flagged) is written once per
``--docs`` size, with a random-weight 2-layer BERT (hidden size 16, mean pooling) as the similarity encoder.
Each measurement is a fresh child process whose peak RSS (its own ``getrusage`` ru_maxrss) and CPU seconds are reported:

- ``quality``: ``beirx quality`` with its default methods (checks, translation flags, similarity through the tiny
  encoder; embeddings not cached, so every run encodes); with ``--methods synthetic`` instead
  :func:`beirx.translate.quality.run_quality` with one cheap method scoring every row (a seeded hash of its ID,
  a flag on 2% of the rows): the run's own memory (pairs, rows, report files) without the models' cost, for
  large sizes on a busy machine;
- ``review``: the review sampler (:func:`beirx.review.sample.draw`, the sample ``beirx review --sample 200``
  draws) over that translation and its quality report.

Target: the ratio of the largest to the smallest size's peak <= 1.2 for each. ``--repo`` chooses the beirx
checkout under test (default this one), so one script measures before and after a change.

Run:  nice python benchmarks/quality_memory.py [--docs 200000 1000000] [--work /tmp/beirx-quality-memory]
      [--repo ../main] [--steps quality review] [--methods default|synthetic]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERIES = 1000
REVIEW_SAMPLE = 200


def vocabulary(seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    words = {"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(2200)}
    return sorted(words)[:2000]


def generate(root: Path, docs: int, seed: int = 13) -> tuple[Path, Path]:
    """The source (``en``) and its synthetic translation (``es``), written once."""
    source, translated = root / "source", root / "translated"
    if (translated / "qrels" / "test.tsv").is_file():
        return source, translated
    rng = random.Random(seed)
    vocab = vocabulary()

    def sentence(low: int, high: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(rng.randint(low, high)))

    def translate(text: str) -> str:
        return " ".join(w.upper() if i % 3 == 0 else w for i, w in enumerate(text.split()))

    for folder in (source, translated):
        (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(source / "corpus.jsonl", "w", encoding="utf-8") as src, \
            open(translated / "corpus.jsonl", "w", encoding="utf-8") as out:
        for i in range(docs):
            title, text = sentence(2, 4), sentence(6, 12)
            src.write(json.dumps({"_id": f"d{i}", "title": title, "text": text}) + "\n")
            out.write(json.dumps({"_id": f"d{i}", "title": translate(title), "text": translate(text)}) + "\n")
    with open(source / "queries.jsonl", "w", encoding="utf-8") as src, \
            open(translated / "queries.jsonl", "w", encoding="utf-8") as out:
        for i in range(QUERIES):
            text = sentence(4, 8)
            src.write(json.dumps({"_id": f"q{i}", "text": text}) + "\n")
            out.write(json.dumps({"_id": f"q{i}", "text": translate(text)}) + "\n")
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(QUERIES))
    for folder in (source, translated):
        (folder / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return source, translated


def build_encoder(folder: Path) -> None:
    """A random-weight 2-layer BERT (hidden 16) with mean pooling, as a sentence-transformers folder."""
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models

    torch.manual_seed(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + vocabulary()
    tok = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(folder / "hf")
    tok.save_pretrained(folder / "hf")
    word = models.Transformer(str(folder / "hf"), max_seq_length=32)
    SentenceTransformer(modules=[word, models.Pooling(16, "mean")], device="cpu").save(str(folder / "st"))


def synthetic_method():
    """A cheap quality method: a pseudo-random score per row from its ID, a flag on 2% of the rows."""
    import zlib

    from beirx.translate.quality.base import MethodResult, QualityMethod, Score

    class Synthetic(QualityMethod):
        name = "synthetic"
        scores = (Score("synthetic", "a seeded hash of the row's ID", scale=(0.0, 1.0)),)
        flags = {"synthetic_low": "a synthetic score below 0.02"}

        def describe(self, context):
            return {"rule": "crc32(id) / 2**32"}

        def score(self, pairs, context):
            values = {i: zlib.crc32(i.encode()) / 2 ** 32 for i in pairs.ids}
            result = MethodResult(values={"synthetic": values}, scored=len(values))
            for item, value in values.items():
                if value < 0.02:
                    result.flag(item, "synthetic_low", synthetic=value)
            return result

    return Synthetic()


def child(step: str, source: Path, translated: Path, encoder: Path) -> None:
    if step == "encoder":
        build_encoder(encoder)
        print("{}")
    elif step == "quality-synthetic":
        from beirx.data.dataset import BeirDataset
        from beirx.translate.quality import run_quality

        report = run_quality(BeirDataset(source), BeirDataset(translated), src_lang="en", tgt_lang="es",
                             methods=[synthetic_method()], show_progress=False)
        print(json.dumps({"flagged": sum(f.flagged_items for f in report.fields.values())}))
    elif step == "quality":
        from beirx.cli import main

        code = main(["quality", str(translated), "--source", str(source), "--src", "en", "--lang", "es", "--encoder",
                     str(encoder / "st"), "--no-cache", "--batch-size", "256", "--no-progress", "--quiet"])
        print(json.dumps({"exit": code}))
    else:
        from beirx.artifacts.quality import QualityReport
        from beirx.data.dataset import BeirDataset
        from beirx.review.sample import draw

        path = QualityReport.path_in(translated)
        if not path.is_file():  # the sampler draws its worst stratum from the report the quality step writes
            raise SystemExit(f"{path} not found: measure --steps quality review (or quality first)")
        quality = QualityReport.load(path)
        items = draw(BeirDataset(source), BeirDataset(translated), REVIEW_SAMPLE, 0, quality)
        strata = {s: sum(1 for item in items if item.stratum == s) for s in ("worst", "queries", "documents", "random")}
        print(json.dumps({"items": len(items), **strata}))


def measure(repo: Path, step: str, source: Path, translated: Path, encoder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", step, str(source), str(translated), str(encoder)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"child {step} failed:\n{stderr}")
    outcome, usage = (json.loads(line) for line in stdout.strip().splitlines()[-2:])
    return {**outcome, **usage, "wall_seconds": time.perf_counter() - started}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5]))
        usage = resource.getrusage(resource.RUSAGE_SELF)  # the child's own peak, not its parent's
        print(json.dumps({"peak_rss_gb": usage.ru_maxrss / 2 ** 20, "cpu_seconds": usage.ru_utime + usage.ru_stime}))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--work", type=Path, default=Path("/tmp/beirx-quality-memory"))
    parser.add_argument("--repo", type=Path, default=ROOT, help="the beirx checkout to measure (default this one)")
    parser.add_argument("--steps", nargs="+", default=["quality", "review"], choices=["quality", "review"])
    parser.add_argument("--methods", choices=["default", "synthetic"], default="default",
                        help="beirx quality's default methods with the tiny encoder, or one cheap synthetic method")
    args = parser.parse_args()
    encoder = args.work / "encoder"
    if args.methods == "default" and not (encoder / "st").is_dir():
        measure(args.repo, "encoder", encoder, encoder, encoder)
    peaks: dict[str, list[tuple[int, float]]] = {step: [] for step in args.steps}
    for docs in sorted(args.docs):
        source, translated = generate(args.work / f"docs-{docs}", docs)
        for step in args.steps:
            name = "quality-synthetic" if step == "quality" and args.methods == "synthetic" else step
            row = measure(args.repo.resolve(), name, source, translated, encoder)
            peaks[step].append((docs, row["peak_rss_gb"]))
            extra = {k: v for k, v in row.items() if k not in ("peak_rss_gb", "cpu_seconds", "wall_seconds")}
            print(f"{name:<17} {docs + QUERIES:>10,} rows: peak RSS {row['peak_rss_gb']:.3f} GB, "
                  f"{row['cpu_seconds']:.1f} CPU-s, {row['wall_seconds']:.1f} s wall {json.dumps(extra)}", flush=True)
    for step, found in peaks.items():
        if len(found) > 1:
            print(f"{step}: peak ratio {found[-1][0]:,} / {found[0][0]:,} documents: {found[-1][1] / found[0][1]:.2f} "
                  "(target <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
