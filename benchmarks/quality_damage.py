"""How well does each quality method find damaged translations, and the damage that costs retrieval?

**Detection** (default): 200 SciFact documents translated to Spanish by Apertium, 20 of them damaged on purpose (4
each: truncated, left in English, a number changed, a sentence dropped, the wrong language: Apertium's Catalan), then
``beirx quality`` with every method; for each method, precision and recall of its flags against the 20 damaged rows,
and the precision of its 20 worst rows.

    BEIRX_TEST_E5=/path/to/e5-small python benchmarks/quality_damage.py [--rows 200] [--fake-judge]
                                                                         [--judge-url URL --judge-model M]

**Retrieval** (``--retrieval``): damage injected at known rates into the test queries and their judged relevant
documents of a full translation (default 10% of each; no query meets two damaged rows, so every loss has one cause),
the systems evaluated on the clean and the damaged translation, and ``beirx quality`` run on the damaged one. A
damaged row *costs* retrieval when the queries it touches (itself, or those judging the document relevant) lose at
least :data:`COSTLY` nDCG@10 averaged over the systems; a damaged row that costs nothing is damage retrieval does
not see. Per quality signal (each score, each flag-only method's flag count, the combined order): precision and
recall of its worst rows (k = the damaged rows) among the rows retrieval reads, against the damaged rows and against
the costly ones, and Spearman's rho between the signal and the cost over the damaged rows (does it rank the costly
damage above the harmless?).

    python benchmarks/quality_damage.py --retrieval --translation scifact-es --clean-results results/es-test \
        --keep WORK [--query-rate 0.1] [--doc-rate 0.1] [--judge-url URL]

``--clean-results`` holds the results documents of the systems on the clean translation (beirx eval; the labels
name the systems: ``bm25-multifield``, ``bm25-flat``, and of ``e5-small``, ``e5-small-onnx-int8``, ``use-m3``,
``rrf-bm25-e5``, ``rrf-bm25-use``, ``rrf-bm25-e5-use`` those it holds). The damaged side is evaluated the same way:
BM25 indexes the damaged folder; the dense systems reuse the clean corpus embeddings (from the cache beirx eval left in
$BEIRX_HOME) with only the damaged documents re-encoded by the same encoder (the corpus differs in those rows
only; the clean run is reproduced first, as a check); their runs are TREC files that ``beirx eval --config``
scores and fuses (RRF of bm25-multifield with e5-small, with use-m3, and with both). Then ``beirx report`` of the
source results against the damaged results, with the damaged quality report, gives the per-method damage table
on the injected run.

Needs Apertium (``apertium-eng-spa``, ``apertium-eng-cat``) and ``../shared`` (SciFact). The LLM judge runs
against any OpenAI-compatible endpoint (``--judge-url``), or, in the detection mode, with ``--fake-judge`` against
the tests' fake server (tests/fake_openai.py) answering as a *simulated* judge whose mistakes are injected at known
rates (it misses 15% of the damaged rows, raises a false alarm on 3% of the clean ones, and 10% of its first answers
are not JSON): its row measures that the judge's verdicts reach the flags intact through parsing and retries (the
expected counts are printed beside), not how well any LLM judges.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np  # noqa: E402

from benchmarks._shared import SCIFACT, e5_default  # noqa: E402

DAMAGES = ("truncated", "english", "number", "sentence_dropped", "wrong_language")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-ZÁÉÍÓÚÑ¿¡])")
_NUMBER = re.compile(r"\d+")


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s.strip()]


def damage(kind: str, english: str, spanish: str, catalan: str) -> str:
    """The damaged translation of one row."""
    if kind == "truncated":
        words = spanish.split()
        return " ".join(words[:max(2 if len(words) < 9 else 3, len(words) // 3)])
    if kind == "english":
        return english
    if kind == "number":
        match = next(m for m in _NUMBER.finditer(spanish) if m.group() in english)
        changed = str(int(match.group()) + 7)
        return spanish[:match.start()] + changed + spanish[match.end():]
    if kind == "sentence_dropped":
        parts = _sentences(spanish)
        drop = len(parts) // 2
        return " ".join(parts[:drop] + parts[drop + 1:])
    if kind == "wrong_language":
        return catalan
    raise ValueError(kind)


def eligible(kind: str, english: str, spanish: str, field: str = "corpus") -> bool:
    """Whether ``kind`` can damage the row: a number to change, three sentences to drop one of, a long enough text
    (a query: at least 4 words, and no sentence to drop)."""
    if kind == "number":
        return any(m.group() in english for m in _NUMBER.finditer(spanish))
    if field == "queries":
        return kind != "sentence_dropped" and len(spanish.split()) >= 4
    if kind == "sentence_dropped":
        return len(_sentences(spanish)) >= 3
    return len(spanish.split()) >= 30


def build(work: Path, rows: int, seed: int) -> tuple[Path, Path, dict[str, str]]:
    """Source and damaged-translation BEIR folders (corpus only scored) and ``{doc id: damage}``."""
    from beirx.translate.backends import TRANSLATORS
    from beirx.translate.planning.text_plan import translate_texts

    work.mkdir(parents=True, exist_ok=True)
    docs = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open(encoding="utf-8")]
    docs = random.Random(seed).sample(docs, rows)
    english = [f"{d['title']} {d['text']}".strip() for d in docs]
    spanish = translate_texts(TRANSLATORS.get("apertium")("en", "es"), english)
    rng = random.Random(seed + 1)
    damaged: dict[int, str] = {}
    for kind in DAMAGES:
        candidates = [i for i in range(rows) if i not in damaged and eligible(kind, english[i], spanish[i])]
        for i in rng.sample(candidates, 4):
            damaged[i] = kind
    catalan = dict(zip([i for i, k in damaged.items() if k == "wrong_language"],
                       translate_texts(TRANSLATORS.get("apertium")("en", "ca"),
                                       [english[i] for i, k in damaged.items() if k == "wrong_language"])))
    translated = [damage(damaged[i], english[i], spanish[i], catalan.get(i, "")) if i in damaged else spanish[i]
                  for i in range(rows)]

    def write(name: str, texts: list[str]) -> Path:
        root = work / name
        root.mkdir(parents=True)
        with (root / "corpus.jsonl").open("w", encoding="utf-8") as fh:
            for doc, text in zip(docs, texts):
                fh.write(json.dumps({"_id": doc["_id"], "title": "", "text": text}, ensure_ascii=False) + "\n")
        (root / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "placeholder"}) + "\n", encoding="utf-8")
        (root / "qrels").mkdir()
        (root / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\nq\t{docs[0]['_id']}\t1\n",
                                                  encoding="utf-8")
        return root

    truth = {docs[i]["_id"]: k for i, k in damaged.items()}
    (work / "damaged.json").write_text(json.dumps(truth, indent=1), encoding="utf-8")  # for benchmarks/review_demo.py
    return write("en", english), write("es", translated), truth


SIMULATED = {"miss": 0.15, "false_alarm": 0.03, "malformed": 0.10}


def _draw(text: str, what: str) -> float:
    """A fixed pseudo-random number in [0, 1) per (text, purpose): the same answer on every run."""
    import hashlib

    return int(hashlib.sha256(f"{what}\x1f{text}".encode()).hexdigest()[:12], 16) / 16 ** 12


def simulated_judge(damaged_texts: set[str]):
    """A responder for the fake server: a judge that knows which translations were damaged, with injected
    mistakes (:data:`SIMULATED`); returns it and the verdicts it will give (text -> flagged?)."""
    def verdict(text: str) -> bool:
        chance = _draw(text, "verdict")
        return chance >= SIMULATED["miss"] if text in damaged_texts else chance < SIMULATED["false_alarm"]

    def respond(call) -> str:
        user = next(m["content"] for m in call.body["messages"] if m["role"] == "user")
        text = re.search(r"<translation>\n(.*?)\n</translation>", user, re.S).group(1)
        if len(call.body["messages"]) == 2 and _draw(text, "malformed") < SIMULATED["malformed"]:
            return "The translation reads well overall, with a few issues."
        if verdict(text):
            return json.dumps({"errors": [{"span": text[:20], "category": "accuracy/omission", "severity": "major"}],
                               "score": 35})
        return json.dumps({"errors": [], "score": 90})

    return respond, verdict


def method_flags(report) -> dict[str, set[str]]:
    """Flagged corpus IDs per method (its own reasons; the round trip's two rules apart), and all together, from
    the report's per-row sidecar."""
    flagged = {row["id"]: set(row["flags"]) for row in report.rows(["corpus"]) if row["flags"]}
    out = {}
    for name, info in report.methods.items():
        reasons = set(info.flags)
        if name == "roundtrip":  # two scores, two rules: shown apart
            for reason in sorted(reasons):
                out[f"roundtrip ({reason})"] = {i for i, r in flagged.items() if reason in r}
            continue
        out[name] = {i for i, r in flagged.items() if reasons & r}
    out["all methods"] = set(flagged)
    return out


def worst(report, score: str, k: int) -> list[str]:
    info = report.scores[score]
    values = [(v if info.higher_is_better else -v, row["id"]) for row in report.rows(["corpus"])
              if (v := row["scores"].get(score)) is not None]
    return [i for _, i in sorted(values)[:k]]


# -- retrieval: damage that costs nDCG ------------------------------------------------------------------------
COSTLY = 0.05  # a damaged row costs retrieval from this mean nDCG@10 loss (over the systems) on its queries
METRIC = "NDCG@10"
QUERY_KINDS = tuple(k for k in DAMAGES if k != "sentence_dropped")  # a query is one sentence


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def choose_rows(test: dict[str, dict[str, int]], english: dict[tuple[str, str], str],
                spanish: dict[tuple[str, str], str], query_rate: float, doc_rate: float,
                seed: int) -> dict[tuple[str, str], str]:
    """``{(field, id): damage}``: ``query_rate`` of the test queries and ``doc_rate`` of their judged relevant
    documents, in a seeded order, each given the eligible kind used least so far, and never two rows met by one query
    (a document is met by every query judging it relevant)."""
    rng = random.Random(seed)
    relevant = {q: [d for d, rel in docs.items() if rel > 0] for q, docs in test.items()}
    judged_by: dict[str, list[str]] = {}
    for q, docs in relevant.items():
        for d in docs:
            judged_by.setdefault(d, []).append(q)
    queries, docs = sorted(relevant), sorted(judged_by)
    rng.shuffle(queries)
    rng.shuffle(docs)
    chosen: dict[tuple[str, str], str] = {}
    touched: set[str] = set()
    used = {kind: 0 for kind in DAMAGES}

    def take(field: str, items: list[str], want: int, kinds: tuple[str, ...]) -> None:
        for item in items:
            if sum(f == field for f, _ in chosen) >= want:
                return
            meets = {item} if field == "queries" else set(judged_by[item])
            key = (field, item)
            fit = [k for k in kinds if eligible(k, english[key], spanish[key], field)]
            if meets & touched or not fit:
                continue
            kind = min(fit, key=lambda k: (used[k], DAMAGES.index(k)))
            chosen[key], used[kind] = kind, used[kind] + 1
            touched.update(meets)

    take("corpus", docs, round(doc_rate * len(docs)), DAMAGES)
    take("queries", queries, round(query_rate * len(queries)), QUERY_KINDS)
    return chosen


def damaged_copy(translation: Path, source: Path, out: Path, query_rate: float, doc_rate: float,
                 seed: int) -> dict[tuple[str, str], str]:
    """Write the damaged translation to ``out`` (the translation with the chosen rows damaged; IDs, qrels and
    translation.json as they were) and return the chosen rows."""
    from beirx.data.beir_io import read_qrels
    from beirx.translate.backends import TRANSLATORS
    from beirx.translate.planning.text_plan import translate_texts

    test = read_qrels(translation / "qrels" / "test.tsv")
    src_docs = {d["_id"]: d for d in _read_jsonl(source / "corpus.jsonl")}
    src_queries = {q["_id"]: q["text"] for q in _read_jsonl(source / "queries.jsonl")}
    docs, queries = _read_jsonl(translation / "corpus.jsonl"), _read_jsonl(translation / "queries.jsonl")
    english = {**{("corpus", i): d["text"] for i, d in src_docs.items()},
               **{("queries", i): t for i, t in src_queries.items()}}
    spanish = {**{("corpus", d["_id"]): d["text"] for d in docs}, **{("queries", q["_id"]): q["text"] for q in queries}}
    chosen = choose_rows(test, english, spanish, query_rate, doc_rate, seed)
    catalan_keys = [key for key, kind in chosen.items() if kind == "wrong_language"]
    titles = [("corpus", i) for f, i in catalan_keys if f == "corpus" and src_docs[i]["title"]]
    catalan = dict(zip(catalan_keys + [("title", i) for _, i in titles],
                       translate_texts(TRANSLATORS.get("apertium")("en", "ca"),
                                       [english[k] for k in catalan_keys] + [src_docs[i]["title"] for _, i in titles])))
    for row in docs:
        kind = chosen.get(("corpus", row["_id"]))
        if kind is None:
            continue
        key = ("corpus", row["_id"])
        row["text"] = damage(kind, english[key], spanish[key], catalan.get(key, ""))
        if kind == "english":
            row["title"] = src_docs[row["_id"]]["title"]
        elif kind == "wrong_language" and src_docs[row["_id"]]["title"]:
            row["title"] = catalan[("title", row["_id"])]
    for row in queries:
        kind = chosen.get(("queries", row["_id"]))
        if kind is not None:
            key = ("queries", row["_id"])
            row["text"] = damage(kind, english[key], spanish[key], catalan.get(key, ""))
    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out / "corpus.jsonl", docs)
    _write_jsonl(out / "queries.jsonl", queries)
    shutil.copytree(translation / "qrels", out / "qrels", dirs_exist_ok=True)
    shutil.copy(translation / "translation.json", out / "translation.json")
    (out.parent / "damaged.json").write_text(json.dumps({f"{f}/{i}": k for (f, i), k in sorted(chosen.items())},
                                                        indent=1), encoding="utf-8")
    return chosen


