"""A sentence-transformers bi-encoder run by ONNX Runtime on CPU, optionally int8-quantized.

Why: on CPU, ONNX Runtime's fused kernels and dynamic int8 quantization (weights int8 per output channel,
activations quantized per batch at run time; Jacob et al. 2018, ONNX Runtime's ``quantize_dynamic``) encode
passages faster than torch fp32, at a small cost in embedding fidelity (per-channel weight scales; cosine
to the fp32 embeddings about 0.997 for e5-small; benchmarks/dense_onnx.py measures both).

How: the model's transformer (module 0 of the sentence-transformers folder) is exported once with
``torch.onnx.export`` (inputs ``input_ids``[/``token_type_ids``], output the token states, dynamic batch and
sequence axes), its LayerNorm/GELU fused by ONNX Runtime's transformer optimizer, quantized with
``onnxruntime.quantization.quantize_dynamic`` when asked, and cached under ``$BEIRX_HOME/onnx`` keyed by
model name, revision, torch, onnxruntime and the quantization; the inference session is shared through
:mod:`beirx.models.loaded`. Pooling (mean / CLS, from the model's Pooling config) and L2 normalisation run
in numpy on the output, the tokenizer is the model's own, so texts, prompts and truncation are exactly what
sentence-transformers does. Supported layouts: Transformer + Pooling (+ Normalize).

No padding: texts are tokenized without it and run in batches of equal token length, so the graph has no
attention mask. That gives the same embeddings as a padded, masked batch (padding is masked out there) and
is what makes int8 pay off on long passages: with a mask, ONNX Runtime's CPU attention kernels (fused
``Attention``/``QAttention``, or a masked ``MultiHeadAttention`` that cannot use its flash path) took 60 % of
the time on 512-token SciFact passages, against about 25 % for the unmasked attention of equal-length batches
(profiled with ONNX Runtime's profiler; benchmarks/dense_onnx.py has the end-to-end figures). Long texts
rarely share a length, so many of their batches hold one text; a 512-token text alone is still a large
enough matrix product for the int8 kernels.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import logging
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from beirx.atomic import atomic_dir
from beirx.checksums import cache_key
from beirx.data.cache import cache_dir
from beirx.data.download import file_lock
from beirx.errors import BeirxError, require
from beirx.models.loaded import cached

log = logging.getLogger(__name__)

QUANTIZATIONS = (None, "int8")
_EXPORT_FORMAT = 4  # 4: no attention-mask input (equal-length batches)
_OPSET = 17


def _onnxruntime():
    return require("onnxruntime", "onnx", "the ONNX Runtime dense backend (--dense-backend onnx)")


def _modules(folder: Path) -> list[dict]:
    path = folder / "modules.json"
    if not path.is_file():
        return [{"type": "sentence_transformers.models.Transformer", "path": ""},
                {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}]
    return json.loads(path.read_text(encoding="utf-8"))


def _pooling_mode(folder: Path) -> tuple[str, bool]:
    """('mean' | 'cls', normalize) from the folder's modules; other layouts are refused, naming the module."""
    modules = _modules(folder)
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise BeirxError(f"{folder}: the ONNX backend supports Transformer + Pooling (+ Normalize) models, "
                         f"this one has {' + '.join(kinds)}; use --dense-backend torch")
    config = json.loads((folder / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
    if config.get("pooling_mode_mean_tokens"):
        mode = "mean"
    elif config.get("pooling_mode_cls_token"):
        mode = "cls"
    else:
        raise BeirxError(f"{folder}: pooling {config} is not supported by the ONNX backend (mean or CLS only)")
    return mode, len(kinds) > 2


@contextlib.contextmanager
def _quiet_logging():
    """ONNX Runtime's optimizer and quantizer log a line per tensor at INFO (on the root logger)."""
    logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def export(folder: Path, name: str, revision: str | None, quantize: str | None) -> Path:
    """The cached ONNX file of the model's transformer (exported, and quantized, on first use)."""
    ort = _onnxruntime()
    torch = require("torch", "neural", "exporting a model to ONNX")
    key = cache_key(_EXPORT_FORMAT, name, revision, torch.__version__, ort.__version__, _OPSET, quantize)
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name)[-60:]
    target = cache_dir("onnx") / f"{label}-{quantize or 'fp32'}-{key}"
    model_path = target / "model.onnx"
    with file_lock(target.with_name(target.name + ".lock")):
        if model_path.is_file():
            return model_path
        st = require("sentence_transformers", "neural", "dense retrieval")
        log.info("exporting %s to ONNX%s (cached in %s)", name, f" with {quantize} quantization" if quantize else "", target)
        # eager attention exports the plain attention pattern that ONNX Runtime's optimizer fuses
        transformer = st.SentenceTransformer(str(folder), device="cpu",
                                             model_kwargs={"attn_implementation": "eager"})[0].auto_model.eval()
        inputs = ["input_ids"]
        if getattr(transformer.config, "type_vocab_size", 0):
            inputs.append("token_type_ids")
        dummy = tuple(torch.ones((1, 8), dtype=torch.long) for _ in inputs)

        class _States(torch.nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, *args):
                return self.model(**dict(zip(inputs, args))).last_hidden_state

        axes = {n: {0: "batch", 1: "sequence"} for n in [*inputs, "token_states"]}
        with atomic_dir(target) as tmp, torch.no_grad(), warnings.catch_warnings(), _quiet_logging():
            warnings.simplefilter("ignore")  # the tracer's notes on shape-dependent Python code (batch/length axes are dynamic)
            exported, fp32 = tmp / "exported.onnx", tmp / ("model-fp32.onnx" if quantize else "model.onnx")
            torch.onnx.export(_States(transformer), dummy, str(exported), input_names=inputs,
                              output_names=["token_states"], dynamic_axes=axes, opset_version=_OPSET, dynamo=False)
            # Fuse LayerNorm and GELU into ONNX Runtime's transformer kernels (what optimum's O2 does; without
            # a mask the attention stays plain MatMul/Softmax, which ONNX Runtime fuses at load time).
            from onnxruntime.transformers.optimizer import optimize_model

            config = transformer.config
            optimize_model(str(exported), model_type="bert", num_heads=config.num_attention_heads,
                           hidden_size=config.hidden_size).save_model_to_file(str(fp32))
            exported.unlink()
            if quantize == "int8":
                import onnx
                from onnxruntime.quantization import QuantType, quantize_dynamic

                # Per-channel weight scales: cosine to the fp32 embeddings 0.997 instead of 0.984 (per tensor)
                # on SciFact passages with e5-small, at the same speed.
                quantize_dynamic(str(fp32), str(tmp / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True,
                                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fused ops' outputs
                fp32.unlink()
            (tmp / "export.json").write_text(json.dumps({"model": name, "revision": revision, "quantize": quantize,
                                                         "torch": torch.__version__, "onnxruntime": ort.__version__,
                                                         "opset": _OPSET, "inputs": inputs}, indent=1))
    return model_path


class OnnxEncoder:
    """The parts of ``SentenceTransformer`` that :class:`DenseRetriever` uses, on ONNX Runtime."""

    def __init__(self, folder: Path, name: str, revision: str | None, quantize: str | None = "int8"):
        if quantize not in QUANTIZATIONS:
            raise BeirxError(f"--quantize must be one of int8 or none, got {quantize!r}")
        ort = _onnxruntime()
        transformers = require("transformers", "neural", "dense retrieval")
        self.folder, self.quantize = Path(folder), quantize
        self.pooling, self.normalize = _pooling_mode(self.folder)
        self.path = export(self.folder, name, revision, quantize)
        self.inputs = json.loads((self.path.parent / "export.json").read_text(encoding="utf-8"))["inputs"]
        options = ort.SessionOptions()
        # Idle worker threads sleep instead of spinning: spinning burns CPU time that a shared or busy
        # machine (and every CPU-seconds figure) pays for, for a latency gain batches do not need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self.session = cached(("onnxruntime", str(self.path)),
                              lambda: ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"]))
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(self.folder))
        self.max_seq_length = 512
        self.dimension = int(self.session.get_outputs()[0].shape[-1])

    def describe(self) -> dict[str, Any]:
        return {"backend": f"onnxruntime {importlib.metadata.version('onnxruntime')}",
                "quantize": self.quantize, "onnx_file": str(self.path)}

    def get_embedding_dimension(self) -> int:
        return self.dimension

    def encode(self, texts: list[str], prompt: str = "", batch_size: int = 32, normalize_embeddings: bool = False,
               **_: Any) -> np.ndarray:
        """Embeddings like ``SentenceTransformer.encode(texts, prompt=...)``: float32, one row per text."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        token_ids = self.tokenizer([prompt + t for t in texts], truncation=True, max_length=self.max_seq_length,
                                   return_attention_mask=False, return_token_type_ids=False)["input_ids"]
        by_length: dict[int, list[int]] = {}
        for i, ids in enumerate(token_ids):
            by_length.setdefault(len(ids), []).append(i)
        for rows in by_length.values():
            for start in range(0, len(rows), batch_size):
                chunk = rows[start:start + batch_size]
                ids = np.array([token_ids[i] for i in chunk], dtype=np.int64)
                feed = {n: ids if n == "input_ids" else np.zeros_like(ids) for n in self.inputs}
                states = self.session.run(None, feed)[0]
                out[chunk] = states.mean(axis=1) if self.pooling == "mean" else states[:, 0]
        if self.normalize or normalize_embeddings:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out
