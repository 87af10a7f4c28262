"""monoT5 relevance tokens: which target word a seq2seq reranker generates for "relevant" / "not".

monoT5 (Nogueira et al., 2020, "Document Ranking with a Pretrained Sequence-to-Sequence Model")
scores a (query, document) pair as softmax over the logits of two target tokens at the first decoder
step; the tokens are whatever the checkpoint was fine-tuned to emit, so they depend on the training
recipe, not on the model architecture:

* castorini monoT5 (English MS MARCO): ``true`` / ``false``;
* unicamp-dl mT5 rerankers trained on mMARCO (Bonifacio et al., 2021, arXiv:2108.13897): ``yes`` / ``no``;
* clarin-knext plT5 rerankers of BEIR-PL (Wojtasik et al., 2023, arXiv:2305.19840): ``prawda`` / ``fałsz``.

``relevance_tokens`` looks the checkpoint up first (by a name fragment, so local copies named after
the Hub id match too), then falls back to the language's default. These are model knowledge, so they live
in :mod:`beirx.models` beside the default models (:mod:`beirx.models.default_models`).
"""

from __future__ import annotations

# (lowercase fragment of the checkpoint id or path, true token, false token); first match wins.
CHECKPOINT_TOKENS: tuple[tuple[str, str, str], ...] = (
    ("mmarco", "yes", "no"),  # unicamp-dl/mt5-base-mmarco-v2 and the other mMARCO mT5 rerankers
    ("plt5", "prawda", "fałsz"),  # clarin-knext/plt5-{base,large}-msmarco
    ("monot5", "true", "false"),  # castorini/monot5-*-msmarco*
)
# Language (ISO 639-1) -> tokens when the checkpoint is not recognised.
LANGUAGE_TOKENS: dict[str, tuple[str, str]] = {
    "en": ("true", "false"),
    "pl": ("prawda", "fałsz"),
}
MULTILINGUAL_TOKENS = ("yes", "no")  # any other language: the mMARCO mT5 convention


def relevance_tokens(model_name_or_path: str, lang: str) -> tuple[str, str]:
    """(true_token, false_token) for a monoT5-style checkpoint used on ``lang`` text."""
    name = str(model_name_or_path).lower()
    for fragment, true_token, false_token in CHECKPOINT_TOKENS:
        if fragment in name:
            return true_token, false_token
    from beirx.language_packs import get_pack  # any code form: "pl", "pol", "pol-Latn"

    return LANGUAGE_TOKENS.get(get_pack(lang).code, MULTILINGUAL_TOKENS)
