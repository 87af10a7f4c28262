"""A model folder checked, before any work, against what the command needs: its kind, config, weights, tokenizer.

Without this, a damaged or wrong folder fails deep inside transformers, after an index was built or a corpus
encoded: a ``config.json`` field of the wrong type raises ``StrictDataclassFieldValidationError``, weights cut short
``SafetensorError``, a folder without a tokenizer "You need to have sentencepiece or tiktoken installed" (naming
no folder). Worse, a folder of the wrong kind often loads: transformers gives a BERT encoder a new, random
language-model head when asked for a causal LM, and a judge built on it reads noise until an index runs out of
bounds. So every command that takes a model folder calls :func:`checked_model` (or :func:`check_model`) first, and
a problem is one sentence naming the flag, the folder, what it is and what was expected.

The check is cheap and loads no weights: ``config.json`` is read by transformers' own config class (the strict
field types, nothing else), each ``*.safetensors`` file's header is read and the data it announces compared with
the file's size, a PyTorch ``.bin`` file's zip directory is opened, and the tokenizer's files are looked for (a
``tokenizer.json`` is parsed). The kind comes from ``config.json``'s ``architectures`` and ``model_type`` against
transformers' auto-class tables, and from a sentence-transformers ``modules.json``.
"""

from __future__ import annotations

import json
import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beirx.errors import BeirxError
from beirx.models.files import ModelFiles, resolve_model

log = logging.getLogger(__name__)

#: What each kind a command can need means, in the words of the refusal ("..., not <this>").
KINDS = {
    "bi-encoder": "a sentence embedding model (a sentence-transformers folder or a transformers encoder)",
    "encoder": "a transformers encoder to train a cross-encoder from (a bi-encoder, an encoder or a "
               "sequence-classification model)",
    "cross-encoder": "a cross-encoder (a sequence-classification model, or the Transformer, mean Pooling and Dense "
                     "modules `beirx train cross-encoder` saves)",
    "causal-lm": "a causal language model (an architecture ending in ForCausalLM or LMHeadModel)",
    "seq2seq": "a sequence-to-sequence model (T5, BART, Marian, NLLB, M2M100)",
    "masked-lm": "a masked language model (an architecture ending in ForMaskedLM)",
}
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                   "tokenizer.model", "source.spm", "sentencepiece.model", "spm.model")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


@dataclass(frozen=True)
class Folder:
    """What a model folder holds: its transformers config (``config``, from the folder the weights are in),
    ``architectures``, ``model_type`` and sentence-transformers module types (``modules``, empty for a plain
    transformers folder)."""

    root: Path
    weights: Path  # the folder of config.json and the transformer's weights (a module folder in older saves)
    config: dict[str, Any]
    modules: tuple[str, ...]
    st_type: str = ""  # config_sentence_transformers.json's model_type (SentenceTransformer, CrossEncoder...)

    @property
    def architectures(self) -> tuple[str, ...]:
        return tuple(self.config.get("architectures") or ())

    @property
    def model_type(self) -> str:
        return str(self.config.get("model_type") or "")

    def describe(self) -> str:
        """What the folder is, in a few words: "a sentence-transformers bi-encoder (BertModel)"."""
        saved = ", ".join(self.architectures) or self.model_type or "no architecture"
        if self.modules:
            if _st_cross_encoder(self):
                return f"a sentence-transformers cross-encoder ({saved})"
            return f"a sentence-transformers bi-encoder ({saved})"
        if any(a.endswith("ForSequenceClassification") for a in self.architectures):
            return f"a sequence-classification model, i.e. a cross-encoder ({saved})"
        if _is_causal_lm(self):
            return f"a causal language model ({saved})"
        if self.config.get("is_encoder_decoder") or _in_table(self, "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES"):
            return f"a sequence-to-sequence model ({saved})"
        if any(a.endswith("ForMaskedLM") for a in self.architectures):
            return f"a masked language model ({saved})"
        return f"an encoder without a task head ({saved})"


def _table(name: str) -> dict[str, str]:
    from transformers.models.auto import modeling_auto

    return getattr(modeling_auto, name)


def _in_table(folder: Folder, name: str) -> bool:
    """Whether the folder's saved architecture (or, when none is saved, its model type) is in a transformers
    auto-class table (e.g. the causal-LM classes)."""
    table = _table(name)
    if folder.architectures:
        return bool(set(folder.architectures) & set(table.values()))
    return folder.model_type in table


def _is_causal_lm(folder: Folder) -> bool:
    """A decoder with a language-model head. An encoder's LM-head class (BertLMHeadModel) counts only when its
    config says ``is_decoder``: a BERT bi-encoder loads as one with a new, random head and reads noise."""
    if not _in_table(folder, "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"):
        return False
    encoder_family = folder.model_type in _table("MODEL_FOR_MASKED_LM_MAPPING_NAMES")
    return not encoder_family or bool(folder.config.get("is_decoder"))


