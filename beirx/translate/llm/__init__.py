"""LLM translation, the task the ``openai`` and ``hf-llm`` backends share (the LLM itself is the shared
:mod:`beirx.models.llm`): the loop (:mod:`.translator`: prompt, validate, retry, fall back or flag), its
requests (:mod:`.translation_prompts`, ``prompts.toml``), the :mod:`.glossary` and the check of every answer
(:mod:`.validator`).

The pipeline never imports this package; it reaches it through the backends' :class:`Translator
<beirx.translate.backends.base.Translator>` interface. What the pipeline needs of LLM units lives with its step:
document units in planning, cost estimates in planning, the Batch API executor in execution, each unit's
outcome in output.
"""
