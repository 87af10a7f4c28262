"""Analysis throughput of the language packs (tokens per CPU second): compiled vs pure Python.

Tokens are counted as StandardTokenizer emits them (before stop-word removal), the input of the
analysis chain. Every figure is the median of ``--repeats`` measurements, each lasting at least
``--seconds`` of CPU time; the pure-Python analyzer (``compiled=False``: the code that ran before the
compiled extension, and what runs without a C compiler) is the baseline, measured in the same run,
and every configuration is checked to give identical terms.

* Polish, mostly unseen words: the 7,909 PolEval 2022 questions with two random letters inserted into
  every word stem (endings kept), four variants cycled and the analyzer memo emptied before every pass
  (outside the timing), so every pass is a new corpus's first pass: a word is a stem-cache miss the first
  time it occurs in the pass. Target >= 1,000,000/s.
* Polish, real questions (repeated: the memo warm).
* English (SciFact corpus): uncached (the whole chain on every token). Target >= 3x the pure-Python rate.

Run:  python benchmarks/analysis_throughput.py [--data ../shared/data] [--seconds 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import statistics
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


def unseen_variant(texts: list[str], seed: int) -> list[str]:
    """Two random letters inserted inside the stem of every word of 5+ letters, the last 3 letters kept."""
    rnd = random.Random(seed)
    letters = "abcdefghijklmnoprstuwyząćęłńóśźż"
    out = []
    for text in texts:
        words = []
        for w in text.split(" "):
            if len(w) >= 5 and w.isalpha():
                i = rnd.randint(1, len(w) - 3)
                w = w[:i] + rnd.choice(letters) + rnd.choice(letters) + w[i:]
            words.append(w)
        out.append(" ".join(words))
    return out


def measure(make_analyzer, passes: list[list[str]], tokens_per_pass: list[int], seconds: float,
            reset=None) -> float:
    """Tokens per CPU second over consecutive passes (cycling through ``passes``) until ``seconds`` of CPU;
    ``reset`` (untimed) runs before every pass."""
    analyze = make_analyzer()
    done, i, cpu = 0, 0, 0.0
    while True:
        if reset:
            reset()
        cpu0 = time.process_time()
        for text in passes[i % len(passes)]:
            analyze(text)
        cpu += time.process_time() - cpu0
        done += tokens_per_pass[i % len(passes)]
        i += 1
        if cpu >= seconds:
            return done / cpu


def median_rate(make_analyzer, passes, tokens, seconds, repeats, reset=None) -> float:
    return statistics.median(measure(make_analyzer, passes, tokens, seconds, reset) for _ in range(repeats))


def clear_memo(pack) -> None:
    pack._cache.clear()
    pack._token_cache.clear()


def fresh(pack, **kwargs):
    """An analyzer with an empty memo (the pack's memo is cleared before each measurement)."""
    def make():
        clear_memo(pack)
        return pack.analyzer(**kwargs)
    return make


def check_identical(pack, texts: list[str]) -> None:
    slow = pack.analyzer(cache=False, compiled=False)
    for analyze in (pack.analyzer(), pack.analyzer(cache=False), pack.analyzer(compiled=False)):
        assert all(analyze(t) == slow(t) for t in texts), "analysis differs between configurations"


def report(title: str, pack, passes: list[list[str]], seconds: float, repeats: int, configs,
           cold_passes: bool = False) -> dict[str, float]:
    for texts in passes:
        check_identical(pack, texts)
    tokens = [sum(len(tokenize(t)) for t in texts) for texts in passes]
    print(f"{title}: {len(passes[0]):,} texts, {tokens[0]:,} tokens per pass (terms identical in every configuration)")
    rates = {}
    for label, kwargs in configs:
        reset = (lambda: clear_memo(pack)) if cold_passes else None
        rates[label] = median_rate(fresh(pack, **kwargs), passes, tokens, seconds, repeats, reset)
    base = rates[configs[0][0]]
    for label, rate in rates.items():
        print(f"  {label:<34}{rate:>14,.0f} tokens/CPU-s   x{rate / base:5.2f}")
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum CPU time of each measurement")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per figure (the median is shown)")
    args = parser.parse_args()
    from beirx.speedups import native

    start = time.perf_counter()
    for _ in range(10_000_000):
        pass
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"empty Python loop: {10_000_000 / (time.perf_counter() - start) / 1e6:.0f} M iterations/s; "
          f"compiled extension: {'yes' if native is not None else 'NO (pure Python only)'}")
    questions = polish_questions(args.data)
    pl, en = get_pack("pl"), get_pack("en")
    pl.analyze("rozgrzewka")  # load tables and compile patterns outside the timings
    pl.analyzer(compiled=False)("rozgrzewka")
    en.analyzer(compiled=False)("warming up")
    unseen = report("Polish, mostly unseen words (memo emptied before every pass)", pl,
                    [unseen_variant(questions, seed) for seed in range(4)], args.seconds, args.repeats,
                    [("pure Python, cached (before)", {"compiled": False}), ("compiled, cached", {})],
                    cold_passes=True)
    report("Polish, real questions repeated (memo warm after pass 1)", pl, [questions], args.seconds, args.repeats,
           [("pure Python, cached (before)", {"compiled": False}), ("compiled, cached", {})])
    english = report("English, SciFact corpus", en, [scifact_corpus(args.data)], args.seconds, args.repeats,
                     [("pure Python, uncached (before)", {"compiled": False, "cache": False}),
                      ("pure Python, cached (before)", {"compiled": False}),
                      ("compiled, uncached", {"cache": False}), ("compiled, cached", {})])
    pl_rate = unseen["compiled, cached"]
    en_ratio = english["compiled, uncached"] / english["pure Python, uncached (before)"]
    ok_pl, ok_en = pl_rate >= 1_000_000, en_ratio >= 3
    print(f"target Polish unseen >= 1,000,000 tokens/CPU-s: {pl_rate:,.0f} -- {'met' if ok_pl else 'NOT met'}")
    print(f"target English uncached >= 3x pure Python: x{en_ratio:.2f} -- {'met' if ok_en else 'NOT met'}")
    return 0 if ok_pl and ok_en else 1


if __name__ == "__main__":
    raise SystemExit(main())
