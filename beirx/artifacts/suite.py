"""The state of a suite build (``suite.json`` in the suite's output folder): which steps are done, from what.

``beirx suite build`` runs subset -> translate -> quality -> publish for every dataset and language, then
writes the MTEB benchmark. After each step it records the step here (atomically): what it was run from (a
fingerprint of the suite file's settings for that step and of its input's checksum), where its output is and
that output's checksum. A rerun skips a step whose record matches and whose output still has that checksum,
and runs every other step again (an interrupted translation resumes from its translation memory), so a build
killed at any point finishes with the same outputs as one that was never interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from beirx.artifacts.base import Artifact, fld, optional, utc_now

SCHEMA = "beirx.suite/1"
FILENAME = "suite.json"


@dataclass(kw_only=True)
class SuiteStep:
    """One finished step."""

    step: Literal["subset", "check", "translate", "quality", "publish", "benchmark"] = fld("which step")
    dataset: str | None = fld("the dataset (as the suite file names it); null for the benchmark")
    language: str | None = fld("the target language; null for steps before translation and for the benchmark")
    inputs: str = fld("fingerprint of the step's settings and its input's checksum")
    output: str = fld("the folder or file the step wrote")
    output_checksum: str = fld("checksum of that output when the step finished")
    seconds: float = fld("wall-clock seconds the step took")
    finished: str = fld("UTC time the step finished (ISO 8601)", default_factory=utc_now)
    details: dict[str, Any] = optional("counts and figures the step reported", default_factory=dict)


@dataclass(kw_only=True)
class SuiteState(Artifact):
    """``suite.json``: what a suite build has done so far."""

    SCHEMA = SCHEMA
    KIND = "suite state"

    schema_version: str = fld("format identifier", default=SCHEMA)
    kind: str = fld("always 'beirx suite'", default="beirx suite")
    name: str = fld("the suite's (benchmark's) name")
    config: str = fld("the suite file")
    steps: list[SuiteStep] = fld("finished steps, in the order they finished", default_factory=list)
    versions: dict[str, str] = fld("Python, platform and package versions of the last run", default_factory=dict)
    updated: str = fld("UTC time of the last change (ISO 8601)", default_factory=utc_now)

    @classmethod
    def path_in(cls, root: Path | str) -> Path:
        return Path(root) / FILENAME

    def find(self, step: str, dataset: str | None, language: str | None) -> SuiteStep | None:
        return next((s for s in self.steps if (s.step, s.dataset, s.language) == (step, dataset, language)), None)

    def record(self, entry: SuiteStep) -> None:
        """Replace the record of the same step (dataset, language) with ``entry``."""
        self.steps = [s for s in self.steps if (s.step, s.dataset, s.language) !=
                      (entry.step, entry.dataset, entry.language)] + [entry]
        self.updated = utc_now()
