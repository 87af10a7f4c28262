"""Systems named on the command line for pooling and checking: a registered retriever or a TREC run file.

Spelling (one word each, so lists stay shell-friendly):

- ``bm25``, ``dense``: a retriever with its defaults;
- ``dense:MODEL``: the retriever's ``model`` (a folder or Hub id);
- ``bm25:fields=flat``, ``dense:model=M,backend=onnx,quantize=int8``: the retriever's parameters (those of
  its ``beirx eval`` flags, by constructor name; numbers and true/false are converted); a key the
  constructor does not take is refused here, naming the keys it does take;
- a path to an existing TREC run file.

Fusions and rerankers are described in a grid file's ``[[systems]]`` instead
(:func:`beirx.evaluate.plan.systems_from_config`).
"""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path
from typing import Any

from beirx.argtypes import key_value
from beirx.errors import BeirxError
from beirx.evaluate.retrievers import RETRIEVERS
from beirx.evaluate.specs import RunFileSpec, System, SystemSpec


def _number(value: str | bool) -> Any:
    """A retriever's constructor gets typed values: numbers become int or float (true/false are already bool)."""
    for kind in (int, float):
        try:
            return kind(value) if isinstance(value, str) else value
        except ValueError:
            continue
    return value


def parse_system(spec: str) -> System:
    """The system ``spec`` names (see the module doc); unknown names list the choices."""
    text = spec.strip()
    path = Path(text).expanduser()
    if path.is_file():
        return RunFileSpec(path)
    name, _, arg = text.partition(":")
    if name not in RETRIEVERS:
        raise BeirxError(f"system {spec!r} is neither an existing TREC run file nor a retriever "
                         f"({', '.join(RETRIEVERS.names())}, optionally with :MODEL or :key=value,...)")
    params: dict[str, Any] = {}
    if arg and "=" not in arg:
        params["model"] = arg
    elif arg:
        for item in arg.split(","):
            try:
                key, value = key_value(item)
            except argparse.ArgumentTypeError as error:
                raise BeirxError(f"system {spec!r}: {error} after ':'") from None
            params[key] = _number(value)
    _check_keys(spec, name, params)
    return SystemSpec(name, params)


# set by beirx itself when it builds a retriever, never by a system's spelling
_INTERNAL = {"self", "pack", "use_cache", "show_progress"}


def _check_keys(spec: str, name: str, params: dict[str, Any]) -> None:
    """Refuse keys the retriever's constructor does not take, before anything is indexed or written."""
    signature = inspect.signature(RETRIEVERS.get(name).__init__)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return
    allowed = sorted(set(signature.parameters) - _INTERNAL)
    for key in params:
        if key not in allowed:
            raise BeirxError(f"system {spec!r}: {name} has no parameter {key!r}; its keys are {', '.join(allowed)}")


def parse_pool(specs: list[str]) -> dict[str, System]:
    """Pooling systems by their spelling (recorded as such in the manifest)."""
    if len(set(specs)) != len(specs):
        raise BeirxError("a pooling system is given twice")
    return {spec: parse_system(spec) for spec in specs}


def parse_systems(specs: list[str]) -> dict[str, System]:
    """Systems by a unique label: the readable label, or the spec itself when two labels would be equal
    (``dense e5-small`` on torch and on ONNX)."""
    parsed = [(spec, parse_system(spec)) for spec in specs]
    labels = [system.label() for _, system in parsed]
    systems: dict[str, System] = {}
    for (spec, system), label in zip(parsed, labels):
        if labels.count(label) > 1:
            system.name = label = spec
        if label in systems:
            raise BeirxError(f"system {spec!r} is given twice")
        systems[label] = system
    return systems
