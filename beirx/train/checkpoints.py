"""Checkpoints of a training run and resuming from the last one after a kill.

The trainer writes ``checkpoint-<step>`` folders (weights, optimizer, scheduler, RNG states, data position)
every ``save_steps`` under ``<output>/checkpoints``; rerunning the same command finds the last complete one
(``transformers.trainer_utils.get_last_checkpoint``) and continues from it, so the data order and the result
are the ones an uninterrupted run gives. ``run.json`` beside them records what the run is (base model,
dataset checksum, split, parameters): checkpoints of a different run are never resumed silently.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from beirx.atomic import write_json
from beirx.errors import BeirxError

log = logging.getLogger(__name__)

FOLDER = "checkpoints"
IDENTITY = "run.json"


def checkpoint_dir(output: Path) -> Path:
    return Path(output) / FOLDER


def last_checkpoint(output: Path) -> str | None:
    """The newest complete ``checkpoint-N`` folder of the run in ``output``, or None."""
    from transformers.trainer_utils import get_last_checkpoint

    folder = checkpoint_dir(output)
    return get_last_checkpoint(str(folder)) if folder.is_dir() else None


def claim(output: Path, identity: dict[str, Any]) -> None:
    """Record ``identity`` for the checkpoints of ``output``, or refuse checkpoints of another run."""
    path = checkpoint_dir(output) / IDENTITY
    if path.is_file():
        found = json.loads(path.read_text(encoding="utf-8"))
        if found != json.loads(json.dumps(identity, default=str)):
            changed = sorted(k for k in set(found) | set(identity) if found.get(k) != identity.get(k))
            raise BeirxError(f"{path.parent} holds checkpoints of another training run (different "
                             f"{', '.join(changed)}); pass another --output or delete that folder")
        return
    write_json(path, json.loads(json.dumps(identity, default=str)))


def finish(output: Path, keep: bool) -> None:
    """Remove the checkpoints once the final model is saved (they hold optimizer states: 3x the weights)."""
    if not keep:
        shutil.rmtree(checkpoint_dir(output), ignore_errors=True)
