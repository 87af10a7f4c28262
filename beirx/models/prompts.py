"""Query and passage prompts of a sentence-embedding model.

Models trained with prefixes lose much of their quality without them (E5: ``"query: "`` and
``"passage: "``, Wang et al. 2022, "Text Embeddings by Weakly-Supervised Contrastive Pre-training"). They
come from the model's ``config_sentence_transformers.json`` ``prompts`` (``query``;
``document``/``passage``/``corpus`` for documents, as sentence-transformers' ``encode_query``/
``encode_document`` choose them, a non-empty one first), else from :data:`KNOWN_PROMPTS` for E5 checkpoints
published without that file, else none. Dense retrieval, the translation-quality encoder and the MTEB wrapper all use this, so a
model is prompted the same way everywhere.
"""

from __future__ import annotations

import re

from beirx.models.files import ModelFiles

# Checkpoints trained with prefixes but often published without a prompts config (Wang et al. 2022).
KNOWN_PROMPTS = (
    (re.compile(r"(^|/)(multilingual-)?e5-(small|base|large)(-v2)?$", re.IGNORECASE),
     {"query": "query: ", "passage": "passage: "}),
)


def model_prompts(files: ModelFiles) -> dict[str, str]:
    """The ``query``/``passage`` prompts the model's own files (or :data:`KNOWN_PROMPTS`) define."""
    prompts = files.read_json("config_sentence_transformers.json").get("prompts") or {}
    found: dict[str, str] = {}
    if "query" in prompts:
        found["query"] = prompts["query"]
    # sentence-transformers >= 6 saves an empty "document" prompt beside a model's real "passage" one
    for name in sorted(("document", "passage", "corpus"), key=lambda n: not prompts.get(n)):
        if name in prompts:
            found["passage"] = prompts[name]
            break
    if not found:
        for pattern, known in KNOWN_PROMPTS:
            if pattern.search(files.name.rstrip("/")):
                return dict(known)
    return found
