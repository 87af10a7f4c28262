"""Throughput of ``beirx translate --translator openai`` against a bare asyncio loop of the same client, on the
same fake server, in one run; and beirx's own CPU per 1,000 units.

The server is ``tests/fake_openai.py`` in its own process at a fixed latency per request (default 50 ms),
translating with Apertium answers computed before the clock starts (``--warm``), so every answer is real
Spanish and the server costs nothing per request. The units are SciFact's queries (one request each).

* beirx: ``translate_dataset`` with a fresh memory (prompts, validation with language ID, per-unit commits to
  the SQLite memory, the streaming executor) at ``--concurrency``; requests/s over its "translate" step, and the
  process CPU seconds (user + system, every thread) of the whole run per 1,000 units.
* client: the same requests through beirx's LLM layer alone (:class:`beirx.models.llm.LLMClient`, retries,
  breaker, metering, streaming), nothing validated or stored: its CPU per 1,000 units is the client's cost.
* bare: the same requests (beirx's prompts, built beforehand) sent with ``openai.AsyncOpenAI`` under an
  ``asyncio.Semaphore(concurrency)``; nothing validated or stored. Its CPU per 1,000 units is the yardstick
  of the client's (target: at most 1.2x).

Both are run ``--repeats`` times alternately; the best of each is compared (the machine may be shared).
Target: beirx >= 0.9x the bare loop's requests/s.

Run:  python benchmarks/translate_llm_throughput.py [--latency 0.05] [--concurrency 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def start_server(latency: float, queries: Path) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_openai.py"), "--translator", "apertium",
                               "--warm", str(queries), "--latency", str(latency)], stdout=subprocess.PIPE, text=True)
    return server, server.stdout.readline().strip()


def beirx_run(dataset, url: str, concurrency: int, work: Path) -> tuple[float, float, int]:
    """(requests/s of the translate step, CPU seconds of the whole run, units)."""
    from beirx.translate.backends.openai import OpenAITranslator
    from beirx.translate.pipeline import translate_dataset
    from beirx.translate.translation_memory import TranslationMemory

    translator = OpenAITranslator("en", "es", "fake-llm", base_url=url, concurrency=concurrency, retries=0)
    before = cpu_seconds()
    with tempfile.TemporaryDirectory(dir=work) as tmp, TranslationMemory(Path(tmp) / "tm.sqlite") as memory:
        manifest = translate_dataset(dataset, Path(tmp) / "out", translator, memory, fields=("queries",),
                                     progress=False)
    cpu = cpu_seconds() - before
    translator.close()
    requests = manifest.llm["this_run"]["requests"]
    return requests / manifest.timings["translate"], cpu, requests


def client_run(requests: list, url: str, concurrency: int) -> float:
    """CPU seconds of beirx's LLM client sending ``requests``."""
    from beirx.models.llm import Endpoint, LLMClient

    before = cpu_seconds()
    with LLMClient(Endpoint.resolve("fake-llm", url, concurrency=concurrency)) as llm:
        llm.call_many(requests)
    return cpu_seconds() - before


def bare_run(bodies: list[dict], url: str, concurrency: int) -> tuple[float, float]:
    """(requests/s, CPU seconds) of the bare loop."""
    import openai

    async def main() -> float:
        client = openai.AsyncOpenAI(base_url=url, api_key="no-key", max_retries=0)
        limit = asyncio.Semaphore(concurrency)

        async def one(body):
            async with limit:
                response = await client.chat.completions.create(**body)
                return response.choices[0].message.content

        start = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        elapsed = time.perf_counter() - start
        await client.close()
        return len(bodies) / elapsed

    before = cpu_seconds()
    rate = asyncio.run(main())
    return rate, cpu_seconds() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from beirx.data.dataset import BeirDataset
    from beirx.translate.llm.translation_prompts import TranslationPrompts
    from beirx.translate.planning.document_units import QUERY

    dataset = BeirDataset(args.dataset, name="scifact")
    texts = [json.loads(line)["text"] for line in (args.dataset / "queries.jsonl").open(encoding="utf-8")]
    prompts = TranslationPrompts("en", "es")
    requests = [prompts.request(QUERY, t, 64) for t in dict.fromkeys(texts)]
    bodies = [r.body("fake-llm") for r in requests]
    server, url = start_server(args.latency, args.dataset / "queries.jsonl")
    work = Path(tempfile.mkdtemp(prefix="beirx-bench-llm-"))
    try:
        bare_run(bodies[:50], url, args.concurrency)  # warm up both clients' imports and connections
        client_run(requests[:50], url, args.concurrency)
        results = {"beirx": [], "bare": [], "cpu_per_1000": [], "client_cpu": [], "bare_cpu": []}
        for _ in range(args.repeats):
            rate, cpu, units = beirx_run(dataset, url, args.concurrency, work)
            results["beirx"].append(rate)
            results["cpu_per_1000"].append(1000 * cpu / units)
            results["client_cpu"].append(1000 * client_run(requests, url, args.concurrency) / len(requests))
            rate, cpu = bare_run(bodies, url, args.concurrency)
            results["bare"].append(rate)
            results["bare_cpu"].append(1000 * cpu / len(bodies))
    finally:
        server.terminate()
        server.wait()
    best_beirx, best_bare = max(results["beirx"]), max(results["bare"])
    print(json.dumps({"units": len(bodies), "latency_s": args.latency, "concurrency": args.concurrency,
                      "ceiling_requests_per_s": round(args.concurrency / args.latency, 1),
                      "beirx_requests_per_s": [round(x, 1) for x in results["beirx"]],
                      "bare_requests_per_s": [round(x, 1) for x in results["bare"]],
                      "ratio_best": round(best_beirx / best_bare, 3),
                      "beirx_cpu_s_per_1000_units": [round(x, 2) for x in results["cpu_per_1000"]],
                      "client_cpu_s_per_1000_units": [round(x, 2) for x in results["client_cpu"]],
                      "bare_cpu_s_per_1000_units": [round(x, 2) for x in results["bare_cpu"]],
                      "client_cpu_ratio_best": round(min(results["client_cpu"]) / min(results["bare_cpu"]), 3)},
                     indent=2))


if __name__ == "__main__":
    main()
