"""What the two LLM rerankers share: their prompts (``llm_prompts.toml`` beside this module, a user's
``--llm-prompt-file`` merged over it: :class:`beirx.models.llm.PromptFile`, version and SHA-256 recorded, part of
the cache key), the flags naming that file and the server, and where the LLM runs (:func:`beirx.models.llm.connect`:
a server with ``base_url``, else in this process; the same reranker code either way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beirx.language_packs import get_pack
from beirx.models.llm import LLM, PromptFile, backend_for, connect
from beirx.options import Option

#: The options of both LLM rerankers' connection (one flag each, ``--llm-`` before the option's name). The hook
#: for the LLM connection's own options record: a reranker's :attr:`~beirx.evaluate.rerankers.base.Reranker.OPTIONS`
#: include these, and the flags are generated from them.
LLM_OPTIONS: tuple[Option, ...] = (
    Option("prompt_file", flag="--llm-prompt-file",
           help="TOML file overriding the LLM rerankers' prompts (only the keys it changes; see "
                "beirx/evaluate/rerankers/llm_prompts.toml)"),
    Option("base_url", flag="--llm-base-url",
           help="an OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1); --reranker-model is its model name. "
                "Default: the model runs in this process (transformers)"),
)


class LLMReranker:
    """The parts of a reranker that asks an :class:`beirx.models.llm.LLM` (mixed in before the reranker base)."""

    model_kind = "causal-lm"  # in this process (model_is_local); a server's model is not a folder

    @classmethod
    def flag_params(cls, given) -> dict[str, Any]:
        """The prompt file (as a path, written as text) and the server, when given."""
        params = super().flag_params(given)
        for param in ("prompt_file", "base_url"):
            if not params.get(param):
                params.pop(param, None)
        if "prompt_file" in params:
            params["prompt_file"] = str(Path(params["prompt_file"]))
        return params

    def _connect(self, model: str, llm: LLM | None, prompt_file: str | None, **options: Any) -> None:
        """The prompts (``prompt_file`` over the packaged ones), the corpus language, and the LLM: ``llm`` when given,
        else :func:`beirx.models.llm.connect` (``options``: where and how it runs)."""
        self.prompts = PromptFile.load(__package__, "llm_prompts.toml", prompt_file)
        self.language = get_pack(self.lang)
        self.llm = llm if llm is not None else connect(model, what=f"--reranker {self.name}", flag="--reranker-model",
                                                       **options)

    @property
    def device(self) -> str | None:
        """The device of a model in this process (None: a server)."""
        return getattr(self.llm, "device", None)

    @classmethod
    def model_is_local(cls, params: dict[str, Any]) -> bool:
        return backend_for(params.get("backend"), params.get("base_url"), cls.name) == "transformers"
