"""Training: fine-tune bi-encoders and cross-encoder rerankers on a BEIR split, and make synthetic queries.

BEIR-PL (Wojtasik et al., 2023) did not stop at evaluation: it trained Polish retrievers and rerankers on the
translated MS MARCO; BEIR (Thakur et al., 2021) ships bi-encoder training with hard negatives and GenQ. This
stage comes after ``evaluate`` in the data flow (hard negatives are mined with its BM25) and nothing imports
it. Modules, one job each:

- :mod:`~beirx.train.examples`: (query, positive) pairs from a split's qrels, with texts;
- :mod:`~beirx.train.negatives`: BM25 hard negatives with the language pack's analyzer, never a judged positive;
- :mod:`~beirx.train.options`: the training parameters shared by both trainers;
- :mod:`~beirx.train.checkpoints`: where checkpoints go, the last one to resume from, a run's identity;
- :mod:`~beirx.train.trainer_progress`: loss in log lines when no progress bar is shown;
- :mod:`~beirx.train.session`: what both trainers share (data, arguments, resume, save, card);
- :mod:`~beirx.train.selection`: the dev slice held out of the training queries, the base and each checkpoint
  evaluated on it, the best kept;
- :mod:`~beirx.train.bi_encoder`: sentence-transformers training with MultipleNegativesRankingLoss;
- :mod:`~beirx.train.cross_encoder`: CrossEncoder training with BinaryCrossEntropyLoss or a listwise
  softmax loss;
- :mod:`~beirx.train.card`: the model card (README.md) recording data, parameters and versions;
- :mod:`~beirx.train.genq`, :mod:`~beirx.train.genq_cache`, :mod:`~beirx.artifacts.generation`: synthetic
  queries (GenQ / doc2query) written as a BEIR training split, cached per document, with a manifest.

Heavy libraries (torch, transformers, sentence-transformers, datasets) are imported inside functions.
"""