def dense_runs(clean: Path, damaged: Path, systems: dict[str, dict], clean_results: Path, out: Path,
               top_k: int) -> dict[str, Path]:
    """A TREC run of each dense system on the damaged translation: the clean corpus embeddings (cached by beirx
    eval) with only the changed documents re-encoded. The clean run is reproduced first, as a check."""
    from beirx.data.dataset import BeirDataset
    from beirx.evaluate.metrics import evaluate
    from beirx.evaluate.retrievers.dense import DenseRetriever
    from beirx.evaluate.runs import write_trec
    from beirx.language_packs import get_pack

    clean_set, damaged_set = BeirDataset(clean, lang="es"), BeirDataset(damaged, lang="es")
    clean_queries, qrels = clean_set.queries_for_split("test")
    damaged_queries, _ = damaged_set.queries_for_split("test")
    clean_docs = {d.id: d.joined() for d in clean_set.iter_corpus()}
    changed = {d.id: d.joined() for d in damaged_set.iter_corpus() if clean_docs[d.id] != d.joined()}
    runs = {}
    for label, params in systems.items():
        retriever = DenseRetriever(get_pack("es"), show_progress=False, **params)
        retriever.index(clean_set)
        reproduced = evaluate(qrels, retriever.search(clean_queries, top_k), [10]).metrics[METRIC]
        recorded = _results(clean_results)[label].metrics[METRIC]
        print(f"{label}: the clean run reproduced at {METRIC} {reproduced:.4f} (beirx eval: {recorded:.4f}); "
              f"{len(changed)} damaged documents re-encoded")
        matrix = np.array(retriever.embeddings, dtype=np.float32)
        rows = {doc: n for n, doc in enumerate(retriever.doc_ids)}
        ids = sorted(changed)
        matrix[[rows[i] for i in ids]] = retriever.encode([changed[i] for i in ids], retriever.passage_prompt)
        retriever.embeddings = matrix
        runs[label] = out / f"{label}.trec"
        write_trec(runs[label], retriever.search(damaged_queries, top_k), tag=label)
    return runs


