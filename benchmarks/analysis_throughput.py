"""Analysis throughput of the language packs (tokens/s), with the stem cache and without it.

Tokens are counted as StandardTokenizer emits them (before stop-word removal), the input of the
analysis chain.
Polish: the 7,909 PolEval 2022 questions (../shared/data/poleval2022/*/in.tsv), repeated until a
run lasts a few seconds of CPU time. English: the SciFact corpus (title + text). The baseline (``cache=False``:
tokenize, stop words and stemming on every token) is measured in the same run; both produce the
same terms, which is checked. Target: >= 1,000,000 Polish tokens/s with the cache.

Run:  python benchmarks/analysis_throughput.py [--data ../shared/data] [--seconds 3]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import DATA  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from beirx.language_packs import get_pack  # noqa: E402
from beirx.language_packs.tokenizer import tokenize  # noqa: E402


def polish_questions(data: Path) -> list[str]:
    texts = []
    for path in sorted(glob.glob(str(data / "poleval2022" / "*" / "in.tsv"))):
        with open(path, encoding="utf-8") as fh:
            texts += [line.rstrip("\n").split("\t", 1)[1] for line in fh if line.strip()]
    return texts


def scifact_corpus(data: Path) -> list[str]:
    with open(data / "beir" / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        return [f"{d.get('title', '')} {d['text']}" for d in map(json.loads, fh)]


def measure(analyze, texts: list[str], tokens_per_pass: int, seconds: float) -> tuple[float, float, int]:
    """Repeat the corpus until ``seconds`` of CPU time have passed.

    Returns (tokens per CPU second, tokens per wall-clock second, passes). CPU time is the figure
    that does not depend on what else the machine runs; wall time is shown for reference.
    """
    passes = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while True:
        for text in texts:
            analyze(text)
        passes += 1
        cpu = time.process_time() - cpu0
        if cpu >= seconds:
            wall = time.perf_counter() - wall0
            return tokens_per_pass * passes / cpu, tokens_per_pass * passes / wall, passes


def report(code: str, texts: list[str], seconds: float) -> float:
    pack = get_pack(code)
    cached, uncached = pack.analyzer(cache=True), pack.analyzer(cache=False)
    uncached(texts[0])  # load stemming tables and compile patterns outside the timings
    assert all(cached(t) == uncached(t) for t in texts), "cached and uncached analysis differ"
    tokens = sum(len(tokenize(t)) for t in texts)
    base, base_wall, base_passes = measure(uncached, texts, tokens, seconds)
    fast, fast_wall, fast_passes = measure(cached, texts, tokens, seconds)
    terms = sum(len(cached(t)) for t in texts)
    print(f"{pack.name} ({code}): {len(texts):,} texts, {tokens:,} tokens -> {terms:,} terms per pass")
    print(f"  without cache: {base:12,.0f} tokens/CPU-s  ({base_wall:12,.0f} tokens/wall-s, {base_passes} passes)")
    print(f"  with cache:    {fast:12,.0f} tokens/CPU-s  ({fast_wall:12,.0f} tokens/wall-s, {fast_passes} passes)"
          f"  speed-up x{fast / base:.1f}")
    return fast


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--seconds", type=float, default=3.0, help="minimum CPU time of each measurement")
    args = parser.parse_args()
    # Throughput depends on the machine's load: report it, and a pure-interpreter reference.
    start = time.perf_counter()
    for _ in range(10_000_000):
        pass
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"empty Python loop: {10_000_000 / (time.perf_counter() - start) / 1e6:.0f} M iterations/s")
    polish = report("pl", polish_questions(args.data), args.seconds)
    report("en", scifact_corpus(args.data), args.seconds)
    target = 1_000_000
    print(f"Polish with cache: {polish:,.0f} tokens/CPU-s -- target {target:,}: {'met' if polish >= target else 'NOT met'}")
    return 0 if polish >= target else 1


if __name__ == "__main__":
    raise SystemExit(main())
