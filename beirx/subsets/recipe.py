"""The default recipe of ``beirx subset`` and of a suite's ``[subset]``, chosen from the SciFact measurements in
docs/subsets.md (``benchmarks/subset_ranking.py``, ``benchmarks/subset_reusability.py``): the variance of a
subset's system ranking comes from its queries, the cost of translating and checking it from its documents
(SciFact's 300 test claims are ~1% of its characters). So the recipe keeps every judged query up to a cap and
cuts the documents instead: the judged documents and a seeded uniform random sample of the others up to the
budget, with no pool. The cap is the size of MTEB's HardNegatives tasks (up to 1,000 queries).
"""

from __future__ import annotations

QUERY_CAP = 1000
"""Without ``--queries``: every judged query with a relevant document and a text, up to this many."""
MAX_DOCS = 1500
"""Without ``--max-docs``: the corpus budget (judged + pooled + random documents)."""
POOL: list[str] = []
"""Without ``--pool``: no pooling system. A subset is published for systems that do not exist yet, none of which
pooled, and a pool flatters every system that did not pool: its own non-relevant top documents are missing.
Measured on SciFact's test split (300 queries, 1,500 documents, 20 systems of 5 families, three seeds,
leave-one-family-out, ``benchmarks/subset_reusability.py``), a pool of BM25 flat + multilingual-e5-small (depth
4) gave each family left out of it +0.033 to +0.039 nDCG@10 over the systems that pooled (e5-small: 95%
interval +0.026 to +0.053), three times the subset's resolution (0.013); every pooled recipe tried (more
families, a shallower pool with a larger random fill, fewer queries pooled deeper) left +0.022 to +0.040 to the
families outside it. Without a pool the documents beyond the judged ones are the same uniform sample for every
system: each family's change against the others' was -0.010 to +0.006, intervals spanning 0, except the far
weakest system's (0.25 below the rest: +0.027, a smaller corpus lifting a weak system more; +0.068 under the
pool), at the same 29% of the characters, resolution 0.015, 91% of the discriminative power kept and no
significant reversal. A pool (``--pool``) still serves a subset for the systems that pooled; ``beirx subset
check`` then states the bias of the others."""
DEPTH = 100
"""Without ``--depth``: the pool depth asked for (it shrinks, the same for every query and system, to fit)."""
THRESHOLD = 0.9
"""Without ``--tau-threshold``: the ranking check warns when the subset's Kendall's tau is below this."""
