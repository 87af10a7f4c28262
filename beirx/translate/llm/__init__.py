"""LLM translation (backends ``openai`` and ``hf-llm``; the LLM itself is the shared :mod:`beirx.models.llm`):
document units (:mod:`.units`), prompts (:mod:`.prompts`, ``prompts.toml``), :mod:`.glossary`, the check of
every output (:mod:`.validate`), the loop both backends share (:mod:`.translator`: retries, fallback, flags),
what happened to each unit (:mod:`.outcome`: the memory, the manifest, ``translation_flags.jsonl``), dry-run
estimates and ``--max-cost`` (:mod:`.estimate`), and the OpenAI Batch API (:mod:`.batch`).
"""
