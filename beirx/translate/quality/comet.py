"""The ``comet`` quality method: neural, reference-free quality estimation with a local COMET model
(``--comet PATH``; the optional extra ``beirx[comet]``, i.e. ``unbabel-comet``).

COMET (Rei et al., 2020, "COMET: A Neural Framework for MT Evaluation") regresses human judgements from
a multilingual encoder's view of the source and the translation; the reference-free (QE) models score a
translation from its source alone, which is what a benchmark build has: CometKiwi (Rei et al., 2022,
"CometKiwi: IST-Unbabel 2022 Submission for the Quality Estimation Shared Task", ``unified_metric`` with
input segments ``mt, src``) or the older COMET-QE (``referenceless_regression_metric``). A model that needs a
reference is refused before anything loads.

PATH is the model folder as published (``checkpoints/model.ckpt`` beside ``hparams.yaml``) or the
``.ckpt`` itself; it loads through ``comet.load_from_checkpoint`` offline (``local_files_only``), so the
encoder the checkpoint names (e.g. ``microsoft/infoxlm-large``) must be in the local Hugging Face cache or
be a local folder. Per row: ``comet`` (higher is better, roughly 0-1 for CometKiwi; unbounded in
general); a row is flagged when it is a low outlier of its field. The folder's SHA-256 is the recorded
revision.

``unbabel-comet`` pins numpy<2, transformers<5, huggingface-hub<1 and protobuf<5: install ``beirx[comet]``
in an environment of its own rather than beside packages that need newer versions (with transformers 5,
unbabel-comet 2.2.7 fails inside its own encoders; beirx then says so).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from beirx.argtypes import positive_int
from beirx.errors import BeirxError, require
from beirx.models import loaded
from beirx.models.device import choose_device
from beirx.models.files import folder_checksum
from beirx.options import Option
from beirx.progress import progress
from beirx.provenance import installed_version
from beirx.translate.planning.dataset_plan import chunks
from beirx.translate.quality.base import (FieldPairs, JudgedRows, MethodResult, QualityContext, QualityMethod,
                                          Score, rows_to_score)
from beirx.translate.quality.stats import ROBUST_Z

log = logging.getLogger(__name__)

CHUNK = 256  # rows per predict call: progress, and a bound on what one call holds
#: COMET model classes that can score without a reference (``class_identifier`` in hparams.yaml).
REFERENCE_FREE = {"referenceless_regression_metric", "unified_metric", "xcomet_metric"}


def checkpoint_of(path: Path | str) -> tuple[Path, dict[str, Any]]:
    """The ``.ckpt`` file and the parsed ``hparams.yaml`` of a COMET model folder (or checkpoint file);
    refuses a path that is not one, and a model that needs a reference translation."""
    import yaml

    path = Path(path).expanduser()
    ckpt = path / "checkpoints" / "model.ckpt" if path.is_dir() else path
    if not ckpt.is_file():
        raise BeirxError(f"{path}: not a COMET model (expected a folder with checkpoints/model.ckpt, or a .ckpt file)")
    hparams_file = ckpt.parents[1] / "hparams.yaml"
    if not hparams_file.is_file():
        raise BeirxError(f"{hparams_file}: missing; a COMET model folder holds hparams.yaml beside checkpoints/")
    try:
        hparams = yaml.safe_load(hparams_file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise BeirxError(f"{hparams_file}: not valid YAML ({exc})") from None
    kind = hparams.get("class_identifier") if isinstance(hparams, dict) else None
    segments = hparams.get("input_segments") or [] if isinstance(hparams, dict) else []
    if kind not in REFERENCE_FREE or (kind == "unified_metric" and segments and "src" not in segments):
        raise BeirxError(f"{hparams_file}: class_identifier {kind!r} needs a reference translation; beirx has none, "
                         "use a reference-free (QE) model such as CometKiwi")
    return ckpt, hparams


class Comet(QualityMethod):
    name = "comet"
    scores = (Score("comet", "reference-free COMET score of the translation given its source",
                    low_outlier="low_comet"),)
    whole_field = True  # its seeded sample is drawn over the field
    flags = {"low_comet": f"COMET score is a low outlier for this field (robust z < -{ROBUST_Z})"}

    def __init__(self, path: Path | str, batch_size: int = 16, sample: int | JudgedRows | None = None,
                 device: str | None = None):
        self.ckpt, self.hparams = checkpoint_of(path)
        self.folder = self.ckpt.parents[1]
        self.batch_size = batch_size
        self.sample = sample
        self.device = choose_device(device)

    OPTIONS = (
        Option("path", Path, flag="--comet", metavar="PATH",
               help="a local reference-free COMET model folder (e.g. CometKiwi): per-row neural QE (needs beirx[comet])"),
        Option("batch_size", positive_int, default=16, flag="--comet-batch-size", help="COMET batch size"),
        Option("sample", rows_to_score, flag="--comet-sample", metavar="N|all|qrels:SPLIT",
               help="rows per field to score: a seeded sample, all, or qrels:SPLIT (the queries and documents the "
                    "SPLIT qrels judge; default all)"),
    )

    @classmethod
    def from_options(cls, given, src: str, tgt: str, use_cache: bool = True) -> Comet | None:
        return cls(**given) if given.get("path") else None

    def describe(self, context: QualityContext) -> dict[str, Any]:
        return {"model": str(self.folder), "revision": folder_checksum(self.folder),
                "class": self.hparams.get("class_identifier"), "encoder": self.hparams.get("pretrained_model"),
                "unbabel-comet": installed_version("unbabel-comet")}

    def _model(self):
        comet = require("comet", "comet", "neural quality estimation with COMET")
        for noisy in ("pytorch_lightning", "lightning", "lightning.pytorch", "lightning_fabric"):
            logging.getLogger(noisy).setLevel(logging.WARNING)

        def load():
            try:
                return comet.load_from_checkpoint(str(self.ckpt), local_files_only=True)
            except (OSError, ValueError, KeyError) as exc:
                raise BeirxError(f"cannot load the COMET model {self.folder} ({type(exc).__name__}: {exc}); its "
                                 f"encoder {self.hparams.get('pretrained_model')!r} must be a local folder or in the "
                                 "local Hugging Face cache") from exc

        return loaded.cached(("comet", str(self.ckpt), self.device), load)

    def score(self, pairs: FieldPairs, context: QualityContext) -> MethodResult:
        picked = context.sample(pairs, self.sample, "comet")
        values: dict[str, float | None] = {}
        if picked:
            model = self._model()
            with progress(total=len(picked), desc=f"comet {pairs.field}", unit="row",
                          enabled=context.show_progress) as bar:
                for rows in chunks(picked, CHUNK):
                    data = [{"src": pairs.sources[i], "mt": pairs.translations[i]} for i in rows]
                    scores = self._predict(model, data)
                    values.update((pairs.ids[i], float(s)) for i, s in zip(rows, scores))
                    bar.update(len(rows))
        return MethodResult(values={"comet": values}, scored=len(values))

    def _predict(self, model, data: list[dict[str, str]]) -> list[float]:
        try:
            output = model.predict(data, batch_size=self.batch_size, gpus=1 if self.device.startswith("cuda") else 0,
                                   progress_bar=False)
        except (AttributeError, ValueError, TypeError) as exc:
            transformers = installed_version("transformers")
            hint = (f"; unbabel-comet {installed_version('unbabel-comet')} was written for transformers<5 and this "
                    f"environment has {transformers}: install beirx[comet] in an environment of its own"
                    if transformers and int(transformers.split(".")[0]) >= 5 else "")
            raise BeirxError(f"COMET failed on {self.folder} ({type(exc).__name__}: {exc}){hint}") from exc
        return list(output.scores)
