"""The base of every typed artifact: a dataclass that checks itself on load, writes itself atomically and
describes itself as a JSON Schema.

Why dataclasses and not dicts: a reader that writes ``doc.dataset.split`` fails loudly (an AttributeError, or
a :class:`~beirx.errors.DataError` when the file is loaded) the day a field is renamed, where
``doc["dataset"]["split"]`` on a dict silently read nothing. Loading walks the dataclass's type hints
(``str``, ``int``, ``float``, ``bool``, ``X | None``, ``Literal``, ``list[X]``, ``dict[str, X]``, nested
dataclasses, ``Any``) and names the file and the dotted field of the first problem::

    results/x.json: field 'dataset.split': expected str, got int

A field without a default is required in the file; a field declared with :func:`optional` (or whose type
admits ``None``) may be absent and takes its default. Unknown keys are refused, so a typo in a hand-written
file is reported rather than ignored. Older formats are upgraded by each artifact's ``_upgrade`` before the
check. The JSON Schema (draft 2020-12) is generated from the same type hints, so it cannot drift from the
code.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import math
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

from beirx.atomic import write_json
from beirx.errors import DataError

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def utc_now() -> str:
    """Every artifact's ``created`` timestamp: UTC, ISO 8601, whole seconds."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def fld(doc: str, default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING,
        optional: bool = False) -> Any:
    """A dataclass field with a description (for the schema and docs/schema.md).

    ``optional=True``: the key may be absent from a file (then the default is used).
    """
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata={"doc": doc, "optional": optional})


def optional(doc: str, default: Any = None, default_factory: Any = dataclasses.MISSING) -> Any:
    """A field that a file may leave out (``None`` unless another default is given)."""
    if default_factory is not dataclasses.MISSING:
        return fld(doc, default_factory=default_factory, optional=True)
    return fld(doc, default=default, optional=True)


