"""Versioned prompt files: beirx's defaults ship as TOML package files; a user file overrides any of them.

A prompt is part of what produced an output, as much as the model: it is recorded (version, SHA-256 and
file) in every artifact and is part of the translation memory's key, so changing one word of a prompt
never serves answers written for the old one. A user file (``--prompt-file``) is merged over the
defaults key by key (tables recursively), so it may hold only the prompts it changes; the SHA-256 is over
the merged prompts (canonical JSON), i.e. exactly what is sent.

Templates are filled with :meth:`PromptFile.fill` (``str.format`` fields such as ``{text}``; a literal brace is
written ``{{``); an unknown field is an error naming the file and the key.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from beirx.errors import BeirxError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_MISSING = object()


@dataclass(frozen=True)
class PromptFile:
    """The effective prompts: ``data`` (merged), their ``sha256``, ``version`` and where they came from."""

    data: dict[str, Any]
    sha256: str
    version: str
    source: str

    @classmethod
    def load(cls, package: str, resource: str, override: Path | str | None = None) -> PromptFile:
        """beirx's ``resource`` file inside ``package``, with the user's ``override`` file merged over it."""
        default_text = resources.files(package).joinpath(resource).read_text(encoding="utf-8")
        data = _parse(default_text, f"{package}/{resource}")
        source = f"beirx:{package}/{resource}"
        if override is not None:
            path = Path(override)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise BeirxError(f"cannot read the prompt file {path}: {exc.strerror or exc}") from None
            data = _merge(data, _parse(text, str(path)))
            source = f"{path} over {source}"
        version = data.get("version")
        if not isinstance(version, str) or not version:
            raise BeirxError(f"prompt file {source}: 'version' must be a non-empty string (name your edit, e.g. "
                             "'my-prompts-1')")
        canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return cls(data, "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest(), version, source)

    def get(self, *keys: str, default: Any = _MISSING) -> Any:
        """The value at ``keys`` (``get("chat", "system")``); a missing one is an error naming the file."""
        node: Any = self.data
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                if default is not _MISSING:
                    return default
                raise BeirxError(f"prompt file {self.source} has no {'.'.join(keys)}")
            node = node[key]
        return node

    def fill(self, *keys: str, **values: Any) -> str:
        """The template at ``keys`` filled with ``values`` (``str.format``); when it cannot be, the error of
        :meth:`check` (naming the template and the unknown field), else the formatting error."""
        try:
            return self.get(*keys).format_map(values)
        except (KeyError, ValueError, IndexError) as exc:
            self.check(keys, values)
            raise BeirxError(f"prompt file {self.source}: {'.'.join(keys)}: {exc}") from None

    def check(self, keys: tuple[str, ...], fields: Iterable[str], required: str | None = None) -> None:
        """Fail now, before any request, naming the file and the key, when the template at ``keys`` is not a
        string, uses a field beyond ``fields``, or lacks the ``required`` one."""
        where = f"prompt file {self.source}: {'.'.join(keys)}"
        template = self.get(*keys)
        if not isinstance(template, str):
            raise BeirxError(f"{where} must be a string, got {template!r}")
        try:
            names = {re.split(r"[.\[!:]", name)[0] for _, name, _, _ in string.Formatter().parse(template)
                     if name is not None}
        except ValueError as exc:
            raise BeirxError(f"{where}: {exc} (write a literal brace as {{{{ or }}}})") from None
        unknown = sorted(names - set(fields))
        if unknown:
            raise BeirxError(f"{where}: unknown field {{{unknown[0]}}}; known fields: "
                             f"{', '.join('{' + k + '}' for k in sorted(fields))}")
        if required and required not in names:
            raise BeirxError(f"{where} has no {{{required}}} field: the unit's {required} would never be sent")

    def describe(self) -> dict[str, str]:
        return {"prompt_version": self.version, "prompt_sha256": self.sha256, "prompt_source": self.source}


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BeirxError(f"prompt file {where} is not valid TOML: {exc}") from None


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) \
            else value
    return merged
