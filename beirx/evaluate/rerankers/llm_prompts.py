"""The LLM rerankers' prompts: ``llm_prompts.toml`` beside this module, a user's ``--llm-prompt-file`` merged
over it (:class:`beirx.models.llm.PromptFile`: version and SHA-256 recorded, part of the cache key)."""

from __future__ import annotations

from pathlib import Path

from beirx.models.llm import PromptFile


def load_prompts(override: Path | str | None = None) -> PromptFile:
    return PromptFile.load(__package__, "llm_prompts.toml", override)


def add_prompt_argument(group) -> None:
    """``--llm-prompt-file``, one flag for both LLM rerankers (their ``shared_flags``: declared once)."""
    group.add_argument("--llm-prompt-file", type=Path,
                       help="llm-pointwise, llm-listwise: TOML file overriding the LLM rerankers' prompts (only the "
                            "keys it changes; see beirx/evaluate/rerankers/llm_prompts.toml)")