def _st_cross_encoder(folder: Folder) -> bool:
    """A sentence-transformers ``CrossEncoder`` save, or the module chain `beirx train cross-encoder` saves for a
    mean-pooling base: Transformer, Pooling, Dense (one score)."""
    return folder.st_type == "CrossEncoder" or \
        [m.rsplit(".", 1)[-1] for m in folder.modules] == ["Transformer", "Pooling", "Dense"]


def _accepts(folder: Folder, kind: str) -> bool:
    classifier = any(a.endswith("ForSequenceClassification") for a in folder.architectures)
    seq2seq = bool(folder.config.get("is_encoder_decoder")) or \
        _in_table(folder, "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES")
    if kind == "bi-encoder":
        if folder.modules:
            return not _st_cross_encoder(folder)
        return not (classifier or seq2seq or _is_causal_lm(folder))
    if kind == "encoder":
        return bool(folder.modules) or classifier or not (seq2seq or _is_causal_lm(folder))
    if kind == "cross-encoder":
        chain = [m.rsplit(".", 1)[-1] for m in folder.modules] == ["Transformer", "Pooling", "Dense"]
        return chain or (classifier and (not folder.modules or folder.st_type == "CrossEncoder"))
    if kind == "causal-lm":
        return _is_causal_lm(folder)
    if kind == "seq2seq":
        return seq2seq
    if kind == "masked-lm":
        if folder.architectures:
            return any(a.endswith("ForMaskedLM") for a in folder.architectures)
        return folder.model_type in _table("MODEL_FOR_MASKED_LM_MAPPING_NAMES")
    raise ValueError(f"unknown model kind {kind!r}")


# -- the files -----------------------------------------------------------------------------------------------
def _json_file(path: Path) -> tuple[Any, str | None]:
    """``(parsed, None)`` or ``(None, problem)`` for a JSON file of the folder."""
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except UnicodeDecodeError:
        return None, f"{path.name} is not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"{path.name} is not valid JSON (line {exc.lineno}: {exc.msg}; cut short?)"
    except OSError as exc:
        return None, f"{path.name} cannot be read ({exc.strerror or exc})"


def _modules(root: Path) -> tuple[tuple[str, ...], Path, str | None]:
    """The sentence-transformers module types of ``modules.json`` and the folder of its Transformer module."""
    path = root / "modules.json"
    if not path.is_file():
        return (), root, None
    modules, problem = _json_file(path)
    if problem:
        return (), root, problem
    if not isinstance(modules, list) or not all(isinstance(m, dict) and "type" in m for m in modules):
        return (), root, "modules.json is not a list of sentence-transformers modules"
    transformer = next((m for m in modules if str(m["type"]).endswith("Transformer")), None)
    weights = root / str(transformer.get("path") or "") if transformer else root
    return tuple(str(m["type"]) for m in modules), weights, None