def _results(folder: Path) -> dict:
    from beirx.artifacts.results import ResultsDocument

    found = [ResultsDocument.load_if_any(p) for p in sorted(folder.glob("*.json"))]
    return {doc.label: doc for doc in found if doc is not None}


def grid(damaged: Path, runs: dict[str, Path], output: Path, top_k: int) -> Path:
    """The damaged translation's systems as a beirx eval grid: BM25 (multifield, flat) on the folder, the dense runs
    as run files, and the RRFs of bm25-multifield with e5-small, with use-m3, and with both (those that ran)."""
    lines = [f'output = "{output}"', 'split = "test"', f"top_k = {top_k}", 'languages = ["es"]', "",
             "[[datasets]]", f'name = "{damaged}"', 'label = "scifact"', f'paths = {{ es = "{damaged}" }}', "",
             "[[systems]]", 'name = "bm25-multifield"', 'retriever = "bm25"', "",
             "[[systems]]", 'name = "bm25-flat"', 'retriever = "bm25"', 'fields = "flat"', ""]
    for label, path in runs.items():
        lines += ["[[systems]]", f'name = "{label}"', f'run_file = "{path}"', ""]
    if "e5-small" in runs:
        lines += ["[[systems]]", 'name = "rrf-bm25-e5"', 'fusion = "rrf"', 'inputs = ["bm25-multifield", "e5-small"]',
                  ""]
    if "use-m3" in runs:
        lines += ["[[systems]]", 'name = "rrf-bm25-use"', 'fusion = "rrf"', 'inputs = ["bm25-multifield", "use-m3"]',
                  ""]
    if {"e5-small", "use-m3"} <= set(runs):
        lines += ["[[systems]]", 'name = "rrf-bm25-e5-use"', 'fusion = "rrf"',
                  'inputs = ["bm25-multifield", "e5-small", "use-m3"]', ""]
    path = output.parent / "grid-damaged.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def costs(chosen: dict[tuple[str, str], str], test: dict[str, dict[str, int]], clean: dict, damaged: dict
          ) -> tuple[dict[tuple[str, str], float], list[str]]:
    """Each damaged row's cost: the nDCG@10 its queries lose, averaged over the systems and over its queries."""
    systems = [label for label in clean if label in damaged]
    loss = {q: float(np.mean([clean[s].per_query[q][METRIC] - damaged[s].per_query[q][METRIC] for s in systems]))
            for q in test}
    meets = {}
    for (field, item) in chosen:
        meets[(field, item)] = ([item] if field == "queries" else
                                [q for q, docs in test.items() if docs.get(item, 0) > 0])
    return {key: float(np.mean([loss[q] for q in qs])) for key, qs in meets.items()}, systems


