"""Recognise and read the two ColBERT checkpoint layouts beirx supports.

(a) **colbert-ai** (Stanford's ``colbert-ai`` package, e.g. ``colbert-ir/colbertv2.0``): a Hugging Face
    checkpoint whose state dict holds the backbone under its base-model prefix (``bert.``,
    ``roberta.``...) plus the projection ``linear.weight`` (``[dim, hidden]``, no bias); ``config.json``
    usually names the architecture ``HF_ColBERT``. Settings come from ``artifact.metadata`` (JSON:
    ``query_maxlen``, ``doc_maxlen``, ``dim``, ``similarity``, ``mask_punctuation``,
    ``attend_to_mask_tokens``, ``query_token_id``/``doc_token_id``), with colbert-ai's defaults when it
    is absent. Markers are written over the placeholder ``". "`` right after ``[CLS]``, exactly as
    colbert-ai's tokenizers do; the punctuation skiplist is the first piece of each punctuation symbol.
(b) **PyLate** (``lightonai/pylate``, sentence-transformers style): ``modules.json`` listing a
    ``Transformer`` then one or more ``Dense`` projections (each a folder with ``config.json`` and
    ``linear.weight``/``linear.bias``), and ``config_sentence_transformers.json`` with ``query_prefix``/
    ``document_prefix`` (``[Q] ``/``[D] ``, tokens of the saved tokenizer), ``query_length``,
    ``document_length``, ``do_query_expansion``, ``attend_to_expansion_tokens``, ``skiplist_words``.
    Prefix ids are inserted after the first token, as PyLate does.

Anything else (a plain BERT, a sentence-transformers bi-encoder, sentence-transformers'
``MultiVectorEncoder`` saves, an ``l2`` colbert-ai model) raises a BeirxError naming the folder and what it
holds, instead of silently scoring with a random projection.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.errors import BeirxError

# colbert-ai's ColBERTConfig defaults, used when a checkpoint has no artifact.metadata.
COLBERT_AI_DEFAULTS = {"query_maxlen": 32, "similarity": "cosine", "mask_punctuation": True,
                       "attend_to_mask_tokens": False, "query_token_id": "[unused0]", "doc_token_id": "[unused1]"}
# PyLate's defaults for keys a config_sentence_transformers.json may omit.
PYLATE_DEFAULTS = {"query_prefix": "[Q] ", "document_prefix": "[D] ", "query_length": 32, "document_length": 180,
                   "do_query_expansion": True, "attend_to_expansion_tokens": False}
IDENTITY = "torch.nn.modules.linear.Identity"  # a projection without activation
DEFAULT_DOC_MAXLEN = 180  # BEIR-PL's ColBERT setting (and PyLate's default)
_PYLATE_KEYS = (*PYLATE_DEFAULTS, "skiplist_words")


@dataclass
class ColbertCheckpoint:
    layout: str  # "colbert-ai" or "pylate"
    folder: Path
    backbone: Path  # folder AutoModel/AutoTokenizer load from
    projection: Any  # torch.nn.Sequential of the linear layers and their activations (float32, CPU)
    dim: int
    query_marker: str | None  # token string (None: no marker)
    doc_marker: str | None
    query_maxlen: int
    doc_maxlen: int
    query_expansion: bool
    attend_to_expansion: bool
    skiplist_words: list[str] = field(default_factory=list)
    do_lower_case: bool = False


def read_checkpoint(folder: Path) -> ColbertCheckpoint:
    """The layout and settings of the ColBERT checkpoint in ``folder`` (see the module docstring)."""
    folder = Path(folder)
    if (folder / "modules.json").is_file():
        return _read_pylate(folder)
    config = _json(folder / "config.json")
    weights = _weights_file(folder)
    if weights is not None and ("HF_ColBERT" in (config.get("architectures") or []) or
                                "linear.weight" in _tensor_names(weights)):
        return _read_colbert_ai(folder, config, weights)
    found = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
    raise BeirxError(f"{folder}: not a supported ColBERT checkpoint (found: {found}). beirx reads (a) colbert-ai "
                     "checkpoints (config.json + weights with a 'linear.weight' projection, optional "
                     "artifact.metadata) and (b) PyLate models (modules.json with a Transformer and Dense "
                     "projection modules, config_sentence_transformers.json with query/document prefixes)")


def _read_colbert_ai(folder: Path, config: dict, weights: Path) -> ColbertCheckpoint:
    meta = {**COLBERT_AI_DEFAULTS, **_json(folder / "artifact.metadata")}
    if meta["similarity"] != "cosine":
        raise BeirxError(f"{folder}: colbert-ai similarity {meta['similarity']!r} is not supported (only 'cosine')")
    linear = _load_tensors(weights, ["linear.weight"])["linear.weight"]
    if meta.get("dim") is not None and int(meta["dim"]) != linear.shape[0]:
        raise BeirxError(f"{folder}: artifact.metadata says dim {meta['dim']} but linear.weight has shape "
                         f"{tuple(linear.shape)}")
    if config.get("hidden_size") is not None and config["hidden_size"] != linear.shape[1]:
        raise BeirxError(f"{folder}: linear.weight expects hidden size {linear.shape[1]}, config.json has "
                         f"{config['hidden_size']}")
    return ColbertCheckpoint(
        layout="colbert-ai", folder=folder, backbone=folder, projection=_projection([(linear, None, IDENTITY)]),
        dim=int(linear.shape[0]),
        query_marker=meta["query_token_id"], doc_marker=meta["doc_token_id"],
        query_maxlen=int(meta["query_maxlen"]), doc_maxlen=int(meta.get("doc_maxlen") or DEFAULT_DOC_MAXLEN),
        query_expansion=True, attend_to_expansion=bool(meta["attend_to_mask_tokens"]),
        skiplist_words=list(string.punctuation) if meta["mask_punctuation"] else [])


def _read_pylate(folder: Path) -> ColbertCheckpoint:
    modules = _json(folder / "modules.json")
    kinds = [str(m.get("type", "?")) for m in modules] if isinstance(modules, list) else ["?"]
    names = [k.rsplit(".", 1)[-1] for k in kinds]
    if len(names) < 2 or names[0] != "Transformer" or any(n != "Dense" for n in names[1:]):
        raise BeirxError(f"{folder}: modules.json lists {kinds}; a PyLate ColBERT model is a Transformer followed "
                         "by Dense projection modules (sentence-transformers bi-encoders and MultiVectorEncoder "
                         "saves are not supported)")
    settings = _json(folder / "config_sentence_transformers.json")
    if not any(k in settings for k in _PYLATE_KEYS):
        raise BeirxError(f"{folder}: config_sentence_transformers.json has none of {', '.join(_PYLATE_KEYS)}: this "
                         "looks like a sentence-transformers model, not a PyLate ColBERT")
    settings = {**PYLATE_DEFAULTS, **{k: v for k, v in settings.items() if v is not None}}
    backbone = folder / modules[0].get("path", "")
    layers = [_read_dense(folder / m.get("path", ""), folder) for m in modules[1:]]
    return ColbertCheckpoint(
        layout="pylate", folder=folder, backbone=backbone, projection=_projection(layers),
        dim=int(layers[-1][0].shape[0]),
        query_marker=settings["query_prefix"] or None, doc_marker=settings["document_prefix"] or None,
        query_maxlen=int(settings["query_length"]), doc_maxlen=int(settings["document_length"]),
        query_expansion=bool(settings["do_query_expansion"]),
        attend_to_expansion=bool(settings["attend_to_expansion_tokens"]) and bool(settings["do_query_expansion"]),
        skiplist_words=list(settings.get("skiplist_words", string.punctuation)),
        do_lower_case=bool(_json(backbone / "sentence_bert_config.json").get("do_lower_case", False)))


def _read_dense(path: Path, folder: Path) -> tuple[Any, Any, str]:
    config = _json(path / "config.json")
    weights = _weights_file(path)
    if not config or weights is None:
        raise BeirxError(f"{folder}: Dense module folder {path.name or '.'} has no config.json and weights")
    activation = config.get("activation_function", IDENTITY)
    if not activation.startswith("torch.") or config.get("use_residual"):
        raise BeirxError(f"{folder}: Dense module {path.name} uses {activation}"
                         f"{' with a residual' if config.get('use_residual') else ''}; only torch activations "
                         "without residual connections are supported")
    names = ["linear.weight"] + (["linear.bias"] if config.get("bias", True) else [])
    tensors = _load_tensors(weights, names)
    return tensors["linear.weight"], tensors.get("linear.bias"), activation


def _projection(layers: list[tuple[Any, Any, str]]):
    """Layers ``(weight, bias, activation)``, each ``y = act(x W^T + b)`` on every token's hidden state, as one
    torch module."""
    import importlib

    import torch

    modules = []
    for weight, bias, activation in layers:
        linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
        linear.load_state_dict({"weight": weight} | ({"bias": bias} if bias is not None else {}))
        module, _, name = activation.rpartition(".")
        modules += [linear, getattr(importlib.import_module(module), name)()]
    return torch.nn.Sequential(*modules)


# -- files -------------------------------------------------------------------------------------------
def _json(path: Path) -> Any:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BeirxError(f"{path}: invalid JSON ({exc})") from None


def _weights_file(folder: Path) -> Path | None:
    return next((folder / name for name in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
                 if (folder / name).is_file()), None)


def _tensor_names(weights: Path) -> set[str]:
    if weights.name.endswith(".index.json"):
        return set(_json(weights).get("weight_map", {}))
    if weights.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(weights), framework="pt") as fh:
            return set(fh.keys())
    return set(_torch_load(weights))


def _load_tensors(weights: Path, names: list[str]) -> dict[str, Any]:
    """``names`` from a safetensors file, a sharded index or a torch pickle (all of them, or a BeirxError); each
    file is opened once (a torch pickle is read whole)."""
    if weights.name.endswith(".index.json"):
        shards = _present(weights, names, _json(weights).get("weight_map", {}))
        return {n: _load_tensors(weights.parent / shards[n], [n])[n] for n in names}
    if weights.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(weights), framework="pt") as fh:
            _present(weights, names, set(fh.keys()))
            return {n: fh.get_tensor(n) for n in names}
    state = _present(weights, names, _torch_load(weights))
    return {n: state[n] for n in names}


def _present(weights: Path, names: list[str], have):
    """``have`` (the file's tensor names or tensors), or a BeirxError naming those of ``names`` it lacks."""
    lost = [n for n in names if n not in have]
    if lost:
        raise BeirxError(f"{weights}: tensor(s) {', '.join(lost)} not found")
    return have


def _torch_load(weights: Path) -> dict[str, Any]:
    import torch

    return torch.load(weights, map_location="cpu", weights_only=True)