def _config(folder: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``config.json`` read by transformers' config class for its model type, which checks every field's type."""
    path = folder / "config.json"
    if not path.is_file():
        return None, "it has no config.json (not a transformers model folder)"
    config, problem = _json_file(path)
    if problem:
        return None, problem
    if not isinstance(config, dict):
        return None, "config.json is not a JSON object"
    try:
        import transformers

        transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except ImportError:
        return config, None  # without transformers nothing reads it; the command names the missing extra
    except Exception as exc:  # noqa: BLE001 - transformers raises ValueError, KeyError, TypeError, its own errors
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return None, f"config.json cannot be read by transformers ({reason[:300]})"
    return config, None


def safetensors_problem(path: Path) -> str | None:
    """Why ``path`` is not a whole safetensors file (its header's tensors end beyond the file), or None."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            prefix = fh.read(8)
            length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
            if length < 2 or length > size - 8:
                return f"{path.name} is cut short or not a safetensors file ({size:,} bytes, no whole header)"
            header = json.loads(fh.read(length))
    except (OSError, ValueError) as exc:
        return f"{path.name} has no readable safetensors header ({exc})"
    ends = [entry["data_offsets"][1] for name, entry in header.items()
            if name != "__metadata__" and isinstance(entry, dict) and "data_offsets" in entry]
    needed = 8 + length + max(ends, default=0)
    if size < needed:
        return f"{path.name} is cut short: {size:,} bytes where its header announces {needed:,}"
    return None


def _weights_problem(root: Path, weights: Path) -> str | None:
    """Missing or incomplete weights: a weight file in the Transformer's folder, every shard an index lists,
    and every ``*.safetensors`` / PyTorch ``.bin`` file of the folder whole."""
    if not any((weights / name).is_file() for name in WEIGHT_FILES):
        return f"it has no weights ({', '.join(WEIGHT_FILES[:3])} ...)"
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if (weights / index).is_file():
            listed, problem = _json_file(weights / index)
            if problem:
                return problem
            missing = sorted({s for s in (listed or {}).get("weight_map", {}).values() if not (weights / s).is_file()})
            if missing:
                return f"{index} lists {len(missing)} weight files that are absent (e.g. {missing[0]})"
    for path in sorted(root.rglob("*.safetensors")):
        problem = safetensors_problem(path)
        if problem:
            return problem.replace(path.name, str(path.relative_to(root)), 1)
    for path in sorted(root.rglob("pytorch_model*.bin")):
        with path.open("rb") as fh:
            zipped = fh.read(2) == b"PK"  # torch.save's format; an older pickle is not checked
        if zipped and not zipfile.is_zipfile(path):  # the zip directory sits at the end: a cut file has none
            return f"{path.relative_to(root)} is cut short (its zip directory is missing)"
    return None


def _tokenizer_problem(folder: Path) -> str | None:
    """No tokenizer file, or a ``tokenizer.json``/``tokenizer_config.json`` that does not parse."""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (folder / name).is_file():
            _, problem = _json_file(folder / name)
            if problem:
                return problem
    if not any((folder / name).is_file() for name in TOKENIZER_FILES) and \
            not any(folder.glob("*.spm")) and not any(folder.glob("*.tiktoken")):
        return ("it has no tokenizer (tokenizer.json, or a vocabulary: vocab.txt, vocab.json or a SentencePiece "
                "model)")
    return None


def inspect_folder(folder: Path, tokenizer: bool = True) -> tuple[Folder | None, str | None]:
    """``(what the folder holds, None)``, or ``(None, the first problem found)``."""
    folder = Path(folder)
    if not folder.is_dir():
        return None, "it is not a folder"
    if not any(folder.iterdir()):
        return None, "it is empty"
    modules, weights, problem = _modules(folder)
    if problem:
        return None, problem
    config, problem = _config(weights)
    if problem:
        return None, problem if weights == folder else f"{weights.name}/{problem}"
    problem = _weights_problem(folder, weights) or (_tokenizer_problem(weights) if tokenizer else None)
    if problem and tokenizer and problem.startswith("it has no tokenizer") and weights != folder:
        problem = _tokenizer_problem(folder)  # some saves keep the tokenizer at the top
    if problem:
        return None, problem
    st_config, _ = _json_file(folder / "config_sentence_transformers.json") \
        if (folder / "config_sentence_transformers.json").is_file() else ({}, None)
    st_type = str(st_config.get("model_type") or "") if isinstance(st_config, dict) else ""
    return Folder(folder, weights, config, modules, st_type), None


def check_model(files: ModelFiles | Path | str, kind: str, flag: str = "model", needed_by: str = "",
                tokenizer: bool = True) -> Folder:
    """The folder's contents, or a :class:`BeirxError` naming ``flag``, the folder, and what is wrong with it:
    damaged files, or the wrong ``kind`` (:data:`KINDS`) for ``needed_by`` (e.g. "--judge transformers")."""
    folder = files.folder if isinstance(files, ModelFiles) else Path(files)
    where = f"{flag} {folder}"
    found, problem = inspect_folder(folder, tokenizer)
    if problem:
        expected = f"; {needed_by or 'it'} needs {KINDS[kind]}" if problem in ("it is empty",) or \
            problem.startswith("it has no config.json") else ""
        raise BeirxError(f"{where}: {problem}{expected}")
    if not _accepts(found, kind):
        raise BeirxError(f"{where}: {found.describe()}, not {KINDS[kind]}"
                         + (f", which {needed_by} needs" if needed_by else ""))
    return found


def checked_model(name: str, kind: str, revision: str | None = None, flag: str = "model", needed_by: str = "",
                  tokenizer: bool = True) -> ModelFiles:
    """:func:`~beirx.models.files.resolve_model` then :func:`check_model`: the files of a model that is what the
    command needs and whole."""
    files = resolve_model(name, revision)
    check_model(files, kind, flag, needed_by, tokenizer)
    return files


def check_if_local(name: str | None, kind: str, flag: str = "model", needed_by: str = "",
                   tokenizer: bool = True) -> None:
    """:func:`check_model` for a local folder now; a Hub id is checked where it is downloaded (nothing is
    fetched here, so a dry run stays offline)."""
    if name and Path(str(name)).expanduser().is_dir():
        check_model(Path(str(name)).expanduser(), kind, flag, needed_by, tokenizer)
