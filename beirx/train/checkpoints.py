"""Checkpoints of a training run and resuming from the last one after a kill.

The trainer writes ``checkpoint-<step>`` folders (weights, optimizer, scheduler, RNG states, data position)
every ``save_steps`` under ``<output>/checkpoints``, in place: a kill while saving leaves a folder that looks
like the newest checkpoint but is half written. So each folder is sealed once the trainer has saved it
(:func:`sealing_callback`: :func:`beirx.cache_integrity.seal` records every file's size and checksum), and a
rerun of the same command resumes from the newest checkpoint that verifies (:func:`last_checkpoint`); one that
does not is reported and removed. The data order and the result are then the ones an uninterrupted run gives.
``run.json`` beside them records what the run is (base model, dataset checksum, split, parameters):
checkpoints of a different run are never resumed silently, while a record with no checkpoint beside it (a run
stopped before its first save, e.g. by a value the trainer refused) binds nothing and is replaced.
``base/`` holds the untrained model, sealed with its dev scores (:mod:`beirx.train.selection`), so a resumed run
neither evaluates the base again nor loses it when it turns out to be the best.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

from beirx.atomic import write_json
from beirx.cache_integrity import report_damaged, seal, verify
from beirx.errors import BeirxError

log = logging.getLogger(__name__)

FOLDER = "checkpoints"
IDENTITY = "run.json"
BASE = "base"


def checkpoint_dir(output: Path) -> Path:
    return Path(output) / FOLDER


SEAL = "beirx-checkpoint.json"
_STEP = re.compile(r"^checkpoint-(\d+)$")


def last_checkpoint(output: Path) -> str | None:
    """The newest ``checkpoint-N`` folder of the run in ``output`` that verifies against its seal, or None.

    Newer folders that do not verify (a save interrupted by a kill, a damaged file, an older beirx's unsealed
    checkpoint) are reported and removed, so the trainer writes them again from the one resumed.
    """
    folder = checkpoint_dir(output)
    found = [(int(m.group(1)), p) for p in folder.iterdir() if p.is_dir() and (m := _STEP.match(p.name))] \
        if folder.is_dir() else []
    for _, path in sorted(found, reverse=True):
        problem = verify(path, SEAL)
        if problem is None:
            return str(path)
        report_damaged("training checkpoint", path, problem)
        shutil.rmtree(path, ignore_errors=True)
    return None


def sealing_callback():
    """A ``TrainerCallback`` that seals each checkpoint folder once the trainer has written it (main process)."""
    from transformers import TrainerCallback

    class SealCheckpoints(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and path.is_dir():
                seal(path, SEAL, {"step": state.global_step})

    return SealCheckpoints()


def _steps(output: Path) -> list[Path]:
    folder = checkpoint_dir(output)
    return [p for p in folder.iterdir() if p.is_dir() and _STEP.match(p.name)] if folder.is_dir() else []


def claim(output: Path, identity: dict[str, Any]) -> None:
    """Record ``identity`` for the checkpoints of ``output``, or refuse checkpoints of another run. A record
    without any checkpoint (a run that stopped before its first save) is replaced, with the stale base copy."""
    path = checkpoint_dir(output) / IDENTITY
    identity = json.loads(json.dumps(identity, default=str))
    if path.is_file():
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            found = None
        if found == identity:
            return
        if _steps(output):
            changed = sorted(k for k in set(found or {}) | set(identity) if (found or {}).get(k) != identity.get(k))
            raise BeirxError(f"{path.parent} holds checkpoints of another training run (different "
                             f"{', '.join(changed) or 'record'}); pass another --output or delete that folder")
        log.info("%s records a run that saved no checkpoint: replaced", path)
        shutil.rmtree(base_dir(output), ignore_errors=True)
    write_json(path, identity)


def base_dir(output: Path) -> Path:
    return checkpoint_dir(output) / BASE


def base_scores(output: Path) -> dict[str, float] | None:
    """The dev scores sealed with the saved base model, or None (absent, or damaged: then removed)."""
    folder = base_dir(output)
    if not folder.is_dir():
        return None
    problem = verify(folder, SEAL)
    if problem is None:
        return json.loads((folder / SEAL).read_text(encoding="utf-8"))["dev"]
    report_damaged("saved base model", folder, problem)
    shutil.rmtree(folder, ignore_errors=True)
    return None


def save_base(trainer, output: Path, scores: dict[str, float]) -> None:
    """Save the untrained model of ``trainer`` beside the checkpoints, sealed with its dev ``scores``."""
    folder = base_dir(output)
    trainer.model.save_pretrained(str(folder), create_model_card=False)
    seal(folder, SEAL, {"step": 0, "dev": scores})


def step_dir(output: Path, step: int) -> Path:
    """The checkpoint of ``step``, verified against its seal (a :class:`BeirxError` when it is not whole)."""
    path = checkpoint_dir(output) / f"checkpoint-{step}"
    problem = verify(path, SEAL) if path.is_dir() else "it is missing"
    if problem:
        raise BeirxError(f"{path}: the checkpoint chosen on the dev slice cannot be loaded ({problem}); rerun with "
                         "--overwrite")
    return path


def finish(output: Path, keep: bool) -> None:
    """Remove the checkpoints once the final model is saved (they hold optimizer states: 3x the weights)."""
    if not keep:
        shutil.rmtree(checkpoint_dir(output), ignore_errors=True)
