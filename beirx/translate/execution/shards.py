"""Batches as the unit of work, and their deterministic partition into shards.

A run's batches are the length-sorted unique segments cut every ``batch_size`` (see
:mod:`beirx.translate.pipeline`). A batch is named by the SHA-256 of its segments' hashes; shard ``I/N``
owns the batches whose name, as a number, is ``I - 1`` modulo ``N``. Every shard plans the same batches
and translates only its own, so a backend whose output depends on the batch (Apertium's tagger, padding in
NMT) gives the same bytes as a single process. Each shard commits into its own memory file beside the
main one (``memory.shard-2-of-3.sqlite``), which makes it resumable on its own and lets any scheduler
(a Slurm array, a job queue) run it; ``--assemble`` merges those files and writes the dataset.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from beirx.errors import BeirxError
from beirx.translate.translation_memory import segment_hash


def batch_key(segments: list[str]) -> str:
    """The name of a batch: SHA-256 over its segments' hashes, in order."""
    h = hashlib.sha256()
    for s in segments:
        h.update(segment_hash(s).encode("ascii"))
    return h.hexdigest()


def shard_of(key: str, count: int) -> int:
    """The 1-based shard (of ``count``) that owns the batch named ``key``."""
    return int(key[:16], 16) % count + 1


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/3"`` -> shard 2 of 3."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
            raise BeirxError(f"--shard expects I/N with 1 <= I <= N (e.g. 2/3), got {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, key: str) -> bool:
        return shard_of(key, self.count) == self.index

    def memory_path(self, memory: Path | str) -> Path:
        """This shard's memory file beside ``memory``."""
        memory = Path(memory)
        return memory.with_name(f"{memory.stem}.shard-{self.index}-of-{self.count}{memory.suffix}")


def shard_count(memory: Path | str) -> int:
    """N, from the shard memory files found beside ``memory`` (for ``--assemble`` without a count)."""
    memory = Path(memory)
    pattern = re.compile(rf"{re.escape(memory.stem)}\.shard-\d+-of-(\d+){re.escape(memory.suffix)}")
    counts = {int(m.group(1)) for p in memory.parent.glob(f"{memory.stem}.shard-*") if (m := pattern.fullmatch(p.name))}
    if not counts:
        raise BeirxError(f"no shard memories ({memory.stem}.shard-I-of-N{memory.suffix}) found in {memory.parent}; "
                         "run the shards first (--shard I/N) or pass the count: --assemble N")
    if len(counts) > 1:
        raise BeirxError(f"shard memories of several runs ({', '.join(f'of {n}' for n in sorted(counts))}) are in "
                         f"{memory.parent}; name the count: --assemble N")
    return counts.pop()
