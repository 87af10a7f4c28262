"""A backend's parameters as a system's spelling (``bm25:k1=0.9``) or a grid file gives them, checked before any
work with the rule its ``beirx eval`` flag uses.

A retriever or reranker declares its options once (``OPTIONS``, :class:`beirx.options.Option` records: a value
type of :mod:`beirx.argtypes`, a number's range, NaN and infinity refused, or a tuple of choices). Its flags are
generated from the same records, so ``--k1 nan``, ``--check bm25:k1=nan`` and ``k1 = nan`` in a grid file are
refused by one rule, naming the option; a key the constructor does not take is refused naming those it takes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from beirx.errors import BeirxError
from beirx.options import by_name


def checked_params(cls: Any, params: Mapping[str, Any], owner: str | None = None,
                   loose: Callable[[Any], Any] = lambda value: value) -> dict[str, Any]:
    """``params`` for the backend class ``cls`` (its ``OPTIONS`` and ``INTERNAL``), each value read by its option
    (its type or choices), those of an untyped option or none passed through ``loose``; ``owner`` starts every
    message (``system 'bm25:k1=nan': option k1: expected a finite number, got 'nan'``)."""
    where = f"{owner}: " if owner else ""
    signature = inspect.signature(cls.__init__)
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        allowed = sorted(set(signature.parameters) - {"self", *cls.INTERNAL})
        for key in params:
            if key not in allowed:
                raise BeirxError(f"{where}{cls.name} has no parameter {key!r}; its keys are {', '.join(allowed)}")
    options = by_name(cls.OPTIONS)
    checked = {}
    for key, value in params.items():
        option = options.get(key)
        if option is None or (option.type is None and option.choices is None):
            checked[key] = loose(value)
        else:
            checked[key] = option.read(value, where)
    return checked
