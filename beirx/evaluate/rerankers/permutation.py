"""Reading an LLM's ranking answer (``[3] > [1] > [2]``) into a permutation of a window, whatever it wrote.

LLMs, small ones especially, answer RankGPT's prompt with missing identifiers, repeated ones, numbers that
are not identifiers at all, or prose. The answer is read as RankGPT reads it (Sun et al., 2023), made
stricter and counted:

- identifiers are the bracketed numbers ``[n]`` of the answer; an answer without any brackets falls back to
  every bare number in it;
- an identifier outside ``1..size`` is *unknown* and skipped; a repeat of one already read is *repeated* and
  skipped;
- identifiers never mentioned are *missing*: they follow the ranked ones in their original order, so an
  empty or unreadable answer leaves the window as it was.

:class:`PermutationStats` sums these counts over windows; a window with any of them is *malformed*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BRACKETED = re.compile(r"\[\s*(\d+)\s*\]")
_NUMBER = re.compile(r"\d+")


@dataclass
class Permutation:
    """``order``: 0-based window positions, best first (every position once); the anomalies found reading it."""

    order: list[int]
    missing: int = 0
    repeated: int = 0
    unknown: int = 0

    @property
    def malformed(self) -> bool:
        return bool(self.missing or self.repeated or self.unknown)


def parse_permutation(answer: str, size: int) -> Permutation:
    """The permutation of a window of ``size`` passages that ``answer`` describes (see the module docstring)."""
    numbers = _BRACKETED.findall(answer) or _NUMBER.findall(answer)
    order: list[int] = []
    seen: set[int] = set()
    repeated = unknown = 0
    for text in numbers:
        position = int(text) - 1
        if not 0 <= position < size:
            unknown += 1
        elif position in seen:
            repeated += 1
        else:
            seen.add(position)
            order.append(position)
    missing = [p for p in range(size) if p not in seen]
    return Permutation(order + missing, missing=len(missing), repeated=repeated, unknown=unknown)


@dataclass
class PermutationStats:
    """Counts over every window an LLM ranked (recorded in results as the reranker's ``usage``)."""

    windows: int = 0
    malformed_windows: int = 0
    missing_ids: int = 0
    repeated_ids: int = 0
    unknown_ids: int = 0
    truncated_answers: int = 0  # answers cut by max_tokens (finish_reason "length")
    refused_windows: int = 0  # windows the server refused (kept in their input order)

    def add(self, permutation: Permutation, truncated: bool = False) -> None:
        self.windows += 1
        self.malformed_windows += permutation.malformed
        self.missing_ids += permutation.missing
        self.repeated_ids += permutation.repeated
        self.unknown_ids += permutation.unknown
        self.truncated_answers += truncated
