"""Pointwise LLM reranking: a causal language model reads one (query, document) prompt and the relevance score
is the probability that its next token is "yes" (Nogueira et al.'s monoT5 idea carried to decoder LLMs, as in
Liang et al. 2022, HELM, and Zhuang et al. 2023, "Beyond Yes and No").

- Prompt: ``llm_prompts.toml`` ``[pointwise]``, naming the corpus language (``{language}``), or the
  language's own template and answer words where there is one (Polish: ``tak``); the model's chat template
  wraps it when it has one (instruction-tuned models), with the generation prompt.
- Score (``--llm-score``, recorded as ``score``): ``yes`` (default) is ``log P(yes)`` = log of the summed
  next-token probabilities (softmax over the whole vocabulary) of the answer words' first tokens, each written
  with and without a leading space (``yes``, ``Yes``, `` yes``, `` Yes``). ``yes-no`` normalises over the label
  tokens only, as monoT5 does (Nogueira et al., 2020, "Document Ranking with a Pretrained Sequence-to-Sequence
  Model": softmax over the "true"/"false" logits): ``log P(yes) - log(P(yes) + P(no))``, the log-softmax over
  the two labels, so probability mass on other tokens (a model that would rather start its answer with
  "The") does not move the score. The logarithm ranks exactly as the probability does and does not saturate
  to 1.0 in float32.
- Truncation: the *document* is cut (in tokens) so the whole prompt fits ``max_length``; counts are logged.
- Batched: length-sorted, left-padded batches; one forward pass per batch computing only the last position's
  logits (:mod:`beirx.models.causal_lm`). Scores are cached per pair like every reranker's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from beirx.argtypes import positive_int
from beirx.errors import BeirxError
from beirx.evaluate.rerankers.base import Pair, PairwiseReranker
from beirx.evaluate.rerankers.inference import length_batches, torch_module
from beirx.evaluate.rerankers.llm_prompts import add_prompt_argument, load_prompts
from beirx.language_packs import get_pack
from beirx.models.causal_lm import causal_lm, next_token_logprobs, prompt_text
from beirx.models.device import choose_device
from beirx.models.files import resolve_model
from beirx.models.llm import Request

log = logging.getLogger(__name__)

SCORES = {"yes": "log P(yes): log of the summed next-token probabilities of the yes tokens",
          "yes-no": "log P(yes) - log(P(yes) + P(no)): log-softmax over the yes and no tokens (monoT5-style)"}


class LLMPointwiseReranker(PairwiseReranker):
    name = "llm-pointwise"
    shared_flags = (add_prompt_argument,)

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--llm-max-length", type=positive_int, default=None,
                           help=f"llm-pointwise: tokens per prompt; longer documents are cut (default "
                                f"{cls.default('max_length')})")
        group.add_argument("--llm-score", choices=tuple(SCORES), default=None,
                           help=f"llm-pointwise: log P(yes) over the vocabulary (yes), or normalised over the yes and "
                                f"no tokens (yes-no, as monoT5); default {cls.default('score')}")

    @classmethod
    def params_from_args(cls, args) -> dict[str, Any]:
        params = super().params_from_args(args)
        if getattr(args, "llm_prompt_file", None):
            params["prompt_file"] = str(args.llm_prompt_file)
        for param, flag in (("max_length", "llm_max_length"), ("score", "llm_score")):
            value = getattr(args, flag, None)
            if value is not None and value != cls.default(param):
                params[param] = value
        return params

    def __init__(self, model: str, *, lang: str = "en", batch_size: int = 8, max_length: int = 1024,
                 device: str | None = None, prompt_file: str | None = None, revision: str | None = None,
                 sort_by_length: bool = True, show_progress: bool = True, use_cache: bool = True,
                 score: str = "yes"):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        self.files = resolve_model(model, revision)
        self.device = torch_module().device(choose_device(device))
        self.tokenizer, self.model = causal_lm(self.files, str(self.device))
        self.batch_size, self.max_length, self.sort_by_length = int(batch_size), int(max_length), sort_by_length
        self.prompts = load_prompts(prompt_file)
        self.language = get_pack(lang)
        own = self.prompts.get("pointwise", "languages", self.language.code, default=None)
        self.section = ("pointwise", "languages", self.language.code) if own else ("pointwise",)
        self.yes_words = list(self.prompts.get(*self.section, "yes"))
        self.yes_ids = self._first_token_ids(self.yes_words)
        if score not in SCORES:
            raise BeirxError(f"--llm-score must be one of {', '.join(SCORES)}, got {score!r}")
        self.score_kind = score
        self.no_words = list(self.prompts.get(*self.section, "no")) if score == "yes-no" else []
        self.no_ids = self._first_token_ids(self.no_words) if self.no_words else []
        shared = set(self.yes_ids) & set(self.no_ids)
        if shared:
            raise BeirxError(f"the yes words {self.yes_words} and the no words {self.no_words} share the first "
                             f"token(s) {sorted(shared)} in {self.files.name}'s vocabulary: --llm-score yes-no "
                             "cannot tell them apart")
        self.chat = bool(getattr(self.tokenizer, "chat_template", None))

    def _first_token_ids(self, words: list[str]) -> list[int]:
        ids = set()
        for word in words:
            for variant in (word, " " + word):
                pieces = self.tokenizer(variant, add_special_tokens=False)["input_ids"]
                if pieces:
                    ids.add(pieces[0])
        if not ids:
            raise BeirxError(f"the answer words {words} have no tokens in {self.files.name}'s vocabulary")
        return sorted(ids)

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.name, "model": self.files.name, "revision": self.files.revision,
                **self.prompts.describe(), "prompt": ".".join(self.section), "language": self.language.code,
                "yes_words": self.yes_words, "yes_token_ids": self.yes_ids, "chat_template": self.chat,
                "score": self.score_kind, "score_formula": SCORES[self.score_kind],
                **({"no_words": self.no_words, "no_token_ids": self.no_ids} if self.no_words else {}),
                "max_length": self.max_length, "truncation": "document",
                "dtype": str(self.model.dtype).removeprefix("torch."), "batch_size": self.batch_size,
                "device": self.device.type}

    def render(self, query: str, document: str) -> str:
        """The text the model reads for one pair (chat-templated when the model has a template)."""
        filled = self.prompts.fill(*self.section, "template", query=query, document=document,
                                   language=self.language.name)
        return prompt_text(self.tokenizer, Request.chat([{"role": "user", "content": filled}]))

    def _length(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _fitted(self, query: str, document: str) -> str:
        """The prompt with the document cut (by tokens) so that it fits ``max_length``."""
        text = self.render(query, document)
        excess = self._length(text) + 1 - self.max_length  # + 1: a BOS the tokenizer may add
        if excess <= 0:
            return text
        self.truncated["document"] += 1
        ids = self.tokenizer(document, add_special_tokens=False)["input_ids"]
        keep = max(0, len(ids) - excess)
        while True:  # decoding and re-encoding can merge pieces differently: cut until it fits
            text = self.render(query, self.tokenizer.decode(ids[:keep], skip_special_tokens=True))
            if self._length(text) + 1 <= self.max_length or keep == 0:
                return text
            keep = max(0, keep - max(1, (self._length(text) + 1 - self.max_length)))

    def score_pairs(self, pairs: list[Pair], progress: Callable[[int], None]) -> list[float]:
        torch = torch_module()
        texts = [self._fitted(q.text, d.joined()) for q, d in pairs]
        lengths = [self._length(t) for t in texts]
        scores = [0.0] * len(pairs)
        for batch in length_batches(lengths, self.batch_size, self.sort_by_length):
            logprobs = next_token_logprobs(self.tokenizer, self.model, [texts[i] for i in batch], str(self.device))
            values = torch.logsumexp(logprobs[:, self.yes_ids], dim=-1)
            if self.no_ids:  # log-softmax over the two labels
                values = values - torch.logaddexp(values, torch.logsumexp(logprobs[:, self.no_ids], dim=-1))
            for i, value in zip(batch, values.tolist()):
                scores[i] = value
            progress(len(batch))
        return scores
