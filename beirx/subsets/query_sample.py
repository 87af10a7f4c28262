"""Which queries a subset keeps: a seeded sample of the judged queries, optionally stratified.

Candidates are the queries of the split with at least one relevant judgement (the only ones a metric
averages over) and a text, in the qrels file's order. Without strata the sample is
``random.Random(seed).sample``. With ``stratify`` the candidates are grouped by their number of relevant
documents and each group gets a share of the sample proportional to its size (proportional allocation,
Cochran, *Sampling Techniques*, 3rd ed. 1977, §5.5), rounded by largest remainder so the shares add up to
the sample size; each group is then sampled with its own seeded generator. Either way the same seed gives
the same queries, and the kept queries are returned in the candidates' order.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

from beirx.data.records import Qrels

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QuerySample:
    candidates: int
    kept: list[str]
    """In the candidates' (qrels file) order."""
    strata: dict[str, int]
    """Kept queries per number of relevant documents (a string key: JSON-ready)."""


def relevant_count(judgements: dict[str, int]) -> int:
    return sum(1 for rel in judgements.values() if rel > 0)


def proportional_allocation(sizes: dict[int, int], n: int) -> dict[int, int]:
    """``n`` split over strata in proportion to ``sizes`` by largest remainder (ties: the smaller stratum key).

    Never gives a stratum more than it holds; ``n`` at most the total.
    """
    total = sum(sizes.values())
    exact = {key: n * size / total for key, size in sizes.items()}
    shares = {key: int(value) for key, value in exact.items()}
    left = n - sum(shares.values())
    for key in sorted(sizes, key=lambda k: (-(exact[k] - shares[k]), k)):
        if left == 0:
            break
        if shares[key] < sizes[key]:
            shares[key] += 1
            left -= 1
    return shares


def sample_queries(qrels: Qrels, have_text: set[str], n: int, seed: int, stratify: bool = False,
                   cap: bool = False) -> QuerySample:
    """The kept queries (see the module doc); ``have_text``: the judged query IDs with a text. With ``cap``,
    ``n`` is an upper bound (every candidate when there are fewer, silently)."""
    candidates = [qid for qid, docs in qrels.items() if qid in have_text and relevant_count(docs) > 0]
    if n >= len(candidates):
        if n > len(candidates) and not cap:
            log.warning("asked for %d queries, but only %d judged queries have a relevant document and a text: "
                        "keeping them all", n, len(candidates))
        kept = set(candidates)
    elif not stratify:
        kept = set(random.Random(f"{seed}:queries").sample(candidates, n))
    else:
        strata: dict[int, list[str]] = {}
        for qid in candidates:
            strata.setdefault(relevant_count(qrels[qid]), []).append(qid)
        shares = proportional_allocation({k: len(v) for k, v in strata.items()}, n)
        kept = set()
        for key in sorted(strata):
            kept.update(random.Random(f"{seed}:queries:{key}").sample(strata[key], shares[key]))
    ordered = [qid for qid in candidates if qid in kept]
    counts: dict[str, int] = {}
    for qid in ordered:
        key = str(relevant_count(qrels[qid]))
        counts[key] = counts.get(key, 0) + 1
    return QuerySample(len(candidates), ordered, dict(sorted(counts.items(), key=lambda kv: int(kv[0]))))
