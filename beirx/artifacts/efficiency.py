"""The efficiency block of a results document and how its figures are measured (BEIR, Thakur et al. 2021,
Table 3).

A first-stage retriever records its stage timings, the batch search throughput (queries/s), the per-query
latency (p50/p95 over a seeded sample of queries searched one at a time with the index already loaded), the
index or embedding size on disk, the process's peak resident memory so far and the device. A reranker
records its reranking time as its search time. A fusion costs all of its inputs: their index and search
times and index sizes add up, plus the fusing; latency percentiles do not add, so a fusion has none.
"""

from __future__ import annotations

import random
import resource
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from beirx.artifacts.base import optional
from beirx.progress import silenced


@dataclass(kw_only=True)
class Efficiency:
    """Cost figures of the run; every one is optional (null when not measured)."""

    index_seconds: float | None = optional("wall-clock seconds to build or load the index")
    encode_seconds: float | None = optional("seconds spent encoding the corpus (dense retrievers)")
    search_seconds: float | None = optional("wall-clock seconds to search all queries")
    num_queries: int | None = optional("queries searched")
    queries_per_second: float | None = optional("num_queries / search_seconds")
    latency_ms_p50: float | None = optional("median per-query latency, milliseconds")
    latency_ms_p95: float | None = optional("95th percentile per-query latency, milliseconds")
    latency_sample: int | None = optional("queries timed one at a time for the latency percentiles")
    index_bytes: int | None = optional("size of the index on disk")
    peak_rss_bytes: int | None = optional("peak resident memory of the process")
    device: str | None = optional("cpu, cuda, cuda:1 ...")

    @classmethod
    def from_timings(cls, timings: dict[str, float | None], num_queries: int | None) -> "Efficiency":
        """What the named timing sections (``index``, ``encode_corpus``, ``search``) say about cost."""
        search = timings.get("search")
        return cls(index_seconds=timings.get("index"), encode_seconds=timings.get("encode_corpus"),
                   search_seconds=search, num_queries=num_queries, queries_per_second=_rate(num_queries, search))

    @classmethod
    def of_retrieval(cls, timings: dict[str, float], num_queries: int, latencies_ms: list[float],
                     index: Path | None, device: str | None) -> "Efficiency":
        """A first stage: its timings, the latency sample (:func:`latencies_ms`), the size of ``index`` on
        disk, the peak memory now and ``device``."""
        return replace(cls.from_timings(timings, num_queries),
                       latency_ms_p50=round(_percentile(latencies_ms, 50), 3) if latencies_ms else None,
                       latency_ms_p95=round(_percentile(latencies_ms, 95), 3) if latencies_ms else None,
                       latency_sample=len(latencies_ms), index_bytes=folder_bytes(index),
                       peak_rss_bytes=peak_rss_bytes(), device=device)

    @classmethod
    def of_rerank(cls, seconds: float | None, num_queries: int, device: str | None) -> "Efficiency":
        """A reranker: reranking every query's candidates is its search."""
        return replace(cls.from_timings({"search": seconds}, num_queries), peak_rss_bytes=peak_rss_bytes(),
                       device=device)

    @classmethod
    def of_fusion(cls, parts: list["Efficiency | None"], fuse_seconds: float) -> "Efficiency | None":
        """The inputs' figures added up, plus fusing; None when an input has none (a run file)."""
        if any(p is None for p in parts):
            return None

        def total(name: str):  # not rounded: a rounded total could come out below the sum of its parts
            values = [getattr(p, name) for p in parts]
            return None if any(v is None for v in values) else sum(values)

        search = total("search_seconds")
        search = None if search is None else search + fuse_seconds
        queries = parts[0].num_queries
        devices = sorted({str(p.device) for p in parts if p.device})
        return cls(index_seconds=total("index_seconds"), search_seconds=search, num_queries=queries,
                   queries_per_second=_rate(queries, search), index_bytes=total("index_bytes"),
                   peak_rss_bytes=peak_rss_bytes(), device="+".join(devices) or None)


def _rate(num_queries: int | None, seconds: float | None) -> float | None:
    return round(num_queries / seconds, 3) if num_queries and seconds else None


def _percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values), q))


def latencies_ms(search_one: Callable[[str], object], ids: Iterable[str], sample: int, seed: int = 0) -> list[float]:
    """Milliseconds taken by ``search_one(id)`` for each of a seeded sample of at most ``sample`` ids (drawn
    from the sorted ids, so it does not depend on their order), with progress bars silenced."""
    ids = sorted(ids)
    if sample <= 0 or not ids:
        return []
    timed = []
    with silenced():
        for one in random.Random(seed).sample(ids, min(sample, len(ids))):
            start = time.perf_counter()
            search_one(one)
            timed.append((time.perf_counter() - start) * 1000.0)
    return timed


def folder_bytes(path: Path | str | None) -> int | None:
    """The size on disk of a file, or of every file below a folder; None when there is nothing there."""
    if path is None or not Path(path).exists():
        return None
    path = Path(path)
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def peak_rss_bytes() -> int:
    """The process's peak resident set size so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)
