"""Pooling families: systems that retrieve alike, so that leaving one family out of a pool stands for a system
that never pooled.

Zobel (SIGIR 1998) and Buckley, Dimmick, Soboroff & Voorhees ("Bias and the limits of pooling for large
collections", IRJ 2007) measure pool bias by removing one participating group's runs from the pool: a group's
runs share most of their documents, so removing one run alone measures little. A family here is such a group:

- **lexical**: every BM25 convention (``bm25`` with any fields, preset or parameters; ``elasticsearch``):
  the same term statistics decide them;
- **one per dense encoder**: a model, whatever runs it (torch, ONNX Runtime, int8) and however it is prompted,
  known by its revision (a local folder's content checksum, a Hub commit; a Hub snapshot is also known by its
  files' checksum, so ``dense:FOLDER`` and the same model given by its Hub id are one family);
- **one per learned sparse model** (``splade``), and one per reranker model;
- a **run file**: the system the ``beirx eval`` results document beside it describes (its ``run_file``
  names the file), else a family of its own.

A fusion or a reranker is made of families (its inputs', its first stage's and its reranker's): it counts as
pooled when all of them pooled.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.errors import BeirxError

log = logging.getLogger(__name__)

LEXICAL = "lexical"
_LEXICAL_RETRIEVERS = {"bm25", "elasticsearch"}
_KINDS = {"dense": "dense", "splade": "learned sparse"}


@dataclass(frozen=True)
class Family:
    """``key`` identifies the family (kind and model revision); ``label`` names it for people."""

    key: str
    label: str


class Families:
    """The families of system descriptions (a results document's ``system.description``, a pooling system's
    ``description``), with one identity per model across the ways of naming it."""

    def __init__(self):
        self._content: dict[tuple[str, str], str] = {}

    def of(self, description: dict[str, Any]) -> frozenset[Family]:
        """Every family a system is made of (one for a first-stage retriever)."""
        if "systems" in description:  # a fusion
            return frozenset().union(*(self.of(part) for part in description["systems"]))
        if "first_stage" in description:  # a reranker
            return self.of(description["first_stage"]) | {self._model_family(description.get("reranker") or {},
                                                                              "reranker")}
        retriever = description.get("retriever")
        if retriever in _LEXICAL_RETRIEVERS:
            return frozenset({Family(LEXICAL, LEXICAL)})
        if retriever == "run_file":
            described = described_run_file(description)
            if described is not None:
                return self.of(described)
            name = Path(str(description.get("path", "run"))).name
            return frozenset({Family(f"run {description.get('sha256') or name}", f"run {name}")})
        return frozenset({self._model_family(description, _KINDS.get(retriever, retriever or "system"))})

    def _model_family(self, description: dict[str, Any], kind: str) -> Family:
        model = str(description.get("model") or description.get("reranker") or "?")
        if kind == "reranker":
            kind = str(description.get("reranker", kind))
        revision = str(description.get("revision") or model)
        return Family(f"{kind} {self._identity(model, revision)}", f"{kind} {Path(model.rstrip('/')).name}")

    def _identity(self, model: str, revision: str) -> str:
        """A local folder's revision is its content checksum; a Hub commit becomes the checksum of its snapshot's
        files when the snapshot is at hand (offline: in the local cache), so both spellings of a model agree."""
        if revision.startswith("sha256:") or (model, revision) in self._content:
            return self._content.get((model, revision), revision)
        identity = revision
        try:
            from beirx.models.files import folder_checksum, resolve_model

            identity = folder_checksum(resolve_model(model, revision).folder)
        except (BeirxError, OSError) as error:  # an unreachable model keeps its revision as its identity
            log.debug("model %s (%s) is known by its revision only: %s", model, revision, error)
        self._content[(model, revision)] = identity
        return identity


def described_run_file(description: dict[str, Any]) -> dict[str, Any] | None:
    """The system a ``beirx eval`` results document beside a run file describes (the document whose
    ``run_file`` names it), or None."""
    from beirx.artifacts.results import ResultsDocument

    path = Path(str(description.get("path", "")))
    sibling = path.with_suffix(".json")
    if not path.name or not sibling.is_file():
        return None
    try:
        document = ResultsDocument.load(sibling)
    except (BeirxError, OSError) as error:  # optional provenance: another JSON file describes nothing
        log.debug("%s does not describe %s: %s", sibling, path, error)
        return None
    if document.run_file != path.name:
        return None
    return json.loads(json.dumps(document.system.description))


def label_of(families: frozenset[Family]) -> str:
    return " + ".join(sorted(f.label for f in families))
