"""How well does each quality method find damaged translations? 200 SciFact documents translated to Spanish by
Apertium, 20 of them damaged on purpose (4 each: truncated, left in English, a number changed, a sentence
dropped, the wrong language: Apertium's Catalan), then ``beirx quality`` with every method; for each method,
precision and recall of its flags against the 20 damaged rows, and the precision of its 20 worst rows.

    BEIRX_TEST_E5=/path/to/e5-small python benchmarks/quality_damage.py [--rows 200] [--fake-judge]
                                                                         [--judge-url URL --judge-model M]

Needs Apertium (``apertium-eng-spa``, ``apertium-eng-cat``) and ``../shared`` (SciFact). The LLM judge runs
against any OpenAI-compatible endpoint (``--judge-url``), or with ``--fake-judge`` against the tests' fake
server (tests/fake_openai.py) answering as a *simulated* judge whose mistakes are injected at known rates
(it misses 15% of the damaged rows, raises a false alarm on 3% of the clean ones, and 10% of its first answers
are not JSON): its row measures that the judge's verdicts reach the flags intact through parsing and retries
(the expected counts are printed beside), not how well any LLM judges.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
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
        return " ".join(words[:max(3, len(words) // 3)])
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


def eligible(kind: str, english: str, spanish: str) -> bool:
    if kind == "number":
        return any(m.group() in english for m in _NUMBER.finditer(spanish))
    if kind == "sentence_dropped":
        return len(_sentences(spanish)) >= 3
    return len(spanish.split()) >= 30


def build(work: Path, rows: int, seed: int) -> tuple[Path, Path, dict[str, str]]:
    """Source and damaged-translation BEIR folders (corpus only scored) and ``{doc id: damage}``."""
    from beirx.translate.backends import TRANSLATORS
    from beirx.translate.plan import translate_texts

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


def method_flags(report, methods: dict) -> dict[str, set[str]]:
    """Flagged IDs per method (its own reasons), per score-based flag, and all together."""
    entry = report.fields["corpus"]
    out = {}
    for name, info in report.methods.items():
        reasons = set(info.flags)
        if name == "roundtrip":  # two scores, two rules: shown apart
            for reason in sorted(reasons):
                out[f"roundtrip ({reason})"] = {i for i, r in entry.flagged.items() if reason in r}
            continue
        out[name] = {i for i, r in entry.flagged.items() if reasons & set(r)}
    out["all methods"] = set(entry.flagged)
    return out


def worst(report, score: str, k: int) -> list[str]:
    info = report.scores[score]
    values = [(v if info.higher_is_better else -v, i) for i, v in report.fields["corpus"].rows[score].items()
              if v is not None]
    return [i for _, i in sorted(values)[:k]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--e5", type=Path, **e5_default(), help="multilingual-e5-small folder (default $BEIRX_TEST_E5)")
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--judge-url", help="OpenAI-compatible endpoint for the LLM judge")
    parser.add_argument("--judge-model", default="judge")
    parser.add_argument("--fake-judge", action="store_true", help="a simulated judge on the tests' fake server")
    parser.add_argument("--keep", type=Path, help="keep the datasets and report in this folder")
    args = parser.parse_args()

    from beirx.translate.backends import TRANSLATORS
    from beirx.translate.quality.checks import Checks
    from beirx.translate.quality.embedding import EmbeddingSimilarity
    from beirx.translate.quality.roundtrip import RoundTrip
    from beirx.translate.quality.run import run_quality
    from beirx.data.dataset import BeirDataset

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
    for name, found in method_flags(report, {m.name: m for m in methods}).items():
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
