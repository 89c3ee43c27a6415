"""JSON records to frozen dataclasses and back, every field checked: the schema code of the consultation's data files.

The condition templates (``conditions/data/*.json``) and the catalogue (``data/catalog.json``: topics, tests,
lay terms) are data, not Python. Each record becomes an instance of its dataclass (:class:`~.conditions.schema.
Condition`, :class:`~.catalog.Topic`, :class:`~.catalog.TestSpec`) through :func:`from_record`, which checks
every field against the dataclass's annotations: a tuple is written as a JSON list, a mapping as a JSON object
(its order kept), and a missing, unknown, repeated or mistyped field is an error that names the file, the
record, the field and the fix. :func:`to_record` is the inverse. :func:`read_document` reads a file whose
repeated keys are remembered (``json`` would keep the last silently).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Point:
...     key: str
...     at: tuple[int, int]
...     tags: tuple[str, ...] = ()
>>> from_record(Point, {"key": "p", "at": [1, 2]}, source="points.json", what="point", fix="fix it")
Point(key='p', at=(1, 2), tags=())
>>> from_record(Point, {"key": "q", "at": [1, "2"], "tag": []}, source="points.json", what="point", fix="fix it")
Traceback (most recent call last):
    ...
agentrl.envs.consult.records.DataError: points.json: point 'q' (entry 0):
  - unknown field 'tag'; did you mean 'tags'?
  - field 'at': at at[1], expected an integer, got the string '2'
  fix it
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from agentrl.core.choices import did_you_mean
from agentrl.core.errors import AgentRLError

__all__ = ["DataError", "from_record", "read_document", "to_record"]

T = TypeVar("T")


class DataError(AgentRLError, ValueError):
    """A data file that is missing or malformed; the message names the file, the record, the field and the fix."""


class _Object(dict[str, Any]):
    """A JSON object that remembers the keys it repeated."""

    repeated: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    result = _Object(pairs)
    if len(result) < len(pairs):
        result.repeated = tuple(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
    return result


class _Mismatch(DataError):
    """A JSON value that does not have the type of its field; the message says where and what."""


def _mismatch(where: str, expected: str, value: object) -> _Mismatch:
    return _Mismatch(f"at {where}, expected {expected}, got {kind_of(value)}")


def kind_of(value: object) -> str:
    """What a JSON value is, for a message (``the string 'abc'``, ``a list of 3``...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {text!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "an object"


def _expected(tp: Any, plural: bool = False) -> str:
    """``tuple[str, ...]`` -> ``"a list of strings"``: the JSON shape a type is written as."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is str:
        return "strings" if plural else "a string"
    if tp is int:
        return "integers" if plural else "an integer"
    if tp is bool:
        return "booleans" if plural else "a boolean"
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return ("lists" if plural else "a list") + f" of {_expected(args[0], plural=True)}"
    if origin is tuple and len(set(args)) == 1:
        return ("lists" if plural else "a list") + f" of {len(args)} {_expected(args[0], plural=True)}"
    if origin in (Mapping, dict):
        return ("objects" if plural else "an object") + f" of {_expected(args[1], plural=True)}"
    raise TypeError(f"the records reader has no JSON form for {tp!r}; teach records._expected and records.convert")


def convert(value: Any, tp: Any, where: str) -> Any:
    """``value`` read from JSON as type ``tp`` (lists become tuples); raises :class:`DataError` naming ``where``."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is str:
        if not isinstance(value, str):
            raise _mismatch(where, "a string", value)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _mismatch(where, "a boolean", value)
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _mismatch(where, "an integer", value)
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise _mismatch(where, _expected(tp), value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(item, args[0], f"{where}[{i}]") for i, item in enumerate(value))
        if len(value) != len(args):
            raise _mismatch(where, _expected(tp), value)
        return tuple(convert(item, arg, f"{where}[{i}]") for i, (item, arg) in enumerate(zip(value, args, strict=True)))
    if origin in (Mapping, dict):
        if not isinstance(value, dict):
            raise _mismatch(where, _expected(tp), value)
        repeated = getattr(value, "repeated", ())
        if repeated:
            raise _Mismatch(f"at {where}, the key {repeated[0]!r} appears twice")
        return {key: convert(item, args[1], f"{where}[{key!r}]") for key, item in value.items()}
    raise TypeError(f"the records reader has no JSON form for {tp!r}; teach records._expected and records.convert")


def _required(cls: type) -> tuple[str, ...]:
    return tuple(
        f.name for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )


def from_record(cls: type[T], record: object, *, source: str, what: str, fix: str, index: int = 0) -> T:
    """The ``cls`` instance a JSON record describes, its fields checked for presence and type.

    Raises :class:`DataError` listing every missing, unknown, repeated or mistyped field, each named with
    ``source`` (the file), ``what`` the record is (``"condition"``, ``"topic"``...) and its ``key``; ``fix`` ends
    the message.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    types = get_type_hints(cls)
    key = record.get("key") if isinstance(record, dict) else None
    label = f"{what} {key!r} (entry {index})" if isinstance(key, str) else f"{what} entry {index} (no 'key')"
    if not isinstance(record, dict):
        raise DataError(f"{source}: {label}: expected an object of fields, got {kind_of(record)}; {fix}")
    problems = [f"field {name!r} appears twice" for name in getattr(record, "repeated", ())]
    problems += [f"required field {name!r} is missing" for name in _required(cls) if name not in record]
    problems += [f"unknown field {name!r}{did_you_mean(name, list(fields))}" for name in record if name not in fields]
    values: dict[str, Any] = {}
    for name, value in record.items():
        if name in fields:
            try:
                values[name] = convert(value, types[name], name)
            except _Mismatch as exc:
                problems.append(f"field {name!r}: {exc}")
    if problems:
        raise DataError(f"{source}: {label}:\n  - " + "\n  - ".join(problems) + f"\n  {fix}")
    return cls(**values)


def to_record(instance: Any) -> dict[str, Any]:
    """The JSON record of a dataclass ``instance``, the inverse of :func:`from_record`.

    Fields left at their default are left out; tuples become lists.
    """

    def plain(value: object) -> object:
        if isinstance(value, Mapping):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        return value

    required = _required(type(instance))
    record: dict[str, Any] = {}
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if f.name in required or value != default:
            record[f.name] = plain(value)
    return record


def read_document(path: str | Path, *, restore: str, fix: str, what: str = "data file") -> Any:
    """The JSON document in ``path``, its objects remembering repeated keys.

    ``restore`` says how to get a missing file back; ``fix`` ends the message of a malformed one; ``what`` the
    file is, in messages (``"condition data file"``).

    Raises:
        DataError: the file is missing, unreadable or not JSON.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{what} {path} is missing; {restore}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{what} {path} cannot be read ({exc}); {restore}") from exc
    try:
        return json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); {fix}") from None


def repeated_keys(document: object) -> tuple[str, ...]:
    """The keys a JSON object read by :func:`read_document` repeated."""
    return tuple(getattr(document, "repeated", ()))