def retrieval(args) -> None:
    from beirx.data.beir_io import read_qrels
    from beirx.data.dataset import BeirDataset
    from beirx.rank_agreement import spearman_interval
    from beirx.report.quality_drop import precision_recall_at_k, signals_of
    from beirx.translate.backends import TRANSLATORS
    from beirx.translate.quality.base import JudgedRows
    from beirx.translate.quality.embedding import EmbeddingSimilarity
    from beirx.translate.quality.roundtrip import RoundTrip
    from beirx.translate.quality.rule_checks import Checks
    from beirx.translate.quality.run import run_quality

    work = args.keep or Path(tempfile.mkdtemp(prefix="quality-damage-retrieval-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.process_time()
    damaged = work / "scifact-es-damaged"
    chosen = damaged_copy(args.translation, args.source, damaged, args.query_rate, args.doc_rate, args.seed)
    test = read_qrels(args.translation / "qrels" / "test.tsv")
    by_kind = {f: {k: sum(1 for (ff, _), kk in chosen.items() if ff == f and kk == k) for k in DAMAGES}
               for f in ("queries", "corpus")}
    print(f"damaged: {sum(by_kind['queries'].values())} of {len(test)} test queries and "
          f"{sum(by_kind['corpus'].values())} of their judged relevant documents "
          f"({', '.join(f'{f} ' + ', '.join(f'{k} {n}' for k, n in c.items() if n) for f, c in by_kind.items())}); "
          f"data in {work}")
    known = {"e5-small": {"model": str(args.e5)},
             "e5-small-onnx-int8": {"model": str(args.e5), "backend": "onnx", "quantize": "int8"},
             "use-m3": {"model": "use-multilingual-v3"}}
    clean_labels = _results(args.clean_results)
    dense = {label: params for label, params in known.items() if label in clean_labels}  # those evaluated clean
    runs = dense_runs(args.translation, damaged, dense, args.clean_results, work / "runs", args.top_k)
    results = work / "results"
    subprocess.run([sys.executable, "-m", "beirx", "eval", "--config", str(grid(damaged, runs, results, args.top_k)),
                    "--no-progress"], check=True)
    clean, hurt = _results(args.clean_results), _results(results)
    cost, systems = costs(chosen, test, clean, hurt)
    costly = {key for key, value in cost.items() if value >= COSTLY}
    print(f"\n{METRIC}, clean -> damaged translation (test, {len(test)} queries):")
    for label in systems:
        print(f"  {label}: {clean[label].metrics[METRIC]:.4f} -> {hurt[label].metrics[METRIC]:.4f}")
    print(f"\ncost of a damaged row (mean {METRIC} loss over {len(systems)} systems on the queries it meets): "
          f"{len(costly)} of {len(chosen)} cost at least {COSTLY}; "
          f"{sum(1 for v in cost.values() if abs(v) < 1e-9)} cost nothing")
    print("| damage | field | rows | costly | mean cost |")
    print("|---|---|---:|---:|---:|")
    for field in ("queries", "corpus"):
        for kind in DAMAGES:
            mine = [key for key, k in chosen.items() if key[0] == field and k == kind]
            if mine:
                print(f"| {kind} | {field} | {len(mine)} | {sum(key in costly for key in mine)} | "
                      f"{np.mean([cost[key] for key in mine]):.3f} |")

    methods = [Checks(), EmbeddingSimilarity(JudgedRows("test")),
               RoundTrip(TRANSLATORS.get("apertium")("es", "en"), sample=JudgedRows("test"))]
    if args.judge_url:
        from beirx.translate.quality.judge import LLMJudge

        methods.append(LLMJudge(args.judge_model, base_url=args.judge_url, sample=JudgedRows("test"),
                                max_tokens=args.judge_max_tokens, retries=1, concurrency=1))
    report = run_quality(BeirDataset(args.source), BeirDataset(damaged), work / "quality", src_lang="en",
                         tgt_lang="es", methods=methods, encoder=str(args.e5), show_progress=False)
    relevant = {d for docs in test.values() for d, rel in docs.items() if rel > 0}
    rows = [row for row in report.rows() if (row["field"] == "queries" and row["id"] in test)
            or (row["field"] == "corpus" and row["id"] in relevant)]
    print(f"\nwhich signal finds the damage, over the {len(rows)} rows retrieval reads (test queries and their judged "
          f"relevant documents); k = the damaged rows ({len(chosen)}) or the costly ones ({len(costly)}); rho: the "
          f"signal (higher = worse) against the cost over the damaged rows, 95% bootstrap interval\n")
    print("| signal | rows | P@k damaged | R@k damaged | P@k costly | R@k costly | rho vs cost (damaged rows) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for signal in signals_of(report):
        values = [(signal.badness(row), (row["field"], row["id"])) for row in rows]
        values = [(v, key) for v, key in values if v is not None]
        if not values:
            continue
        badness = np.array([v for v, _ in values])
        is_damaged = np.array([key in chosen for _, key in values])
        is_costly = np.array([key in costly for _, key in values])
        p_d, r_d = precision_recall_at_k(badness, is_damaged, int(is_damaged.sum()))
        p_c, r_c = precision_recall_at_k(badness, is_costly, int(is_costly.sum()))
        on_damaged = [(v, cost[key]) for v, key in values if key in chosen]
        rho, _, interval = spearman_interval(np.array([v for v, _ in on_damaged]), np.array([c for _, c in on_damaged]),
                                             seed=args.seed)
        shown = "–" if rho is None else f"{rho:+.3f} [{interval[0]:+.3f}, {interval[1]:+.3f}]"
        print(f"| {signal.name} | {len(values)} | {_f(p_d)} | {_f(r_d)} | {_f(p_c)} | {_f(r_c)} | {shown} |")
    base_d, base_c = len(chosen) / len(rows), len(costly) / len(rows)
    print(f"| (random order) | {len(rows)} | {base_d:.2f} | {base_d:.2f} | {base_c:.2f} | {base_c:.2f} | – |")
    print(f"\nnext: beirx report SOURCE_RESULTS {results} --quality {work / 'quality' / 'quality.json'} "
          f"--output {work / 'report'}\nCPU {time.process_time() - started:.0f} s (this process)")


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--e5", type=Path, **e5_default(), help="multilingual-e5-small folder (default $BEIRX_TEST_E5)")
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--judge-url", help="OpenAI-compatible endpoint for the LLM judge")
    parser.add_argument("--judge-model", default="judge")
    parser.add_argument("--fake-judge", action="store_true", help="a simulated judge on the tests' fake server")
    parser.add_argument("--keep", type=Path, help="keep the datasets and report in this folder")
    retrieval_mode = parser.add_argument_group("retrieval (--retrieval)")
    retrieval_mode.add_argument("--retrieval", action="store_true", help="measure the damage on retrieval")
    retrieval_mode.add_argument("--source", type=Path, default=SCIFACT, help="the English SciFact folder")
    retrieval_mode.add_argument("--translation", type=Path, help="its full Spanish translation")
    retrieval_mode.add_argument("--clean-results", type=Path, help="results documents of the systems on it (test)")
    retrieval_mode.add_argument("--query-rate", type=float, default=0.1, help="share of the test queries damaged")
    retrieval_mode.add_argument("--doc-rate", type=float, default=0.1,
                                help="share of their judged relevant documents damaged")
    retrieval_mode.add_argument("--top-k", type=int, default=1000)
    retrieval_mode.add_argument("--judge-max-tokens", type=int, default=128)
    args = parser.parse_args()
    if args.retrieval:
        if not (args.translation and args.clean_results):
            parser.error("--retrieval needs --translation and --clean-results")
        retrieval(args)
        return

    from beirx.data.dataset import BeirDataset
    from beirx.translate.backends import TRANSLATORS
    from beirx.translate.quality.embedding import EmbeddingSimilarity
    from beirx.translate.quality.roundtrip import RoundTrip
    from beirx.translate.quality.rule_checks import Checks
    from beirx.translate.quality.run import run_quality

    work = args.keep or Path(tempfile.mkdtemp(prefix="quality-damage-"))
    started = time.process_time()
    source, translated, damaged = build(work, args.rows, args.seed)
    print(f"{args.rows} SciFact documents, Apertium en->es; damaged: {len(damaged)} "
          f"({', '.join(f'{k} {sum(v == k for v in damaged.values())}' for k in DAMAGES)}); data in {work}")
    methods = [Checks(), EmbeddingSimilarity(), RoundTrip(TRANSLATORS.get("apertium")("es", "en"), sample=None)]
    fake, expected = None, None
    if args.fake_judge:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from fake_openai import FakeOpenAI

        texts = {json.loads(line)["_id"]: json.loads(line)["text"]
                 for line in (translated / "corpus.jsonl").open(encoding="utf-8")}
        responder, verdict = simulated_judge({texts[i] for i in damaged})
        fake = FakeOpenAI(responder=responder, model=args.judge_model).start()
        args.judge_url = fake.url
        expected = {i for i, text in texts.items() if verdict(text)}
    if args.judge_url:
        from beirx.translate.quality.judge import LLMJudge

        methods.append(LLMJudge(args.judge_model, base_url=args.judge_url, sample=None, use_cache=False))
    try:
        report = run_quality(BeirDataset(source), BeirDataset(translated), work / "report", src_lang="en",
                             tgt_lang="es", methods=methods, encoder=str(args.e5), fields=("corpus",),
                             show_progress=False)
    finally:
        if fake is not None:
            fake.stop()
    truth = set(damaged)
    print(f"\nflags against the {len(truth)} damaged rows (robust-z outliers for the score methods, rules for checks)\n")
    print(f"| method | flagged | of them damaged | precision | recall | caught ({', '.join(DAMAGES)}) |")
    print("|---|---:|---:|---:|---:|---|")
    for name, found in method_flags(report).items():
        hit = found & truth
        precision = f"{len(hit) / len(found):.2f}" if found else "–"
        caught = ", ".join(str(sum(damaged[i] == k for i in hit)) for k in DAMAGES)
        print(f"| {name} | {len(found)} | {len(hit)} | {precision} | {len(hit) / len(truth):.2f} | {caught} |")
    if expected is not None:
        judge = report.fields["corpus"].methods["judge"].summary
        print(f"\nsimulated judge: injected verdicts flag {len(expected)} rows, {len(expected & truth)} of them damaged "
              f"(expected precision {len(expected & truth) / len(expected):.2f}, recall "
              f"{len(expected & truth) / len(truth):.2f}); {judge['answers_asked_again']} first answers were not JSON "
              f"and were asked again; {judge['malformed']} stayed malformed; {judge['usage']['requests']} requests")
    print(f"\nthe {len(truth)} worst rows of each score (no threshold): precision = recall at k={len(truth)}\n")
    print(f"| score | damaged among the {len(truth)} worst | caught ({', '.join(DAMAGES)}) |")
    print("|---|---:|---|")
    for score in report.scores:
        hit = set(worst(report, score, len(truth))) & truth
        caught = ", ".join(str(sum(damaged[i] == k for i in hit)) for k in DAMAGES)
        print(f"| {score} | {len(hit)} ({len(hit) / len(truth):.2f}) | {caught} |")
    print(f"\nreport: {work / 'report' / 'quality.md'}; CPU {time.process_time() - started:.0f} s (this process)")


if __name__ == "__main__":
    main()
