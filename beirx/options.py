"""A component's options, declared once (as ir_measures' providers declare their parameter specs).

A translator, retriever, reranker, quality method or LLM connection lists its options as :class:`Option`
records: the parameter it sets, how a value is read (an :mod:`beirx.argtypes` type: a number's range, NaN and
infinity refused, or a tuple of choices), the default, the help. Everything else is generated from that list:
the command-line flags (:mod:`beirx.cli.flags`, the only place that knows argparse), and the reading of a
system's spelling (``bm25:k1=0.9``), a grid or suite file or code (:func:`read_options`), so a value is refused
by one rule wherever it comes from, naming the option.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from beirx.argtypes import read_option
from beirx.errors import BeirxError


@dataclass(frozen=True)
class Option:
    """One option of a component.

    ``name`` is the constructor parameter (or record field) it sets. ``type`` reads a value given as text (an
    argparse type of :mod:`beirx.argtypes`; None keeps the text); ``choices`` limits it to named values.
    ``flag`` is its command-line spelling (default ``--`` + ``name`` with dashes; ``""``: no flag, a file or a
    system's spelling sets it); ``aliases`` are older flags still accepted (whole, never prefixed). ``switch`` makes it a flag that
    takes no value (True when given); ``repeat`` collects every use of the flag in a list.
    """

    name: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] | None = None
    flag: str | None = None
    aliases: tuple[str, ...] = ()
    switch: bool = False
    repeat: bool = False
    metavar: str | None = None

    def flag_name(self, prefix: str = "") -> str | None:
        """The command-line flag (``prefix`` goes after the dashes: ``judge-`` makes ``--judge-base-url``), None
        when the option has no flag."""
        if self.flag == "":
            return None
        spelling = self.flag.removeprefix("--") if self.flag else self.name.replace("_", "-")
        return f"--{prefix}{spelling}"

    def read(self, value: Any, where: str = "") -> Any:
        """``value`` checked as its flag would check it; a bad one is a :class:`~beirx.errors.BeirxError` naming
        the option after ``where``. Values already of the right kind (numbers from a TOML file) are read the same."""
        if value is None:
            return None
        if self.choices is not None:
            if value not in self.choices:
                raise BeirxError(f"{where}option {self.name}: must be one of {', '.join(self.choices)}, "
                                 f"got {value!r}")
            return value
        if self.switch and isinstance(value, bool):
            return value
        if self.type is None:
            return value
        return read_option(self.name, value, self.type, where)


def by_name(options: Iterable[Option]) -> dict[str, Option]:
    return {option.name: option for option in options}


def defaults(options: Iterable[Option]) -> dict[str, Any]:
    """Every option's default, by name."""
    return {option.name: option.default for option in options}


def read_options(options: Iterable[Option], values: Mapping[str, Any], where: str = "",
                 unknown: str = "refuse") -> dict[str, Any]:
    """``values`` (from a file, a system's spelling or code) read by their options; a key no option declares is
    refused naming the keys there are (``unknown="refuse"``) or passed through untouched (``"keep"``)."""
    declared = by_name(options)
    read = {}
    for key, value in values.items():
        option = declared.get(key)
        if option is None:
            if unknown == "keep":
                read[key] = value
                continue
            raise BeirxError(f"{where}no option {key!r}; the options are {', '.join(sorted(declared))}")
        read[key] = option.read(value, where)
    return read
