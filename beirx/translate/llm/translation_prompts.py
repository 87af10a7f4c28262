"""Requests for translating one unit, built from the versioned prompt file (``prompts.toml``, overridable
with ``--prompt-file``; see :class:`beirx.models.llm.PromptFile`).

Chat (``--api chat``): a system prompt (the translator's rules, the unit's glossary entries, and on a retry
the reasons the last answer was rejected) and a user prompt per unit kind (a query is to be translated, never
answered). Plain completions (``--api completions``, for base models): a header, the few-shot pairs of the
target language, and ``Source: unit`` / ``Target:`` stopped at the end of the line, so a unit is one line.
Temperature 0 and a fixed seed, which servers that honour them make deterministic.
"""

from __future__ import annotations

import logging
from pathlib import Path

from beirx.errors import BeirxError
from beirx.models.llm import CHAT, COMPLETIONS, PromptFile, Request
from beirx.translate.llm.glossary import Glossary

log = logging.getLogger(__name__)

#: The templates of each API and the fields each is filled with besides the languages' (``{text}``: required).
TEMPLATES = {CHAT: {"system": ("glossary",), "strict": ("reasons",), "query": ("text",), "document": ("text",),
                    "glossary": ("terms",)},
             COMPLETIONS: {"header": ("glossary",), "example": ("source", "target"), "unit": ("text",),
                           "glossary": ("terms",)}}


class TranslationPrompts:
    def __init__(self, src: str, tgt: str, api: str = CHAT, prompt_file: Path | str | None = None,
                 glossary: Glossary | None = None, temperature: float = 0.0, seed: int | None = 0):
        from beirx.language_packs import get_pack

        if api not in TEMPLATES:
            raise BeirxError(f"unknown --api {api!r}; choose chat or completions")
        self.api, self.glossary, self.temperature, self.seed = api, glossary, temperature, seed
        self.file = PromptFile.load("beirx.translate.llm", "prompts.toml", prompt_file)
        self.fields = {"src": src, "tgt": tgt, "src_name": get_pack(src).name, "tgt_name": get_pack(tgt).name}
        for key, extra in TEMPLATES[api].items():  # a broken template fails here, before any request
            self.file.check((api, key), [*self.fields, *extra], "text" if "text" in extra else None)
        if api == COMPLETIONS:
            self.examples = self.file.get(COMPLETIONS, "examples", tgt, default=[])
            if not self.examples:
                log.warning("the prompt file has no few-shot examples for %s ([completions.examples.%s]); base "
                            "models are then prompted zero-shot", tgt, tgt)

    def request(self, kind: str, text: str, max_tokens: int, rejected: list[str] | None = None) -> Request:
        """The request translating unit ``text`` of ``kind`` (``rejected``: why the last answer was rejected)."""
        entries = self.glossary.relevant(text) if self.glossary else []  # the glossary lines of this unit's terms
        terms = "\n".join(f"- {term} => {translation or 'keep'}" for term, translation in entries)
        glossary = self.file.fill(self.api, "glossary", **self.fields, terms=terms) if entries else ""
        if self.api == COMPLETIONS:
            return self._completion(text, max_tokens, glossary, rejected)
        system = self.file.fill(CHAT, "system", **self.fields, glossary=glossary)
        if rejected:
            system += self.file.fill(CHAT, "strict", **self.fields, reasons=", ".join(rejected))
        user = self.file.fill(CHAT, kind, **self.fields, text=text)
        return Request.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                            max_tokens=max_tokens, temperature=self.temperature, seed=self.seed)

    def _completion(self, text: str, max_tokens: int, glossary: str, rejected: list[str] | None) -> Request:
        prompt = self.file.fill(COMPLETIONS, "header", **self.fields, glossary=glossary)
        # a retry shows one more example first: a base model takes no instructions, but a different context
        # gives it another chance at the same unit
        examples = self.examples if not rejected else self.examples[-1:] + self.examples
        for source, target in examples:
            prompt += self.file.fill(COMPLETIONS, "example", **self.fields, source=source, target=target)
        prompt += self.file.fill(COMPLETIONS, "unit", **self.fields, text=text)
        return Request.completion(prompt, max_tokens=max_tokens, stop=("\n",), temperature=self.temperature,
                                  seed=self.seed)
