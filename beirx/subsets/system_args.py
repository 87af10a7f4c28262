"""Systems named on the command line for pooling and checking: a registered retriever or a TREC run file.

Spelling (one word each, so lists stay shell-friendly):

- ``bm25``, ``dense``: a retriever with its defaults;
- ``dense:MODEL``: the retriever's ``model`` (a folder or Hub id);
- ``bm25:fields=flat``, ``dense:model=M,backend=onnx,quantize=int8``: the retriever's parameters (those of
  its ``beirx eval`` flags, by constructor name), read as its flags read them (a number's range, NaN and infinity
  refused); a key the constructor does not take is refused here, naming the keys it does take;
- a path to an existing TREC run file.

Fusions and rerankers are described in a grid file's ``[[systems]]`` instead
(:func:`beirx.evaluate.plan.systems_from_config`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beirx.argtypes import OptionValueError, key_value
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
    """The system ``spec`` names (see the module doc); unknown names list the choices; parameters are checked
    as the retriever's flags check them (:func:`beirx.evaluate.params.checked_params`), before any work."""
    from beirx.evaluate.params import checked_params

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
            except OptionValueError as error:
                raise BeirxError(f"system {spec!r}: {error} after ':'") from None
            params[key] = value
    return SystemSpec(name, checked_params(RETRIEVERS.get(name), params, f"system {spec!r}", loose=_number))


def parse_pool(specs: list[str]) -> dict[str, System]:
    """Pooling systems by their spelling (recorded as such in the manifest)."""
    if len(set(specs)) != len(specs):
        raise BeirxError("a pooling system is given twice")
    systems = {spec: parse_system(spec) for spec in specs}
    refuse_repeats(systems)
    return systems


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


def refuse_repeats(systems: dict[str, System]) -> None:
    """Refuse a system given twice under two names: a run file by content (another path, a link, a copy), a
    retriever by its checked parameters (``bm25:k1=1.2`` and ``bm25:k1=1.20``). Counted twice, it would make
    pooling or a ranking check agree with itself."""
    from beirx.checksums import corpus_checksum

    seen: dict[Any, tuple[str, System]] = {}
    for name, system in systems.items():
        if isinstance(system, RunFileSpec):
            key: Any = ("run", corpus_checksum(Path(system.path)))
        elif isinstance(system, SystemSpec):
            key = ("retriever", system.retriever, tuple(sorted((k, repr(v)) for k, v in system.params.items())))
        else:
            continue
        if key in seen:
            first, earlier = seen[key]
            if isinstance(system, RunFileSpec):
                raise BeirxError(f"{system.path} is the same run as {earlier.path} (identical content): a system "
                                 "counted twice makes the systems agree with themselves; give each run once")
            raise BeirxError(f"system {_spelling(name, system)!r} is the same system as {_spelling(first, earlier)!r}: a "
                             "system counted twice makes the systems agree with themselves; give each once")
        seen[key] = (name, system)


def _spelling(name: str, system: System) -> str:
    return system.name or name
