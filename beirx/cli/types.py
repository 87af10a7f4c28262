"""The value types of :mod:`beirx.argtypes` as argparse types: a refused value becomes argparse's
``ArgumentTypeError``, so ``beirx eval --top-k 0`` says ``argument --top-k: must be at least 1, got 0`` and exits 2.

Command modules import their flag types from here; components declare theirs with :mod:`beirx.argtypes` in
their :class:`~beirx.options.Option` records, and :mod:`beirx.cli.flags` wraps them with :func:`for_argparse`.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

from beirx import argtypes
from beirx.argtypes import OptionValueError


def for_argparse(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` raising argparse's error for the values it refuses (the message kept, the name kept for
    argparse's own "invalid NAME value" of other errors)."""
    @functools.wraps(parse)
    def wrapped(text: str):
        try:
            return parse(text)
        except OptionValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return wrapped


def checked(kind, holds, requirement: str, name: str) -> Callable[[str], Any]:
    """:func:`beirx.argtypes.checked` as an argparse type."""
    return for_argparse(argtypes.checked(kind, holds, requirement, name))


positive_int = for_argparse(argtypes.positive_int)
non_negative_int = for_argparse(argtypes.non_negative_int)
non_negative_float = for_argparse(argtypes.non_negative_float)
positive_float = for_argparse(argtypes.positive_float)
unit_float = for_argparse(argtypes.unit_float)
unit_weight = for_argparse(argtypes.unit_weight)
output_dir = for_argparse(argtypes.output_dir)
comma_list = for_argparse(argtypes.comma_list)
key_value = for_argparse(argtypes.key_value)
count_or_all = for_argparse(argtypes.count_or_all)
seed = for_argparse(argtypes.seed)
significance_level = for_argparse(argtypes.significance_level)
agreement = for_argparse(argtypes.agreement)
metric_name = for_argparse(argtypes.metric_name)
metric_names = for_argparse(argtypes.metric_names)
port_number = for_argparse(argtypes.port_number)
rating = for_argparse(argtypes.rating)
