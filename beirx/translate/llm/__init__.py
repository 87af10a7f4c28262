"""LLM translation (backends ``openai`` and ``hf-llm``): document units, prompts, output validation with
retries, fallback and flags, and OpenAI Batch mode. The client itself is the shared :mod:`beirx.models.llm`.

Modules: :mod:`.units` (what a unit is), :mod:`.prompts` (building requests from the versioned prompt file
``prompts.toml``), :mod:`.glossary`, :mod:`.validate` (every output checked before it is written),
:mod:`.translator` (the retry/fallback loop shared by both backends), :mod:`.outcome` (what happened to each
unit: in the translation memory, the manifest and ``translation_flags.jsonl``), :mod:`.estimate` (dry-run
token and cost estimates, ``--max-cost``), :mod:`.batch` (OpenAI Batch API).
"""
