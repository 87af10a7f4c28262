"""Translation stage, laid out as its pipeline.

:mod:`.runner` turns a ``beirx translate`` request into one call of :mod:`.pipeline`, which runs the steps:

- :mod:`.planning`: records cut into segments or document units, deduplicated onto disk, estimated and capped;
- :mod:`.execution`: the batches claimed, translated by an executor (this process, Ray, the Batch API) and
  committed, optionally one shard of them;
- :mod:`.output`: the dataset written by streaming from the memory, with its manifest;
- :mod:`.quality`: how good the translation is (``beirx quality``; also run when a translation finishes).

Every step reads or writes the :mod:`.translation_memory`. The translators are :mod:`.backends`, by name; the
LLM ones are built on :mod:`.llm`, which the steps reach only through the
:class:`~beirx.translate.backends.base.Translator` interface.
"""