class Artifact:
    """Mixin for the top-level artifact dataclasses (results document, manifest, quality report)."""

    SCHEMA: ClassVar[str]             # e.g. "beirx.results/2"
    SCHEMA_FIELD: ClassVar[str] = "schema_version"
    KIND: ClassVar[str]               # e.g. "results document", for messages
    PLACE: ClassVar[str | None] = None  # where it sits in a dataset folder, e.g. "quality/quality.json"

    @classmethod
    def path_in(cls, dataset_root: Path | str) -> Path:
        """Where the artifact of the dataset in ``dataset_root`` is written by default (its :attr:`PLACE`)."""
        if cls.PLACE is None:
            raise TypeError(f"{cls.__name__} has no default place in a dataset folder")
        return Path(dataset_root) / cls.PLACE

    # -- writing ------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data, keys in field order."""
        return _dump(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n"

    def save(self, path: Path | str) -> None:
        """Write the JSON file atomically (:func:`beirx.atomic.write_json`)."""
        write_json(path, self.to_dict())

    # -- reading ------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, source: Path | str | None = None):
        """Check ``data`` against the type hints (after upgrading an older format) and build the object.

        Errors are :class:`DataError` naming ``source`` (the file) and the dotted field.
        """
        where = str(source) if source is not None else f"<{cls.__name__}>"
        if not isinstance(data, dict):
            raise DataError(where, f"expected a JSON object, got {_json_type(data)}")
        return _build(cls, cls._upgrade(data, where), "", where)

    @classmethod
    def from_json(cls, text: str, source: Path | str | None = None):
        where = str(source) if source is not None else f"<{cls.__name__}>"
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DataError(where, f"not valid JSON: {exc}") from None
        return cls.from_dict(data, source=where)

    @classmethod
    def load(cls, path: Path | str):
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise DataError(path, f"cannot read the file: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise DataError(path, f"not valid UTF-8 (byte {exc.start + 1}): not a {cls.KIND} (a binary file?)") from None
        return cls.from_json(text, source=path)

    @classmethod
    def load_optional(cls, path: Path | str, consequence: str = "ignoring it"):
        """For readers to whom the artifact is optional provenance (reports, cards): the artifact, or None
        when the file is absent or malformed (logged with the file, the field and ``consequence``)."""
        path = Path(path)
        if not path.is_file():
            return None
        try:
            return cls.load(path)
        except DataError as exc:
            logging.getLogger(cls.__module__).warning("%s; %s", exc, consequence)
            return None

    @classmethod
    def load_if_any(cls, path: Path | str):
        """The artifact in ``path``, or None when the file is not one (not JSON, or another kind of document).

        A file that says it is one (its schema field names this artifact) but is malformed raises
        :class:`DataError`, so a broken file is reported rather than skipped.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not cls.claims(data):
            return None
        return cls.from_dict(data, source=path)

    @classmethod
    def claims(cls, data: dict[str, Any]) -> bool:
        """Whether ``data``'s schema field names this artifact (any version)."""
        found = data.get(cls.SCHEMA_FIELD)
        return isinstance(found, str) and found.split("/")[0] == cls.SCHEMA.split("/")[0]

    @classmethod
    def _upgrade(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        """Older formats -> the current one; the default accepts only the current schema."""
        found = data.get(cls.SCHEMA_FIELD)
        if found != cls.SCHEMA:
            what = f"a newer or unknown version ({found!r})" if cls.claims(data) else f"not a beirx {cls.KIND}"
            raise DataError(source, f"{what}: field '{cls.SCHEMA_FIELD}' must be {cls.SCHEMA!r}, got {found!r}")
        return data

    # -- describing ---------------------------------------------------------------------------------
    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema (draft 2020-12) of the current format, generated from the type hints."""
        schema = {"$schema": JSON_SCHEMA_DIALECT, "$id": cls.SCHEMA, **_schema(cls)}
        schema["properties"][cls.SCHEMA_FIELD] = {**schema["properties"][cls.SCHEMA_FIELD], "const": cls.SCHEMA}
        return schema


# -- dumping ----------------------------------------------------------------------------------------
def _dump(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _dump(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    return value


# -- checking ---------------------------------------------------------------------------------------
def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "list"}.get(type(value), type(value).__name__)


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin is dict:
        return "object"
    if origin is list:
        return "list"
    if dataclasses.is_dataclass(tp):
        return "object"
    return getattr(tp, "__name__", str(tp))


def _fail(source: str, where: str, expected: Any, value: Any) -> DataError:
    return DataError(source, f"field '{where}': expected {_type_name(expected)}, got {_json_type(value)}")


def _hints(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def build(cls, data: dict[str, Any], source: str, where: str = ""):
    """A dataclass ``cls`` from ``data``, checked as a file is (errors name ``source`` and the dotted field, under
    ``where`` when ``data`` is a part of the file): for an artifact's ``_upgrade`` that reads an old layout through
    the old layout's own classes."""
    return _build(cls, data, where, source)


def _build(cls, data: dict[str, Any], where: str, source: str):
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in names]
    if unknown:
        raise DataError(source, f"field '{_join(where, unknown[0])}': unknown field")
    kwargs = {}
    for f in dataclasses.fields(cls):
        path = _join(where, f.name)
        if f.name in data:
            kwargs[f.name] = _check(hints[f.name], data[f.name], path, source)
        elif not (f.metadata.get("optional") or _admits_none(hints[f.name])):
            raise DataError(source, f"field '{path}': missing")
    return cls(**kwargs)


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _admits_none(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def _check(tp: Any, value: Any, where: str, source: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise _fail(source, where, tp, value)
        options = [a for a in args if a is not type(None)]
        if len(options) == 1 and options[0] not in _SCALARS:
            return _check(options[0], value, where, source)  # a nested error names its own field
        for option in options:
            try:
                return _check(option, value, where, source)
            except DataError:
                continue
        raise _fail(source, where, tp, value)
    if origin is Literal:
        if value not in typing.get_args(tp) or isinstance(value, bool):
            raise DataError(source, f"field '{where}': expected {_type_name(tp)}, got {value!r}")
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(source, where, tp, value)
        _, item = typing.get_args(tp)
        return {str(k): _check(item, v, f"{where}.{k}", source) for k, v in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise _fail(source, where, tp, value)
        (item,) = typing.get_args(tp)
        return [_check(item, v, f"{where}[{i}]", source) for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise _fail(source, where, tp, value)
        return _build(tp, value, where, source)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):  # JSON has no NaN: a file holding one was written or edited wrongly
                raise DataError(source, f"field {where!r}: expected a finite number, got {value}")
            return float(value)
        raise _fail(source, where, tp, value)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _fail(source, where, tp, value)
    if tp in (str, bool):
        if isinstance(value, tp):
            return value
        raise _fail(source, where, tp, value)
    raise TypeError(f"artifact field {where}: unsupported type {tp!r}")  # a programming error, not bad data


# -- JSON Schema ------------------------------------------------------------------------------------
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _schema(tp: Any) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema(a) for a in typing.get_args(tp)]}
    if origin is Literal:
        return {"enum": list(typing.get_args(tp))}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(typing.get_args(tp)[1])}
    if origin is list:
        return {"type": "array", "items": _schema(typing.get_args(tp)[0])}
    if dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        props, required = {}, []
        for f in dataclasses.fields(tp):
            prop = _schema(hints[f.name])
            if f.metadata.get("doc"):
                prop = {"description": f.metadata["doc"], **prop}
            props[f.name] = prop
            if not (f.metadata.get("optional") or _admits_none(hints[f.name])):
                required.append(f.name)
        out: dict[str, Any] = {"title": tp.__name__, "type": "object", "properties": props, "required": required,
                               "additionalProperties": False}
        doc = (tp.__doc__ or "").strip().split("\n\n")[0]
        if doc:
            out["description"] = " ".join(doc.split())
        return out
    raise TypeError(f"unsupported type in an artifact: {tp!r}")


def field_rows(cls, prefix: str = "") -> list[tuple[str, str, bool, str]]:
    """``(dotted field, type, required, description)`` for every field, nested dataclasses expanded
    (used to write docs/schema.md)."""
    rows = []
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        required = not (f.metadata.get("optional") or _admits_none(tp))
        rows.append((prefix + f.name, _doc_type(tp), required, f.metadata.get("doc", "")))
        inner = [a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)] or \
            ([tp] if dataclasses.is_dataclass(tp) else [])
        for sub in inner:
            rows += field_rows(sub, f"{prefix}{f.name}.")
    return rows


def _doc_type(tp: Any) -> str:
    if tp is Any:
        return "any"
    if tp in _SCALARS:
        return {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "null"}[_SCALARS[tp]]
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " \\| ".join(_doc_type(a) for a in typing.get_args(tp))
    if origin is Literal:
        return " \\| ".join(json.dumps(a) for a in typing.get_args(tp))
    if origin is dict:
        return f"dict[str, {_doc_type(typing.get_args(tp)[1])}]"
    if origin is list:
        return f"list[{_doc_type(typing.get_args(tp)[0])}]"
    return tp.__name__
