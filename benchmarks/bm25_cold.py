"""BM25 on SciFact end to end, cold, in CPU seconds: beirx vs bm25s's own pipeline vs Lucene 8.7 via JPype.

Each system runs in a fresh Python process (interpreter start, imports and, for Lucene, JVM start
included), on the flat field (title + text), top-1000 for the 300 test queries, nDCG@10 with
pytrec_eval and a TREC run file written. CPU = user + system time of the child process
(``os.wait4``); each figure is the median of ``--repeats`` runs.

* ``beirx``: ``python -m beirx eval --dataset SCIFACT --lang en --retriever bm25 --fields flat`` with an
  empty ``BEIRX_HOME`` (no cached index), compiled extension in use;
* ``beirx pure Python``: the same with ``BEIRX_PURE_PYTHON=1`` (the code before the compiled path);
* ``bm25s``: bm25s's README pipeline -- ``bm25s.tokenize(stopwords="en", stemmer=PyStemmer english)``,
  ``BM25().index``, ``retrieve(k=1000)``;
* ``Lucene``: EnglishAnalyzer + BM25Similarity(1.2, 0.75) in a ByteBuffersDirectory through JPype, each
  query a BooleanQuery of SHOULD TermQuery clauses of its analysed terms (an Elasticsearch ``match``).

Targets: beirx CPU <= bm25s CPU, and Lucene CPU / beirx CPU >= 4. beirx and Lucene should print the same
nDCG@10 (same tokens and, by default, Lucene's length norms; docs/bm25.md).

Run:  python benchmarks/bm25_cold.py [--scifact ../shared/data/beir/scifact] [--repeats 3] [--lucene-jars /usr/share/java]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import REPO, SCIFACT  # noqa: E402

_COMMON = r'''
import json, sys
scifact, out = sys.argv[1], sys.argv[2]
def load(name):
    with open(f"{scifact}/{name}", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]
corpus = load("corpus.jsonl")
qrels = {}
with open(f"{scifact}/qrels/test.tsv", encoding="utf-8") as fh:
    next(fh)
    for line in fh:
        q, d, r = line.split("\t")
        qrels.setdefault(q, {})[d] = int(r)
queries = [q for q in load("queries.jsonl") if q["_id"] in qrels]
def finish(run):
    import pytrec_eval
    with open(out, "w", encoding="utf-8") as fh:
        for qid, docs in run.items():
            for rank, (did, score) in enumerate(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True), 1):
                fh.write(f"{qid} Q0 {did} {rank} {score!r} run\n")
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    print(json.dumps({"ndcg@10": sum(v["ndcg_cut_10"] for v in per_query.values()) / len(qrels)}))
'''

BM25S = _COMMON + r'''
import bm25s, Stemmer
stemmer = Stemmer.Stemmer("english")
texts = [f"{d.get('title', '')} {d['text']}" for d in corpus]
retriever = bm25s.BM25()
retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
tokens = bm25s.tokenize([q["text"] for q in queries], stopwords="en", stemmer=stemmer, show_progress=False)
docs, scores = retriever.retrieve(tokens, k=1000, show_progress=False)
finish({q["_id"]: {corpus[i]["_id"]: float(s) for i, s in zip(d, sc) if s > 0}
        for q, d, sc in zip(queries, docs, scores)})
'''

LUCENE = _COMMON + r'''
import glob, jpype, jpype.imports
jars = sys.argv[3]
jpype.startJVM(classpath=[p for p in glob.glob(f"{jars}/lucene-*8.7*.jar")])
from org.apache.lucene.analysis.en import EnglishAnalyzer
from org.apache.lucene.analysis.tokenattributes import CharTermAttribute
from org.apache.lucene.document import Document, Field, StringField, TextField
from org.apache.lucene.index import DirectoryReader, IndexWriter, IndexWriterConfig, Term
from org.apache.lucene.search import BooleanClause, BooleanQuery, IndexSearcher, TermQuery
from org.apache.lucene.search.similarities import BM25Similarity
from org.apache.lucene.store import ByteBuffersDirectory
analyzer, directory, similarity = EnglishAnalyzer(), ByteBuffersDirectory(), BM25Similarity(1.2, 0.75)
writer = IndexWriter(directory, IndexWriterConfig(analyzer).setSimilarity(similarity))
for d in corpus:
    doc = Document()
    doc.add(StringField("id", d["_id"], Field.Store.YES))
    doc.add(TextField("body", f"{d.get('title', '')} {d['text']}", Field.Store.NO))
    writer.addDocument(doc)
writer.close()
searcher = IndexSearcher(DirectoryReader.open(directory))
searcher.setSimilarity(similarity)
BooleanQuery.setMaxClauseCount(4096)
def terms(text):
    stream = analyzer.tokenStream("body", text)
    attr = stream.addAttribute(CharTermAttribute)
    stream.reset()
    out = []
    while stream.incrementToken():
        out.append(attr.toString())
    stream.end(); stream.close()
    return out
run = {}
for q in queries:
    builder = BooleanQuery.Builder()
    for t in terms(q["text"]):
        builder.add(TermQuery(Term("body", t)), BooleanClause.Occur.SHOULD)
    hits = searcher.search(builder.build(), 1000).scoreDocs
    run[q["_id"]] = {str(searcher.doc(h.doc).get("id")): float(h.score) for h in hits}
finish(run)
'''


def run_child(cmd: list[str], env: dict) -> tuple[float, float, str]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    if status:
        raise RuntimeError(f"{' '.join(cmd[:5])} failed:\n{err[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lucene-jars", default="/usr/share/java", help="folder holding the Lucene 8.7 jars")
    args = parser.parse_args()
    base_env = {**os.environ, "PYTHONPATH": str(REPO), "TQDM_DISABLE": "1"}
    try:
        import jpype  # noqa: F401
        have_jpype = True
    except ImportError:
        have_jpype = False
    results: dict[str, list[float]] = {}
    scores: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        def systems():
            for pure in (False, True):
                home = tempfile.mkdtemp(dir=tmp)
                env = {**base_env, "BEIRX_HOME": home, **({"BEIRX_PURE_PYTHON": "1"} if pure else {})}
                cmd = [sys.executable, "-m", "beirx", "eval", "--dataset", str(args.scifact), "--lang", "en",
                       "--retriever", "bm25", "--fields", "flat", "--output", str(Path(home) / "out")]
                yield ("beirx pure Python (before)" if pure else "beirx"), cmd, env, home
            yield "bm25s", [sys.executable, "-c", BM25S, str(args.scifact), f"{tmp}/bm25s.trec"], base_env, None
            if have_jpype:
                yield "Lucene 8.7 (JPype)", [sys.executable, "-c", LUCENE, str(args.scifact), f"{tmp}/lucene.trec",
                                             args.lucene_jars], base_env, None

        for _ in range(args.repeats):
            for name, cmd, env, home in systems():
                cpu, wall, out = run_child(cmd, env)
                results.setdefault(name, []).append(cpu)
                if home:
                    result = json.loads(next(Path(home, "out").glob("*.json")).read_text())
                    scores[name] = result["metrics"]["NDCG@10"]
                else:
                    scores[name] = json.loads(out.strip().splitlines()[-1])["ndcg@10"]
    if not have_jpype:
        print("JPype is not installed (pip install JPype1): Lucene not measured")
    beirx = statistics.median(results["beirx"])
    print(f"SciFact BM25 flat, cold, end to end; median of {args.repeats} runs (CPU s = user + system of the process)")
    print(f"{'system':<30}{'CPU s':>8}{'vs beirx':>10}{'nDCG@10':>9}   runs")
    for name, cpus in results.items():
        med = statistics.median(cpus)
        print(f"{name:<30}{med:>8.2f}{med / beirx:>9.2f}x{scores[name]:>9.4f}   {', '.join(f'{c:.2f}' for c in cpus)}")
    ok = statistics.median(results["bm25s"]) >= beirx
    print(f"target beirx CPU <= bm25s CPU: {'met' if ok else 'NOT met'}")
    if have_jpype:
        ratio = statistics.median(results["Lucene 8.7 (JPype)"]) / beirx
        ok = ok and ratio >= 4
        print(f"target Lucene CPU / beirx CPU >= 4: x{ratio:.2f} -- {'met' if ratio >= 4 else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
