"""Command-line flags generated from components' :class:`~beirx.options.Option` records, and the values read back.

The one place outside argparse's own users that turns a declaration into flags: a component never sees
``argparse`` or the parsed namespace, it receives the dictionary :func:`given` returns. Flags default to None,
so "not given" is visible and the component's declared default applies (the help quotes it); a value that
reads as None (``--roundtrip-sample all``: every row) is given, and :func:`given` returns it as None.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from beirx.cli.types import for_argparse
from beirx.options import Option


class _ReadAsNone:
    """What a flag holds when its value reads as None, so it is told apart from a flag not given (None)."""

    def __repr__(self) -> str:
        return "None"


READ_AS_NONE = _ReadAsNone()


def _type(option: Option):
    """``option``'s type for argparse: refusals as argparse errors, a None result as :data:`READ_AS_NONE`."""
    parse = for_argparse(option.type)

    def read(text: str):
        value = parse(text)
        return READ_AS_NONE if value is None else value

    read.__name__ = getattr(option.type, "__name__", "value")
    return read


def dest(option: Option, prefix: str = "") -> str | None:
    """The namespace attribute of ``option``'s flag (None: no flag)."""
    flag = option.flag_name(prefix)
    return None if flag is None else flag.removeprefix("--").replace("-", "_")


def add_options(group, options: Iterable[Option], prefix: str = "", owner: str = "",
                seen: set[str] | None = None) -> None:
    """Add a flag for each option to ``group`` (an argparse parser or group); ``owner`` starts each help text
    (``bm25: ``), ``prefix`` goes into each flag (``judge-``). A flag already in ``seen`` (options several
    components share, as ``--batch-size``) is added once."""
    for option in options:
        flag = option.flag_name(prefix)
        if flag is None or (seen is not None and flag in seen):
            continue
        if seen is not None:
            seen.add(flag)
        text = f"{owner}: {option.help}" if owner else option.help
        if option.default not in (None, False, "", ()) and not option.switch:
            text += f" (default {option.default})"
        how: dict[str, Any] = {"help": text, "dest": dest(option, prefix), "default": None}
        if option.switch:  # on by default: --no-FLAG turns it off
            how["action"] = argparse.BooleanOptionalAction if option.default is True else "store_true"
        else:
            if option.choices is not None:
                how["choices"] = option.choices
            elif option.type is not None:
                how["type"] = _type(option)
            if option.repeat:
                how["action"] = "append"
            if option.metavar:
                how["metavar"] = option.metavar
        group.add_argument(flag, *option.aliases, **how)


def given(args: argparse.Namespace, options: Iterable[Option], prefix: str = "") -> dict[str, Any]:
    """The options whose flags were given, by option name (a switch counts when set; one on by default, when
    turned off with ``--no-FLAG``)."""
    values = {}
    for option in options:
        name = dest(option, prefix)
        value = None if name is None else getattr(args, name, None)
        if value is READ_AS_NONE:
            values[option.name] = None
        elif value is not None and (value is not False or option.default is True):
            values[option.name] = value
    return values
