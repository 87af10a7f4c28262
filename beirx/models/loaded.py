"""The process-wide cache of loaded models.

Loading a transformer costs seconds and hundreds of MB; a grid (or a quality check after a translation)
uses the same weights for many datasets and systems. Every loader goes through :func:`cached`, keyed by
what makes two loaded objects interchangeable (kind, folder, device, precision), so one process holds one
copy of each model, and tests can :func:`clear` it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

from beirx.errors import require

T = TypeVar("T")
_LOADED: dict[Hashable, Any] = {}


def cached(key: Hashable, load: Callable[[], T]) -> T:
    """The object loaded under ``key``, calling ``load()`` only the first time."""
    if key not in _LOADED:
        _LOADED[key] = load()
    return _LOADED[key]


def clear() -> None:
    """Forget every loaded model (their memory is freed once nothing else refers to them)."""
    _LOADED.clear()


def sentence_transformer(folder: Path | str, device: str, half: bool = False, feature: str = "dense retrieval"):
    """A ``SentenceTransformer`` from a local ``folder`` on ``device`` in eval mode (fp16 weights with ``half``).

    Callers set ``max_seq_length`` before each use: the instance is shared by everyone asking for the same
    (folder, device, precision).
    """
    def load():
        st = require("sentence_transformers", "neural", feature)
        model = st.SentenceTransformer(str(folder), device=device)
        if half:
            model.half()
        return model.eval()

    return cached(("sentence-transformers", str(folder), device, half), load)


def embedding_dimension(model) -> int:
    """The output dimension of a loaded ``SentenceTransformer`` (the method was renamed in version 6)."""
    return (getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)()
