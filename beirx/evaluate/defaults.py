"""Every default of an evaluation, in one place (the flags, grid files, the runner and fusion read these).

Values and their sources: ``top_k`` 1000 as in BEIR and trec_eval runs; RRF's ``k`` 60 (Cormack, Clarke &
Büttcher, SIGIR 2009); reranking depth 100 (BEIR's reranking experiments, BEIR-PL Table 4); min-max
normalisation before score fusion (OpenSearch's normalization-processor default).
"""

from __future__ import annotations

TOP_K = 1000
RERANK_DEPTH = 100
RRF_K = 60
NORMALIZATION = "min_max"
LATENCY_SAMPLE = 100
"""Queries searched one at a time after the batch search, for per-query latency (p50/p95); 0 disables."""
OUTPUT = "results"
