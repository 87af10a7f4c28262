"""Token counts before sending: the model's own tokenizer when it is a local folder, else an approximation.

Hosted models' tokenizers are not available offline, and servers (vLLM, llama.cpp) may serve a model by an
alias. The approximation is OpenAI's rule of thumb, about four characters per token of English text
("What are tokens and how to count them?", OpenAI Help Center); it is stated wherever it is used (dry-run
estimates name their ``method``), and the usage servers report is what the manifest counts.
"""

from __future__ import annotations

import math
from pathlib import Path

CHARS_PER_TOKEN = 4.0


def approx_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: OpenAI's rule of thumb for English (other languages run higher)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class TokenCounter:
    """Counts tokens with the tokenizer in ``model`` when that is a local folder holding one, else
    :func:`approx_tokens`. ``method`` says which (recorded next to every estimate)."""

    def __init__(self, model: str | None = None):
        self._tokenizer = None
        self.method = f"approximation: characters / {CHARS_PER_TOKEN:g}"
        folder = Path(model).expanduser() if model else None
        if folder is not None and folder.is_dir() and any(
                (folder / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
            from beirx.errors import require

            transformers = require("transformers", "neural", "counting tokens with a model's tokenizer")
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
            self.method = f"tokenizer of {folder.name}"

    def count(self, text: str) -> int:
        if self._tokenizer is None:
            return approx_tokens(text)
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])
