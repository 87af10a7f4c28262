"""Apertium: rule-based MT from the Debian packages (``sudo apt-get install apertium apertium-eng-spa``), offline.

Pairs are the installed *modes* (``apertium -l``): ``eng-spa`` serves en→es, ``eng-cat`` en→ca,
``en-gl`` en→gl. ISO 639-1 codes are matched to a mode's two- or three-letter codes; ``--model`` picks a
mode by name (e.g. ``eng-cat_valencia`` for the Valencian variant).

Batching: one ``apertium`` process per batch (starting one loads every transducer, ~0.2 s), segments
joined by a separator line ``⁂`` with blank lines around it. In the default ``txt`` format a blank line
is a sentence end for Apertium (it inserts, then removes, a full stop), so no transfer rule reaches across
segments, and the separator line comes back unchanged; the output is split on it and the number of
pieces checked, else the batch fails loudly. Unknown words are not marked with ``*`` (``-u``) unless the
option ``mark_unknown=true`` is given. The txt format escapes Apertium's stream characters, so ``.``,
brackets and ``<`` survive.

Determinism: Apertium's part-of-speech tagger carries some state from one sentence to the next (on
SciFact sentences about 2-3% of translations change with the sentences before them, with or without
null-flush mode). A batch's output is a pure function of its text, and the pipeline plans its batches
before consulting the memory, so rerunning a command reproduces the same bytes.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from beirx.errors import BeirxError
from beirx.translate.backends.base import Translator, setting

log = logging.getLogger(__name__)

SEPARATOR = "⁂"
_JOIN = f"\n\n{SEPARATOR}\n\n"
_SPLIT = re.compile(rf"\s*\n{SEPARATOR}\n\s*")

# Apertium names Serbo-Croatian pairs with the macrolanguage code.
_APERTIUM_ALIASES = {"hr": "hbs", "sr": "hbs", "bs": "hbs"}


def codes(lang: str) -> list[str]:
    """The names Apertium may use for ``lang``: as given, and ISO 639-3 (``es`` -> ``spa``)."""
    from beirx.language_packs import get_pack

    names = [lang, _APERTIUM_ALIASES.get(lang), get_pack(lang).iso3]
    return list(dict.fromkeys(n for n in names if n))


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in {"1", "true", "yes", "on"}


class ApertiumTranslator(Translator):
    """Options: ``mark_unknown`` (keep Apertium's ``*`` marks, default false), ``datadir`` (``apertium -d``),
    ``binary`` (the ``apertium`` executable)."""

    name = "apertium"
    max_batch_size = 4000  # ~90k words, several seconds: process start-up stays a few per cent
    keeps_placeholders = True  # ⟦0⟧ passes through as an unknown word
    OPTIONS = (setting("mark_unknown", default=False, help="mark unknown words with * (true/false)"),
               setting("datadir", help="folder of locally built Apertium language pairs"),
               setting("binary", default="apertium", help="the Apertium engine"))

    def __init__(self, src: str, tgt: str, model: str | None = None, *, mark_unknown: Any = False,
                 datadir: str | None = None, binary: str = "apertium", **options: Any):
        super().__init__(src, tgt, model, **options)
        self.binary = shutil.which(binary)
        if self.binary is None:
            raise BeirxError(f"the Apertium engine ({binary!r}) is not installed; {install_hint(src, tgt, engine=True)}")
        self.datadir = datadir
        self.mark_unknown = _truthy(mark_unknown)
        modes = installed_modes(self.binary, datadir)
        self.mode = model or find_mode(src, tgt, modes)
        if self.mode not in modes:
            raise BeirxError(f"Apertium mode {self.mode!r} is not installed; installed: {', '.join(modes) or 'none'}")

    def _command(self) -> list[str]:
        cmd = [self.binary]
        if self.datadir:
            cmd += ["-d", self.datadir]
        if not self.mark_unknown:
            cmd.append("-u")
        return cmd + ["-f", "txt", self.mode]

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.mode, "revision": self.revision(),
                "engine": engine_version(self.binary), "mark_unknown": self.mark_unknown, "format": "txt",
                "separator": SEPARATOR}

    def revision(self) -> str:
        return data_revision(self.mode, self.datadir)

    def translate_batch(self, segments: list[str]) -> list[str]:
        if not segments:
            return []
        # Segments never hold line breaks (the pipeline's segmenter); direct callers get them flattened.
        text = _JOIN.join(re.sub(r"\s*\n\s*", " ", s) for s in segments)
        proc = subprocess.run(self._command(), input=text.encode("utf-8"), capture_output=True)
        if proc.returncode != 0:
            raise BeirxError(f"apertium {self.mode} failed (exit {proc.returncode}): "
                             f"{proc.stderr.decode('utf-8', 'replace').strip()[:500]}")
        pieces = _SPLIT.split(proc.stdout.decode("utf-8").strip())
        if len(pieces) != len(segments):
            raise BeirxError(f"apertium {self.mode}: the separator line {SEPARATOR!r} did not round-trip "
                             f"({len(pieces)} pieces for {len(segments)} segments)")
        return [p.strip() for p in pieces]


@functools.cache
def installed_modes(binary: str = "apertium", datadir: str | None = None) -> tuple[str, ...]:
    """Mode names ``apertium -l`` lists (e.g. ``eng-spa``, ``en-gl``)."""
    cmd = [binary, *(["-d", datadir] if datadir else []), "-l"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return tuple(line.strip() for line in proc.stdout.splitlines() if line.strip())


def find_mode(src: str, tgt: str, modes: tuple[str, ...]) -> str:
    """The installed mode for ``src``→``tgt``: ``en-gl`` or ``eng-spa`` (no variant suffix such as ``_US``)."""
    for name in (f"{s}-{t}" for s in codes(src) for t in codes(tgt)):
        if name in modes:
            return name
    pairs = ", ".join(m for m in modes if "_" not in m) or "none"
    raise BeirxError(f"no Apertium pair for {src}->{tgt} is installed (installed: {pairs}); "
                     f"{install_hint(src, tgt)}, or name an installed mode with --model")


def debian_package(src: str, tgt: str) -> str | None:
    """The Debian/Ubuntu package of Apertium data for ``src`` and ``tgt`` (either order in its name), as
    ``apt-cache`` lists it, else None. Of two names for one pair (``apertium-en-es`` is a transitional package
    for ``apertium-eng-spa``) the longer, current one."""
    apt_cache = shutil.which("apt-cache")
    if apt_cache is None:
        return None
    proc = subprocess.run([apt_cache, "search", "--names-only", "^apertium-"], capture_output=True, text=True)
    wanted = {frozenset((s, t)) for s in codes(src) for t in codes(tgt)}
    names = [line.split(" - ")[0].strip() for line in proc.stdout.splitlines()]
    found = [n for n in names if frozenset(n.removeprefix("apertium-").split("-")) in wanted]
    return max(found, key=len, default=None)


def install_hint(src: str, tgt: str, *, engine: bool = False) -> str:
    """What to install for ``src``->``tgt``: the apt-get line naming a package Debian has, or, when it has
    none, that it has none (guessing a name would send the user to a package that does not exist)."""
    package = debian_package(src, tgt)
    if package:
        return f"on Debian/Ubuntu: sudo apt-get install {'apertium ' if engine else ''}{package}"
    return (f"Debian/Ubuntu have no Apertium package for {src}->{tgt} (apt-cache search apertium lists the pairs "
            f"they have); use another --translator (hf, ctranslate2, openai ...)")


@functools.cache
def data_revision(mode: str, datadir: str | None = None) -> str:
    """SHA-256 over the mode file and every data file it names: changes when the package is upgraded."""
    mode_file = _mode_file(mode, datadir)
    if mode_file is None:
        return "unknown"
    h = hashlib.sha256(mode_file.read_bytes())
    for path in sorted(set(re.findall(r"'(/[^']+)'", mode_file.read_text(encoding="utf-8")))):
        if Path(path).is_file():
            h.update(path.encode() + b"\0" + Path(path).read_bytes())
    return "sha256:" + h.hexdigest()[:16]


def _mode_file(mode: str, datadir: str | None) -> Path | None:
    roots = [Path(datadir)] if datadir else [Path("/usr/share/apertium"), Path("/usr/local/share/apertium")]
    for root in roots:
        for candidate in (root / "modes" / f"{mode}.mode", root / f"{mode}.mode"):
            if candidate.is_file():
                return candidate
    return None


@functools.cache
def engine_version(binary: str) -> str:
    proc = subprocess.run([binary, "-V"], capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"
