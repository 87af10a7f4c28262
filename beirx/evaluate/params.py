"""A backend's parameters as a system's spelling (``bm25:k1=0.9``) or a grid file gives them, checked before any
work with the rule its ``beirx eval`` flag uses.

A retriever or reranker declares its typed parameters once (``PARAMS``, and a reranker's ``FLAGS``): an argparse
type of :mod:`beirx.argtypes` (a number's range, NaN and infinity refused) or a tuple of choices. Its flags are
declared with the same types, so ``--k1 nan``, ``--check bm25:k1=nan`` and ``k1 = nan`` in a grid file are refused
by one rule, naming the parameter; a key the constructor does not take is refused naming those it takes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from beirx.argtypes import read_option
from beirx.errors import BeirxError


def checked_params(cls: Any, params: Mapping[str, Any], owner: str | None = None,
                   loose: Callable[[Any], Any] = lambda value: value) -> dict[str, Any]:
    """``params`` for the backend class ``cls`` (its ``param_types()`` and ``INTERNAL``), each declared value read
    with its type or checked against its choices, the others passed through ``loose``; ``owner`` starts every
    message (``system 'bm25:k1=nan': option k1: expected a finite number, got 'nan'``)."""
    where = f"{owner}: " if owner else ""
    signature = inspect.signature(cls.__init__)
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        allowed = sorted(set(signature.parameters) - {"self", *cls.INTERNAL})
        for key in params:
            if key not in allowed:
                raise BeirxError(f"{where}{cls.name} has no parameter {key!r}; its keys are {', '.join(allowed)}")
    types = cls.param_types()
    checked = {}
    for key, value in params.items():
        kind = types.get(key)
        if kind is None:
            checked[key] = loose(value)
        elif isinstance(kind, tuple):
            if value not in kind:
                raise BeirxError(f"{where}option {key}: must be one of {', '.join(kind)}, got {value!r}")
            checked[key] = value
        else:
            checked[key] = read_option(key, value, kind, where)
    return checked
