"""Peak memory of the translation pipeline against the corpus size, old code against new, in one run.

A synthetic corpus of ``--docs`` documents of about 100 words (7 sentences drawn from a 5,000-word
vocabulary, seeded) is generated once per size; each measurement is a fresh child process whose peak RSS
(``wait4`` ru_maxrss) is reported: ``beirx translate --dry-run`` and a real run with a trivial translator
defined here (upper-casing, batches of 512, so the pipeline and not MT speed is measured). The code under
test is chosen by ``PYTHONPATH``: this checkout, and ``--baseline DIR`` (a checkout of the code before
streaming) when given. Targets: new code 1M documents <= 1.0 GB peak and 1M / 200k peak ratio <= 1.5.

Run:  nice python benchmarks/translate_memory.py [--docs 200000 1000000] [--baseline ../baseline]
      [--modes dry real] [--work /tmp/beirx-translate-memory]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def generate(root: Path, docs: int, seed: int = 13) -> Path:
    """``docs`` documents of ~100 words, 50 queries and qrels, written once."""
    if (root / "qrels" / "test.tsv").is_file():
        return root
    rng = random.Random(seed)
    vocab = [("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))) for _ in range(5000)]
    root.mkdir(parents=True, exist_ok=True)

    def sentence(words: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(words)).capitalize() + "."

    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i in range(docs):
            text = " ".join(sentence(rng.randint(10, 19)) for _ in range(7))
            fh.write(json.dumps({"_id": f"d{i}", "title": sentence(4), "text": text}) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        for i in range(50):
            fh.write(json.dumps({"_id": f"q{i}", "text": sentence(6)}) + "\n")
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                              "".join(f"q{i}\td{i}\t1\n" for i in range(50)), encoding="utf-8")
    return root


def child(mode: str, data: Path, work: Path) -> None:
    """One measurement, in the child process (beirx from PYTHONPATH)."""
    from beirx.data.dataset import BeirDataset
    from beirx.translate import pipeline
    from beirx.translate.backends.base import Translator
    from beirx.translate.translation_memory import TranslationMemory

    class Upper(Translator):
        name = "upper"
        max_batch_size = 512
        keeps_placeholders = True

        def describe(self):
            return {"backend": "upper", "model": "str.upper", "revision": "1"}

        def translate_batch(self, segments):
            return [s.upper() for s in segments]

    dataset = BeirDataset(data)
    with TranslationMemory(work / "tm.sqlite") as tm:
        if mode == "dry":
            out = pipeline.dry_run(dataset, Upper("en", "xx"), tm)
        else:
            out = pipeline.translate_dataset(dataset, work / "out", Upper("en", "xx"), tm, progress=False).counts
    print(json.dumps(out))


def measure(code: Path, mode: str, data: Path, work: Path) -> dict:
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", mode, "--data", str(data), "--work", str(work)],
                            env=env, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    disk = sum(p.stat().st_size for p in work.rglob("*") if p.is_file())
    shutil.rmtree(work, ignore_errors=True)
    if status != 0:
        return {"error": f"exit status {status}"}
    return {"peak_rss_gb": round(usage.ru_maxrss / 1024 ** 2, 3), "wall_s": round(seconds, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "work_disk_gb": round(disk / 1024 ** 3, 3),
            "counts": json.loads(out.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--modes", nargs="+", default=["dry", "real"], choices=["dry", "real"])
    parser.add_argument("--baseline", type=Path, help="a checkout of the code before streaming, measured too")
    parser.add_argument("--baseline-modes", nargs="+", default=["dry", "real"], choices=["dry", "real"])
    parser.add_argument("--codes", nargs="+", default=["new", "old"], choices=["new", "old"],
                        help="which code to measure (old: --baseline); split a long run across several processes")
    parser.add_argument("--work", type=Path, default=Path("/tmp/beirx-translate-memory"))
    parser.add_argument("--child", choices=["dry", "real"], help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.data, args.work)
    codes = {"new": ROOT, **({"old": args.baseline.resolve()} if args.baseline else {})}
    codes = {name: code for name, code in codes.items() if name in args.codes}
    results: dict = {}
    for docs in args.docs:
        data = generate(args.work / f"corpus-{docs}", docs)
        for name, code in codes.items():
            for mode in args.modes if name == "new" else args.baseline_modes:
                key = f"{name} {mode} {docs}"
                results[key] = measure(code, mode, data, args.work / f"run-{name}-{mode}-{docs}")
                print(key, json.dumps(results[key]), flush=True)
    summary = {}
    for name in codes:
        for mode in args.modes if name == "new" else args.baseline_modes:
            peaks = {d: results.get(f"{name} {mode} {d}", {}).get("peak_rss_gb") for d in args.docs}
            if len(args.docs) == 2 and all(peaks.values()):
                small, large = args.docs
                summary[f"{name} {mode}"] = {"peak_gb": peaks, "ratio": round(peaks[large] / peaks[small], 2),
                                             "per_doc_kb": round((peaks[large] - peaks[small]) * 1024 ** 2 /
                                                                 (large - small), 3)}
    print(json.dumps({"results": results, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
