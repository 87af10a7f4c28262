"""Value types of options (range-checked numbers, an output folder, comma lists, ``KEY=VALUE`` options), so a bad
value fails before any work and a flag, a file and code read a value the same way.

A bad value raises :class:`OptionValueError`; :mod:`beirx.cli.types` hands the same types to argparse, which
reports a failed one as ``beirx eval: error: argument --top-k: ...`` with exit code 2.
"""

from __future__ import annotations

import math
from pathlib import Path

from beirx.path_problems import write_problem


class OptionValueError(ValueError):
    """A value an option's type refuses; the message says what it must be and what it got."""


def _number(kind, text: str):
    try:
        value = kind(text)
    except ValueError:
        raise OptionValueError(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") \
            from None
    if kind is float and not math.isfinite(value):
        raise OptionValueError(f"expected a finite number, got {text!r}")
    return value


def checked(kind, holds, requirement: str, name: str):
    """A value type: a number of ``kind`` for which ``holds(value)``, else "must be ``requirement``"."""
    def parse(text: str):
        value = _number(kind, text)
        if not holds(value):
            raise OptionValueError(f"must be {requirement}, got {value}")
        return value

    parse.__name__ = parse.__qualname__ = name
    return parse


positive_int = checked(int, lambda v: v >= 1, "at least 1", "positive_int")
non_negative_int = checked(int, lambda v: v >= 0, "0 or more", "non_negative_int")
non_negative_float = checked(float, lambda v: v >= 0, "0 or more", "non_negative_float")
positive_float = checked(float, lambda v: v > 0, "more than 0", "positive_float")
unit_float = checked(float, lambda v: 0 <= v <= 1, "between 0 and 1", "unit_float")
"""A number in [0, 1] (BM25's b)."""
unit_weight = checked(float, lambda v: 0 < v <= 1, "more than 0 and at most 1", "unit_weight")
"""A weight in (0, 1] (a reranker's share of an interpolated score)."""


def read_option(key: str, value, parse, where: str = ""):
    """``value`` (from a file, a system's spelling or code) read with the value type ``parse`` (e.g.
    :data:`non_negative_float`); a bad one is a :class:`~beirx.errors.BeirxError` naming the option after
    ``where`` (``"system 'bm25:k1=nan': "``, ``"[subset] "``), as a flag's error names the flag."""
    from beirx.errors import BeirxError

    try:
        return parse(str(value))
    except OptionValueError as exc:
        raise BeirxError(f"{where}option {key}: {exc}") from None


def option(owner: str, name: str, value, parse, default=None):
    """A backend option (``--translator-option NAME=VALUE``, a number from a file or code) read as
    :func:`read_option` reads it, the message starting with ``owner``; None or an empty value is ``default``."""
    if value is None or value == "":
        return default
    return read_option(name, value, parse, f"{owner}: ")


def output_dir(text: str) -> Path:
    """A folder to write into: absent (it is created) or an existing folder, never a file; checked writable
    (a read-only file system, a folder without permission, a broken symbolic link) before any work."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise OptionValueError(f"{text}: exists and is not a folder")
    problem = write_problem(path)
    if problem:
        raise OptionValueError(f"{text}: cannot write there: {problem}")
    return path


def comma_list(text: str) -> list[str]:
    """A comma-separated list (``corpus,queries``), items stripped, empty items dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def key_value(text: str) -> tuple[str, str | bool]:
    """One ``KEY=VALUE`` backend option (repeatable flags collect them: ``dict(args.x)``). Values stay strings
    for the backend to convert, except ``true``/``false``, which become booleans."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise OptionValueError(f"expected KEY=VALUE, got {text!r}")
    value = value.strip()
    return key.strip(), {"true": True, "false": False}.get(value.lower(), value)


def count_or_all(text: str) -> int | None:
    """A positive count, or ``all`` (None): how many rows a sampled step covers."""
    return None if text == "all" else positive_int(text)


seed = checked(int, lambda v: 0 <= v < 2 ** 32, "between 0 and 2**32 - 1", "seed")
"""A random seed, in the range every generator beirx seeds takes (numpy's is the narrowest)."""
significance_level = checked(float, lambda v: 0 < v < 1, "more than 0 and less than 1", "significance_level")
"""A test's alpha."""
agreement = checked(float, lambda v: -1 <= v <= 1, "between -1 and 1", "agreement")
"""A chance-corrected agreement such as Krippendorff's alpha."""


def metric_name(text: str) -> str:
    """A metric beirx computes, ``MEASURE@k`` (:meth:`beirx.artifacts.results.MetricKey.named`: ``NDCG@10``, and
    ir_measures' spellings such as ``nDCG@10`` or ``R@100``), as results files name it."""
    from beirx.artifacts.results import MetricKey

    try:
        return str(MetricKey.named(text))
    except ValueError as exc:
        raise OptionValueError(str(exc)) from None


def metric_names(text: str) -> list[str]:
    """A comma-separated list of :func:`metric_name`."""
    return [metric_name(item) for item in comma_list(text)]


port_number = checked(int, lambda v: 1 <= v <= 65535, "a TCP port, between 1 and 65535", "port_number")
rating = checked(float, lambda v: 1 <= v <= 5, "between 1 and 5", "rating")
"""A value on the review's 1-5 rating scales."""
