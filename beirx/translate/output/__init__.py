"""Output, the last step of :mod:`beirx.translate.pipeline`: the translated dataset and what it records.

:mod:`.writer` renders each record from the translation memory and streams it to disk with the manifest;
:mod:`.outcome` is what happened to each LLM unit (retried, fallback, flagged), summed into the manifest and
listed in ``translation_flags.jsonl``.
"""
