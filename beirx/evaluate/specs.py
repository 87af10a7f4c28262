"""What can be evaluated: a retriever, a run file, a fusion of systems, or a reranker on top of a system.

- :class:`SystemSpec`: a registered first-stage retriever (``bm25``, ``dense`` ...) and its parameters;
- :class:`RunFileSpec`: a TREC run file used as a first stage;
- :class:`FusionSpec`: two or more systems fused (:mod:`beirx.evaluate.fusion`);
- :class:`RerankSpec`: a registered reranker applied to another system's top ``depth`` documents.

Each has a ``tag()`` (file-name safe, part of run and results file names and the TREC tag column; unchanged
from earlier versions so the same command writes the same files) and a ``label()`` (the short human name
reports show: the user's ``name``, else e.g. ``bm25 fields=flat``, ``dense e5-small``, ``rrf(bm25+dense)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from beirx.evaluate import defaults, fusion
from beirx.models.default_models import ModelNeed, default_model, model_or_default
from beirx.paths import safe_tag
from beirx.redact import redact_url

def _param_tag(params: dict[str, Any]) -> list[str]:
    """``key_value`` parts of a tag; URLs lose their credentials first (tags become file names and TREC tags)."""
    return [f"{k}_{redact_url(v) if isinstance(v, str) else v}" for k, v in sorted(params.items()) if v is not None]


def _short(value: Any) -> str:
    """A model path or Hub id shortened to its last part (``intfloat/multilingual-e5-small`` -> the name)."""
    text = str(value)
    return Path(text.rstrip("/")).name if "/" in text else text


@dataclass
class SystemSpec:
    """A retrieval system: a registered retriever name and its parameters (``name`` labels files)."""

    retriever: str
    params: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    kind = "retriever"

    def tag(self) -> str:
        """A file-name-safe label, e.g. ``bm25-b_0.75-fields_multifield-k1_1.2``."""
        if self.name:
            return safe_tag(self.name)
        parts = [self.retriever] + _param_tag(self.params)
        return re.sub(r"[^A-Za-z0-9._=-]+", "_", "-".join(parts))

    def label(self) -> str:
        if self.name:
            return self.name
        model = self.params.get("model")
        shown = [_short(model)] if model else []
        shown += [f"{k}={v}" for k, v in sorted(self.params.items())
                  if k in ("fields", "combine", "length_norm", "search", "analysis") and v is not None]
        return " ".join([self.retriever] + shown)


@dataclass
class RunFileSpec:
    """A first stage read from a TREC run file (e.g. produced by another toolkit)."""

    path: Path
    name: str | None = None
    kind = "run_file"

    def tag(self) -> str:
        return safe_tag(self.name or f"run-{Path(self.path).stem}")

    def label(self) -> str:
        return self.name or f"run {Path(self.path).name}"


@dataclass
class FusionSpec:
    """Two or more systems fused with one of :data:`beirx.evaluate.fusion.FUSIONS`."""

    inputs: list["System"]
    method: str = "rrf"
    normalization: str = defaults.NORMALIZATION
    weights: list[float] | None = None
    rrf_k: int = defaults.RRF_K
    name: str | None = None
    kind = "fusion"

    def __post_init__(self) -> None:
        fusion.check(self.method, self.normalization, self.weights, len(self.inputs))

    def tag(self) -> str:
        if self.name:
            return safe_tag(self.name)
        head = self.method if self.method == "rrf" else f"{self.method}-{self.normalization}"
        if self.weights:
            head += "-w" + "_".join(f"{w:g}" for w in self.weights)
        return safe_tag(f"{head}-" + "+".join(s.tag() for s in self.inputs))

    def label(self) -> str:
        if self.name:
            return self.name
        head = self.method if self.method == "rrf" else f"{self.method}/{self.normalization}"
        return f"{head}(" + " + ".join(s.label() for s in self.inputs) + ")"


@dataclass
class RerankSpec:
    """A registered reranker rescoring the top ``depth`` documents of ``first_stage``; with ``interpolation``
    (a weight in (0, 1]) the final score is ``w * reranker + (1 - w) * first stage``, both min-max normalised
    per query over the reranked documents."""

    first_stage: "System"
    reranker: str
    params: dict[str, Any] = field(default_factory=dict)
    depth: int = defaults.RERANK_DEPTH
    name: str | None = None
    interpolation: float | None = None
    kind = "rerank"

    def tag(self) -> str:
        if self.name:
            return safe_tag(self.name)
        parts = [self.first_stage.tag(), f"rerank_{self.reranker}"] + _param_tag(self.params) + [f"depth_{self.depth}"]
        if self.interpolation is not None:
            parts.append(f"interpolation_{self.interpolation:g}")
        return safe_tag("-".join(parts))

    def label(self) -> str:
        if self.name:
            return self.name
        model = self.params.get("model")
        label = f"{self.first_stage.label()} >> {self.reranker}" + (f" {_short(model)}" if model else "")
        return label + (f" (w {self.interpolation:g})" if self.interpolation is not None else "")

    def model(self, lang: str) -> str:
        """The reranker's model: given, else the language's default; an error when there is neither."""
        return model_or_default(self.reranker, self.params.get("model"), lang, f"reranker {self.reranker!r}",
                                "--reranker-model")


System = Union[SystemSpec, RunFileSpec, FusionSpec, RerankSpec]


def models_needed(systems: Iterable[System], lang: str) -> set[ModelNeed]:
    """Every model ``systems`` load for ``lang`` (dense and sparse retrievers' and rerankers', given or the
    language's default) with the kind each must be, for :func:`~beirx.models.default_models.check_available`."""
    from beirx.evaluate.rerankers import RERANKERS
    from beirx.evaluate.retrievers import RETRIEVERS

    wanted = set()
    for system in systems:
        if isinstance(system, RerankSpec):
            reranker = RERANKERS.get(system.reranker)
            if reranker.model_is_local(system.params):  # not a server's model name
                wanted.add(ModelNeed(system.model(lang), system.params.get("revision"), reranker.model_kind,
                                     "--reranker-model", f"--reranker {system.reranker}"))
        elif isinstance(system, SystemSpec):
            model = system.params.get("model") or default_model(system.retriever, lang)
            if model:
                wanted.add(ModelNeed(str(model), system.params.get("revision"),
                                     RETRIEVERS.get(system.retriever).model_kind, "--model",
                                     f"--retriever {system.retriever}"))
    return wanted
