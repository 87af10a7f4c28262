"""``--glossary FILE``: terms the LLM must translate a fixed way, or leave untranslated.

One entry per line, ``term TAB translation``, or a term alone (keep it as is: a gene, drug or product name);
blank lines and lines starting with ``#`` are skipped. Only the entries whose term occurs in a unit go into
its prompt (whole words, case-insensitive), and the output is checked for them (:meth:`Glossary.missing`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from beirx.errors import BeirxError, DataError


@dataclass(frozen=True)
class Glossary:
    entries: tuple[tuple[str, str | None], ...]  # (term, translation or None = keep the term)
    sha256: str
    path: str

    @classmethod
    def load(cls, path: Path | str) -> Glossary:
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise BeirxError(f"cannot read the glossary {path}: {exc.strerror or exc}") from None
        entries = []
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(path, f"the glossary is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                                  "save it as UTF-8", raw[:exc.start].count(b"\n") + 1) from None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            term, _, translation = line.partition("\t")
            if not term.strip() or "\t" in translation:
                raise DataError(path, "expected 'term TAB translation' or a term alone", number)
            entries.append((term.strip(), translation.strip() or None))
        return cls(tuple(entries), "sha256:" + hashlib.sha256(raw).hexdigest(), str(path))

    def relevant(self, source: str) -> list[tuple[str, str | None]]:
        """The entries whose term occurs in ``source`` as a whole word (case-insensitive)."""
        return [(t, tr) for t, tr in self.entries
                if re.search(rf"(?<!\w){re.escape(t)}(?!\w)", source, re.IGNORECASE)]

    def missing(self, source: str, output: str) -> list[str]:
        """Terms of ``source`` whose required rendering (translation, or the term kept) is absent from ``output``."""
        low = output.lower()
        return [term for term, translation in self.relevant(source) if (translation or term).lower() not in low]

    def describe(self) -> dict[str, object]:
        return {"file": self.path, "sha256": self.sha256, "entries": len(self.entries)}
