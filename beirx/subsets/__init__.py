"""Small benchmarks that rank like the big ones: pooled subsets (NanoBEIR-style) and their ranking check.

- :mod:`~beirx.subsets.query_sample`: which queries (seeded, optionally stratified by number of relevant documents);
- :mod:`~beirx.subsets.system_args`: pooling and checked systems named on the command line;
- :mod:`~beirx.subsets.pool`: the pooled runs and the pool depth that fits the corpus budget;
- :mod:`~beirx.subsets.cut`: the corpus (judged + pooled + seeded random fill), written by streaming;
- :mod:`~beirx.subsets.check`: Kendall's tau between the system orderings on the full set and the subset.

A stage after ``evaluate`` (it runs retrievers to pool and to check); it never imports translate, publish or
report, and those never import it.
"""
