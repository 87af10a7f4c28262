"""Pointwise LLM reranking: a causal language model reads one (query, document) prompt and the relevance score
is the probability that its next token is "yes" (Nogueira et al.'s monoT5 idea carried to decoder LLMs, as in
Liang et al. 2022, HELM, and Zhuang et al. 2023, "Beyond Yes and No").

- Prompt: ``llm_prompts.toml`` ``[pointwise]``, naming the corpus language (``{language}``), or the
  language's own template and answer words where there is one (Polish: ``tak``); a chat request, so the
  model's chat template wraps it (instruction-tuned models), with the generation prompt.
- Score (``--llm-score``, recorded as ``score``): ``yes`` (default) is ``log P(yes)`` = log of the summed
  next-token probabilities (softmax over the whole vocabulary) of the answer words' first tokens, each written
  with and without a leading space (``yes``, ``Yes``, `` yes``, `` Yes``). ``yes-no`` normalises over the label
  tokens only, as monoT5 does (Nogueira et al., 2020, "Document Ranking with a Pretrained Sequence-to-Sequence
  Model": softmax over the "true"/"false" logits): ``log P(yes) - log(P(yes) + P(no))``, the log-softmax over
  the two labels, so probability mass on other tokens (a model that would rather start its answer with
  "The") does not move the score. The logarithm ranks exactly as the probability does and does not saturate
  to 1.0 in float32.
- Where it runs (:mod:`.llm_common`): in this process, or on an OpenAI-compatible server (``--llm-base-url``),
  whose ``top_logprobs`` give the label probabilities (:meth:`beirx.models.llm.LLM.label_logprobs`).
- Truncation: the *document* is cut (in tokens) so the whole prompt fits ``max_length`` (:meth:`LLM.fit`);
  counts are logged. Pairs go in length-sorted batches; scores are cached per pair like every reranker's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from beirx.argtypes import positive_float, positive_int
from beirx.errors import BeirxError
from beirx.evaluate.rerankers.base import Pair, PairwiseReranker, common_options
from beirx.evaluate.rerankers.inference import length_batches
from beirx.evaluate.rerankers.llm_common import LLM_OPTIONS, LLMReranker
from beirx.models.llm import LLM, Request
from beirx.options import Option

SCORES = {"yes": "log P(yes): log of the summed next-token probabilities of the yes tokens",
          "yes-no": "log P(yes) - log(P(yes) + P(no)): log-softmax over the yes and no tokens (monoT5-style)"}


class LLMPointwiseReranker(LLMReranker, PairwiseReranker):
    name = "llm-pointwise"
    OPTIONS = (*common_options(batch_size=8, max_length=1024, max_length_flag="--llm-max-length"),
               Option("concurrency", positive_int, default=8, flag=""),
               Option("timeout", positive_float, default=120.0, flag=""),
               Option("score", choices=tuple(SCORES), default="yes", flag="--llm-score",
                      help="log P(yes) over the vocabulary (yes), or normalised over the yes and no tokens (yes-no, "
                           "as monoT5)"),
               *LLM_OPTIONS)

    def __init__(self, model: str, *, lang: str = "en", base_url: str | None = None, backend: str | None = None,
                 batch_size: int = 8, max_length: int = 1024, device: str | None = None, prompt_file: str | None = None,
                 revision: str | None = None, concurrency: int = 8, timeout: float = 120.0, sort_by_length: bool = True,
                 show_progress: bool = True, use_cache: bool = True, score: str = "yes", llm: LLM | None = None):
        super().__init__(lang=lang, show_progress=show_progress, use_cache=use_cache)
        if score not in SCORES:
            raise BeirxError(f"--llm-score must be one of {', '.join(SCORES)}, got {score!r}")
        self.score_kind = score
        self.batch_size, self.max_length, self.sort_by_length = int(batch_size), int(max_length), sort_by_length
        self._connect(model, llm, prompt_file, backend=backend, base_url=base_url, concurrency=concurrency,
                      timeout=timeout, device=device, batch_size=batch_size, revision=revision)
        own = self.prompts.get("pointwise", "languages", self.language.code, default=None)
        self.section = ("pointwise", "languages", self.language.code) if own else ("pointwise",)
        self.labels = {"yes": list(self.prompts.get(*self.section, "yes"))}
        if score == "yes-no":
            self.labels["no"] = list(self.prompts.get(*self.section, "no"))
        self.llm.label_logprobs([], self.labels)  # the labels checked (a local model loaded) before any work

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.name, **self.llm.describe(), **self.prompts.describe(),
                "prompt": ".".join(self.section), "language": self.language.code,
                **{f"{label}_words": words for label, words in self.labels.items()},
                "score": self.score_kind, "score_formula": SCORES[self.score_kind], "max_length": self.max_length,
                "truncation": "document"}

    def request(self, query: str, document: str) -> Request:
        """The chat request for one pair."""
        filled = self.prompts.fill(*self.section, "template", query=query, document=document,
                                   language=self.language.name)
        return Request.chat([{"role": "user", "content": filled}])

    def score_pairs(self, pairs: list[Pair], progress: Callable[[int], None]) -> list[float]:
        requests = []
        for query, doc in pairs:
            request, cut = self.llm.fit(lambda text, q=query.text: self.request(q, text), doc.joined(),
                                        self.max_length)
            if cut:
                self.truncated["document"] += 1
            requests.append(request)
        scores = [0.0] * len(pairs)
        try:
            for batch in length_batches([len(r.text) for r in requests], self.batch_size, self.sort_by_length):
                for i, label in zip(batch, self.llm.label_logprobs([requests[i] for i in batch], self.labels)):
                    yes = label["yes"]
                    scores[i] = yes - float(np.logaddexp(yes, label["no"])) if "no" in label else yes
                progress(len(batch))
        finally:
            self.llm.close()  # no loop thread or connection outlives the call (the next one starts them again)
        return scores

