"""Find a model's files (local folder or Hugging Face Hub id) and the revision that identifies them.

Results and caches must name the exact weights that produced them. For a Hub id that is the commit hash
of the snapshot used; for a local folder (which has no commit) it is a SHA-256 over every file in the
folder except READMEs, so retraining or re-converting a model into the same path never reuses stale
embeddings. Both are found without importing torch.

This is the one revision rule of beirx: dense retrieval, rerankers, translation backends, the translation
quality encoder and MTEB export all call it, so one model folder gets one revision in results documents,
translation manifests and cache keys alike. :func:`resolve_model` also returns the files (downloading a Hub
snapshot); :func:`model_revision` gives the revision alone for backends that load through
``from_pretrained`` themselves (only ``config.json`` is fetched for a Hub id, not every weight format).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.checksums import files_checksum
from beirx.errors import DataError, require
from beirx.network import hub_call

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelFiles:
    """``name`` as the user gave it, the local ``folder`` with the files, and their ``revision``."""

    name: str
    folder: Path
    revision: str
    local: bool = False  # a folder the user named, not a Hub id

    def read_json(self, filename: str) -> dict[str, Any]:
        """A JSON file of the model folder, or ``{}`` when it is absent."""
        path = self.folder / filename
        if not path.is_file():
            return {}
        return json.loads(path.read_text(encoding="utf-8"))


DEFAULT_MAX_LENGTH = 512


def max_seq_length(files: ModelFiles) -> int:
    """The tokens per text sentence-transformers itself gives the model: ``sentence_bert_config.json``'s
    ``max_seq_length`` when there (older saves), else the tokenizer's ``model_max_length`` (where
    sentence-transformers >= 6 saves it), capped at ``max_position_embeddings``; else 512.

    Reading only ``sentence_bert_config.json`` evaluated a model saved by sentence-transformers 6 (a model
    ``beirx train`` wrote) at 512 tokens whatever its length, so a trained all-MiniLM-L6-v2 (256) was not
    evaluated like its base.
    """
    length = files.read_json("sentence_bert_config.json").get("max_seq_length") or \
        files.read_json("tokenizer_config.json").get("model_max_length")
    positions = files.read_json("config.json").get("max_position_embeddings")
    if length and positions:
        length = min(length, positions)
    return int(length or positions or DEFAULT_MAX_LENGTH)


def folder_checksum(folder: Path) -> str:
    """``sha256:<hex>`` over the relative paths and bytes of every file below ``folder`` (READMEs excluded)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.lower().startswith("readme"))
    return files_checksum(folder, files)


LOCAL_MODEL_HINT = "pass a local model folder instead"


def _not_a_folder(name: str, path: Path) -> None:
    """Fail for a name that can only be meant as a folder (a path, or a symbolic link that cannot be followed)."""
    if path.is_absolute() or name.startswith((".", "~")) or name.count("/") > 1 or os.path.lexists(path):
        raise DataError(name, "model folder not found")


def resolve_model(name: str, revision: str | None = None) -> ModelFiles:
    """Local folder as is; otherwise the Hub snapshot (from the local Hugging Face cache when offline)."""
    path = Path(name).expanduser()
    if path.is_dir():
        if revision:
            log.warning("model %s is a local folder: --model-revision %s is ignored", name, revision)
        return ModelFiles(name=name, folder=path.resolve(), revision=folder_checksum(path), local=True)
    _not_a_folder(name, path)
    hub = require("huggingface_hub", "hub", "downloading models from the Hugging Face Hub")
    with hub_call(f"get model {name!r}", LOCAL_MODEL_HINT):
        folder = Path(hub.snapshot_download(name, revision=revision))
    commit = folder.name if folder.parent.name == "snapshots" else folder_checksum(folder)
    return ModelFiles(name=name, folder=folder, revision=commit)


def model_revision(name: str, revision: str | None = None) -> str:
    """The revision :func:`resolve_model` would give, without downloading the whole Hub snapshot.

    A local folder: :func:`folder_checksum`. A Hub id: the commit of the snapshot that holds its
    ``config.json`` (from the local cache when offline), the same commit ``resolve_model`` names.
    """
    path = Path(name).expanduser()
    if path.is_dir():
        return folder_checksum(path)
    _not_a_folder(name, path)
    hub = require("huggingface_hub", "hub", "finding the revision of a Hugging Face Hub model")
    with hub_call(f"get model {name!r}", LOCAL_MODEL_HINT):
        config = Path(hub.hf_hub_download(name, "config.json", revision=revision))
    return config.parent.name if config.parent.parent.name == "snapshots" else folder_checksum(config.parent)
