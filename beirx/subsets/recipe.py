"""The default recipe of ``beirx subset`` and of a suite's ``[subset]``, chosen from the SciFact measurement in
docs/subsets.md (``benchmarks/subset_ranking.py``): the variance of a subset's system ranking comes from its
queries, the cost of translating and checking it from its documents (SciFact's 300 test claims are ~1% of its
characters). So the recipe keeps every judged query up to a cap and cuts the documents instead: the judged
documents, a pool of the top documents of a lexical and a dense system at the depth that fits the budget, and
a seeded random fill up to it. The cap is the size of MTEB's HardNegatives tasks (up to 1,000 queries).
"""

from __future__ import annotations

QUERY_CAP = 1000
"""Without ``--queries``: every judged query with a relevant document and a text, up to this many."""
MAX_DOCS = 1500
"""Without ``--max-docs``: the corpus budget (judged + pooled + random documents)."""
POOL = ["bm25:fields=flat", "dense:intfloat/multilingual-e5-small"]
"""Without ``--pool``: the pooling systems, a lexical and a dense one. Measured on SciFact (300 queries, 1,500
documents, 13 systems, three seeds), pooling from BM25 alone gave Kendall's tau 0.427 ± 0.015 and from BM25 +
e5-small 0.812 ± 0.030 (paired bootstrap interval [0.547, 0.932]): a dense system checked on a BM25-only pool is
flattered by its missing hard negatives. Pooling also from all-MiniLM-L6-v2 (one of the systems checked) gave
0.957 ± 0.015 at 1,000 documents (paired [0.544, 0.932]: no better lower bound), but that encoder is
English-only and the default must serve every language offline, so it is a documented command line, not the
default (docs/subsets.md)."""
DEPTH = 100
"""Without ``--depth``: the pool depth asked for (it shrinks, the same for every query and system, to fit)."""
THRESHOLD = 0.9
"""Without ``--tau-threshold``: the ranking check warns when the subset's Kendall's tau is below this."""
