"""What the two LLM rerankers share: their prompts (``llm_prompts.toml`` beside this module, a user's
``--llm-prompt-file`` merged over it: :class:`beirx.models.llm.PromptFile`, version and SHA-256 recorded, part of
the cache key), the LLM connection's options (:mod:`beirx.models.llm.connection`, flags ``--llm-<option>``:
the LLM doing ``beirx eval``'s reranking), and where the LLM runs (a server with ``base_url`` or ``backend
openai``, else in this process; the same reranker code either way).

The rerankers name the prices ``price_input`` and ``price_output`` (their flags are the connection's
``--llm-price-in/-out``; ``--llm-price-input/-output`` stay accepted): a reranker's parameters are part of its
run and results file names, which must not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from beirx.evaluate.rerankers.base import common_options
from beirx.language_packs import get_pack
from beirx.models.llm import LLM, PromptFile
from beirx.models.llm.connection import ConnectionSettings, Role, backend_for, role_options
from beirx.options import Option

#: The LLM of ``beirx eval``'s rerankers.
RERANKING = Role("llm-", "llm-pointwise, llm-listwise",
                 aliases={"price_in": ("--llm-price-input",), "price_out": ("--llm-price-output",)},
                 names={"price_in": "price_input", "price_out": "price_output"})
DEVICE = common_options()[0]
PROMPT_FILE = Option("prompt_file", flag="--llm-prompt-file", metavar="PROMPT_FILE",
                     help="llm-pointwise, llm-listwise: TOML file overriding the LLM rerankers' prompts (only the keys "
                          "it changes; see beirx/evaluate/rerankers/llm_prompts.toml)")


def shared_options(role: Role = RERANKING) -> tuple[Option, ...]:
    """The options both LLM rerankers take (their flags declared once): the prompt file and the connection's."""
    return (DEVICE, PROMPT_FILE, *role_options(role))


def flag_options() -> tuple[Option, ...]:
    """The shared options as ``beirx eval`` shows them once for both rerankers (the timeout's default is each
    reranker's own: llm-listwise waits longer)."""
    return tuple(replace(o, default=None, help=o.help.replace("(no answer yet, no new token)", "(no answer yet, no "
                                                              "new token; default 120, llm-listwise 300)"))
                 if o.name == "timeout" else o for o in shared_options())


class LLMReranker:
    """The parts of a reranker that asks an :class:`beirx.models.llm.LLM` (mixed in before the reranker base)."""

    model_kind = "causal-lm"  # in this process (model_is_local); a server's model is not a folder
    OPTIONS: ClassVar[tuple[Option, ...]] = shared_options()
    #: Options several rerankers share: ``beirx eval`` adds their flags once, before each reranker's own.
    SHARED_OPTIONS: ClassVar[tuple[Option, ...]] = flag_options()

    @classmethod
    def flag_params(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """The base's (values at their declared default left out, so a run's file names are those of the same
        command without them), the prompt file written as a path."""
        params = super().flag_params(given)
        if params.get("prompt_file"):
            params["prompt_file"] = str(Path(params["prompt_file"]))
        return params

    def _connect(self, model: str, llm: LLM | None, prompt_file: str | None, connection: ConnectionSettings,
                 **local: Any) -> None:
        """The prompts (``prompt_file`` over the packaged ones), the corpus language, and the LLM: ``llm`` when given,
        else the one ``connection`` describes (``local``: device, batch size and revision of a model in process)."""
        self.prompts = PromptFile.load(__package__, "llm_prompts.toml", prompt_file)
        self.language = get_pack(self.lang)
        self.connection = connection
        self.llm = llm if llm is not None else connection.connect(model, what=f"--reranker {self.name}",
                                                                  flag="--reranker-model", **local)

    @property
    def device(self) -> str | None:
        """The device of a model in this process (None: a server)."""
        return getattr(self.llm, "device", None)

    @classmethod
    def model_is_local(cls, params: dict[str, Any]) -> bool:
        return backend_for(params.get("backend"), params.get("base_url"), cls.name) == "transformers"
