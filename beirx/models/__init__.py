"""Models: the one place that knows how beirx finds, identifies, places and loads a model.

Every stage that runs a neural model (``translate``, ``evaluate``, ``publish``) goes through this shared
layer instead of another stage's internals, so a model folder gets the same revision in a results
document and a translation manifest, the device is chosen by one rule, and a model loaded once is shared.

Modules (nothing heavy is imported here: ``beirx --help`` stays instant):

- :mod:`~beirx.models.files`: a model argument (local folder or Hub id) -> files and ONE revision string;
- :mod:`~beirx.models.checks`: a model folder checked before any work: its kind (bi-encoder, cross-encoder,
  causal LM, seq2seq, masked LM), a readable config, whole weights, a tokenizer;
- :mod:`~beirx.models.device`: ``cuda`` when available, else ``cpu``; an explicit ``--device`` is validated;
- :mod:`~beirx.models.loaded`: the process-wide cache of loaded models;
- :mod:`~beirx.models.prompts`: a model's query/passage prompts;
- :mod:`~beirx.models.default_models`: the default model of each kind per language (``default_model``);
- :mod:`~beirx.models.relevance_tokens`: monoT5 relevance tokens per checkpoint and language;
- :mod:`~beirx.models.embeddings_cache`: memory-mapped embedding matrices on disk (dense retrieval and
  translation quality);
- :mod:`~beirx.models.splade`: SPLADE's sparse term weights from a masked-language model.
"""
