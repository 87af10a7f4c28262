"""Scaling the translation out: Apertium on a SciFact slice in one process, as shards, and on Ray.

In one run, on the first ``--docs`` SciFact documents and their judged queries, with a fresh memory each:
single process; shards 1/N..N/N then ``--assemble`` run one after the other (overhead = their total wall
and CPU time against the single process, target < 10 %); the Ray executor with 1 and with 2 replicas on a
private local Ray instance (target: 2 replicas >= 1.7x one on a 2-core machine). Every output must equal
the single process's bytes. One Apertium pipeline already runs its ~6 stages in parallel (its CPU/wall is
printed as ``cores_used``), which caps what a second replica can add on 2 cores at 2 / cores_used; so the
same Ray comparison is repeated with a stand-in translator that uses exactly one core per replica (fixed
pure-Python work per segment), which shows what the executor itself scales to. CPU seconds include child processes (the Apertium pipelines) for the local
runs; Ray replicas are not children, so Ray runs report wall time only. The load average is printed: on a
shared machine the wall-clock ratios move with it. Last, an extrapolation to MS MARCO and all of BEIR-PL
from the figures measured here per source word (SciFact abstracts are ~210 words, MS MARCO passages ~56):
Apertium CPU time, translation-memory size and output size.

Run:  nice python benchmarks/translate_scale.py [--docs 1000] [--batch-size 200] [--shards 2]
      [--work /tmp/beirx-translate-scale]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FILES = ("corpus.jsonl", "queries.jsonl")
# Source words (title + text), from BEIR's corpus sizes and average document lengths (Thakur et al. 2021, Table 1).
WORDS = {"MS MARCO (8.8M passages)": 8_841_823 * 56.0, "BEIR-PL (13 datasets, ~30M passages)": 1.9e9}


def make_slice(scifact: Path, root: Path, docs: int) -> Path:
    from beirx.data import beir_io

    if (root / "corpus.jsonl").is_file():
        return root
    corpus = []
    for doc in beir_io.iter_corpus(scifact / "corpus.jsonl"):
        corpus.append(doc)
        if len(corpus) == docs:
            break
    ids = {d.id for d in corpus}
    rows = [line.split("\t") for line in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    rows = [r for r in rows if r[1] in ids]
    judged = {r[0] for r in rows}
    beir_io.write_corpus(root / "corpus.jsonl", corpus)
    beir_io.write_queries(root / "queries.jsonl", [q for q in beir_io.iter_queries(scifact / "queries.jsonl")
                                                   if q.id in judged])
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in rows))
    return root


ONE_CORE_ROUNDS = 3000  # sha256 rounds per segment: about 1.5 ms of one core


def one_core_translator(src: str, tgt: str):
    """A stand-in for a one-core MT model (upper-cases after fixed CPU work per segment); module-level so Ray
    ships it to the replicas."""
    import hashlib

    from beirx.translate.backends.base import Translator

    class OneCore(Translator):
        name = "one-core"
        max_batch_size = 1024
        keeps_placeholders = True

        def describe(self):
            return {"backend": "one-core", "model": f"sha256 x {ONE_CORE_ROUNDS}", "revision": "1"}

        def translate_batch(self, segments):
            out = []
            for segment in segments:
                digest = segment.encode()
                for _ in range(ONE_CORE_ROUNDS):
                    digest = hashlib.sha256(digest).digest()
                out.append(segment.upper())
            return out

    return OneCore(src, tgt)


def cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn) -> tuple[float, float]:
    wall, c = time.perf_counter(), cpu()
    fn()
    return round(time.perf_counter() - wall, 2), round(cpu() - c, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/beirx-translate-scale"))
    args = parser.parse_args()
    os.environ.setdefault("BEIRX_HOME", str(args.work / "beirx_home"))
    from beirx.data.dataset import BeirDataset
    from beirx.translate.backends.apertium import ApertiumTranslator
    from beirx.translate.execution.shards import Shard
    from beirx.translate.pipeline import translate_dataset, translate_shard
    from beirx.translate.translation_memory import TranslationMemory

    source = BeirDataset(make_slice(args.scifact, args.work / f"scifact{args.docs}", args.docs))
    translator = ApertiumTranslator("en", "es")
    runs = args.work / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    out: dict = {"docs": args.docs, "batch_size": args.batch_size, "load_before": os.getloadavg()}

    def single(name: str, executor=None, translator=translator) -> dict:
        folder = runs / name
        with TranslationMemory(folder / "tm.sqlite") as tm:
            holder = {}
            wall, c = timed(lambda: holder.update(m=translate_dataset(source, folder / "out", translator, tm,
                                                                       batch_size=args.batch_size, progress=False,
                                                                       executor=executor)))
        m = holder["m"]
        return {"wall_s": wall, "cpu_s": c, "cores_used": round(c / wall, 2), "segments": m.counts["segments_unique"],
                "batches": m.counts["batches"]}

    out["single"] = single("single")
    out["single_one_core"] = single("single1c", translator=one_core_translator("en", "es"))
    per_doc_cpu = out["single"]["cpu_s"] / args.docs

    def sharded() -> None:
        folder = runs / "shards"
        for i in range(1, args.shards + 1):
            shard = Shard(i, args.shards)
            with TranslationMemory(shard.memory_path(folder / "tm.sqlite")) as tm:
                translate_shard(source, translator, tm, shard, batch_size=args.batch_size, progress=False)
        with TranslationMemory(folder / "tm.sqlite") as tm:
            translate_dataset(source, folder / "out", translator, tm, batch_size=args.batch_size, progress=False,
                              assemble=args.shards)

    wall, c = timed(sharded)
    out["shards"] = {"count": args.shards, "wall_s": wall, "cpu_s": c,
                     "overhead_wall": round(wall / out["single"]["wall_s"] - 1, 3),
                     "overhead_cpu": round(c / out["single"]["cpu_s"] - 1, 3)}

    import functools

    import ray

    from beirx.translate.execution.ray_executor import RayExecutor

    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             logging_level="ERROR", log_to_driver=False)
    for workers in (1, 2):
        executor = RayExecutor(functools.partial(ApertiumTranslator, "en", "es"), workers=workers)
        executor.pids()  # replicas up before timing
        out[f"ray_{workers}"] = single(f"ray{workers}", executor)
        executor.close()
        executor = RayExecutor(functools.partial(one_core_translator, "en", "es"), workers=workers)
        executor.pids()
        out[f"ray_{workers}_one_core"] = single(f"ray{workers}-1c", executor, one_core_translator("en", "es"))
        executor.close()
    ray.shutdown()
    out["ray_speedup_2_over_1"] = round(out["ray_1"]["wall_s"] / out["ray_2"]["wall_s"], 2)
    out["ray_ceiling_on_this_machine"] = round((os.cpu_count() or 1) / out["single"]["cores_used"], 2)
    out["ray_speedup_2_over_1_one_core"] = round(out["ray_1_one_core"]["wall_s"] / out["ray_2_one_core"]["wall_s"], 2)
    out["identical_bytes"] = {name: all((runs / name / "out" / f).read_bytes() == (runs / "single" / "out" / f)
                                        .read_bytes() for f in FILES) for name in ("shards", "ray1", "ray2")}
    out["identical_bytes"].update({name: all((runs / name / "out" / f).read_bytes() == (runs / "single1c" / "out" / f)
                                             .read_bytes() for f in FILES) for name in ("ray1-1c", "ray2-1c")})
    memory_bytes = (runs / "single" / "tm.sqlite").stat().st_size
    output_bytes = sum((runs / "single" / "out" / f).stat().st_size for f in FILES)
    words = sum(len(f"{d.title} {d.text}".split()) for d in source.iter_corpus())
    words += sum(len(q.text.split()) for q in source.queries.values())
    out["per_document"] = {"source_words": round(words / args.docs, 1), "cpu_s": round(per_doc_cpu, 5),
                           "memory_bytes": round(memory_bytes / args.docs), "output_bytes": round(output_bytes / args.docs)}
    out["extrapolation_apertium"] = {
        name: {"cpu_hours": round(n / words * out["single"]["cpu_s"] / 3600, 1),
               "translation_memory_gb": round(n / words * memory_bytes / 1e9, 1),
               "output_gb": round(n / words * output_bytes / 1e9, 1)} for name, n in WORDS.items()}
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
