"""Peak memory of BM25 indexing on a large synthetic corpus: streaming int32 postings vs token lists.

Generates a BEIR folder of ``--docs`` documents (default 1,000,000) of 60 words each, drawn from a
Zipf-distributed vocabulary of 200,000 synthetic words (fixed seed), plus 50 queries of 4 words. Each
path runs in its own process, which reports its peak RSS (``ru_maxrss``) and CPU time:

* ``streaming`` -- ``BM25Retriever(fields="flat").index(dataset)``: each document's terms become int32
  (term id, tf) pairs at once (beirx/evaluate/retrievers/bm25_index.py);
* ``token lists`` -- the code path before: every document's analysed token list kept in memory, then
  ``bm25s.BM25(method="lucene").index(token_lists)``.

Both then retrieve the top 100 for the 50 queries; the two rankings (IDs and float scores) must be
identical. Target: streaming peak RSS <= 1.6 GB at 1M documents (the token-list path: 3.2 GB).

Run:  python benchmarks/bm25_memory.py [--docs 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORDS_PER_DOC = 60


def generate(folder: Path, n_docs: int, seed: int = 0) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    vocab_size = 200_000
    chars = rng.integers(ord("a"), ord("z") + 1, size=(vocab_size, 9), dtype=np.uint8)
    vocab = [bytes(row[:n]).decode() for row, n in zip(chars, rng.integers(4, 10, vocab_size))]
    weights = 1.0 / np.arange(1, vocab_size + 1) ** 1.05
    weights /= weights.sum()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for start in range(0, n_docs, 10_000):
            block = rng.choice(vocab_size, size=(min(10_000, n_docs - start), WORDS_PER_DOC), p=weights)
            for i, row in enumerate(block, start):
                fh.write(json.dumps({"_id": f"d{i}", "title": "", "text": " ".join(vocab[w] for w in row)}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as qf, open(folder / "qrels" / "test.tsv", "w") as rf:
        rf.write("query-id\tcorpus-id\tscore\n")
        for q in range(50):
            words = rng.choice(vocab_size, size=4, p=weights)
            qf.write(json.dumps({"_id": f"q{q}", "text": " ".join(vocab[w] for w in words)}) + "\n")
            rf.write(f"q{q}\td{q}\t1\n")


def child(path: str, folder: Path, out: Path) -> None:
    """Index with one path, retrieve, write the run, print peak RSS and CPU as JSON."""
    import numpy as np

    from beirx.data.dataset import BeirDataset
    from beirx.evaluate.retrievers.bm25 import BM25Retriever, _bm25s, _FieldIndex
    from beirx.language_packs import get_pack

    dataset = BeirDataset(folder, name="synthetic", lang="en")
    pack = get_pack("en")
    # exact lengths: the token-list path is bm25s's own index, which has no Lucene norms
    retriever = BM25Retriever(pack, fields="flat", length_norm="exact", use_cache=False, show_progress=False)
    cpu0 = time.process_time()
    if path == "streaming":
        retriever.index(dataset)
    else:  # the code before: all token lists in memory, then bm25s's own indexing
        bm25s = _bm25s()
        analyze = pack.analyzer()
        token_lists, positions = [], []
        for pos, doc in enumerate(dataset.iter_corpus()):
            retriever.doc_ids.append(doc.id)
            tokens = analyze(f"{doc.title} {doc.text}")
            if tokens:
                token_lists.append(tokens)
                positions.append(pos)
        bm25 = bm25s.BM25(k1=1.2, b=0.75, method="lucene", idf_method="lucene")
        bm25.index(token_lists, show_progress=False)
        del token_lists
        retriever._fields = {"contents": _FieldIndex(bm25, np.asarray(positions, dtype=np.int64))}
    index_cpu = time.process_time() - cpu0
    run = {}
    for qid, query in dataset.queries.items():
        scores = retriever.score_all(query.text)
        run[qid] = {} if scores is None else retriever.ranked(scores, 100)
    out.write_text(json.dumps(run))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"peak_rss": peak, "index_cpu": index_cpu}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, default=None, help="generate into / reuse this folder")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "corpus"
        if not (folder / "corpus.jsonl").is_file():
            start = time.perf_counter()
            generate(folder, args.docs)
            print(f"generated {args.docs:,} documents x {WORDS_PER_DOC} words in {time.perf_counter() - start:.0f} s")
        env = {**os.environ, "PYTHONPATH": str(REPO), "BEIRX_HOME": str(Path(tmp) / "home")}
        figures, runs = {}, {}
        for path in ("streaming", "token lists"):
            out = Path(tmp) / f"{path.replace(' ', '_')}.json"
            proc = subprocess.run([sys.executable, __file__, "--child", path, str(folder), str(out)], env=env,
                                  capture_output=True, text=True)
            if proc.returncode:
                print(proc.stderr[-3000:])
                return 2
            figures[path] = json.loads(proc.stdout.strip().splitlines()[-1])
            runs[path] = json.loads(out.read_text())
    identical = runs["streaming"] == runs["token lists"]
    print(f"BM25 flat index of {args.docs:,} synthetic documents ({WORDS_PER_DOC} words each)")
    for path, fig in figures.items():
        print(f"  {path:<12} peak RSS {fig['peak_rss'] / 2**30:6.2f} GiB   index CPU {fig['index_cpu']:7.1f} s")
    ratio = figures["token lists"]["peak_rss"] / figures["streaming"]["peak_rss"]
    print(f"  token lists / streaming peak: x{ratio:.2f}; top-100 rankings of 50 queries identical: {identical}")
    ok = figures["streaming"]["peak_rss"] <= 1.6e9 and identical
    print(f"target streaming peak RSS <= 1.6 GB with identical rankings: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
