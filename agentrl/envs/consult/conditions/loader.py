"""Read the condition templates from their JSON data files, checking every field against the schema.

The templates live in ``data/*.json`` next to this module, one file per group (:data:`DATA_FILES`, in
order). A file is an object ``{"description": "...", "conditions": [record, ...]}``; a record has the
fields of :class:`~agentrl.envs.consult.conditions.schema.Condition`, a tuple written as a JSON list
and a mapping as a JSON object (its order is kept: the case generator draws in that order). Fields
with a default may be left out. Every field's type is checked against the dataclass annotations, an
unknown or repeated field is an error, and each template must then pass
:func:`~agentrl.envs.consult.conditions.schema.validate_condition`.

A missing or malformed file raises :class:`ConditionDataError` naming the file, the condition, the
field and the fix: the case bank is never silently smaller.

>>> record = {"key": "k", "ages": [20, "60"]}
>>> condition_from_record(record, source="x.json")
Traceback (most recent call last):
    ...
agentrl.envs.consult.conditions.loader.ConditionDataError: x.json: condition 'k' (entry 0):
  - required field 'name' is missing
  ...
  - field 'ages': at ages[1], expected an integer, got the string '60'
  fix the file (the fields are those of agentrl.envs.consult.conditions.schema.Condition)
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

from agentrl.core.choices import did_you_mean
from agentrl.envs.consult.conditions.schema import Condition, ConditionError, validate_condition

__all__ = [
    "DATA_DIR",
    "DATA_FILES",
    "ConditionDataError",
    "condition_from_record",
    "condition_to_record",
    "load_condition_file",
    "load_conditions",
]

#: the folder of the shipped data files (package data of the wheel)
DATA_DIR = Path(__file__).with_name("data")
#: the data files the case bank is made of, in order; every one must be there
DATA_FILES = ("core.json", "medicine.json", "surgery_neuro.json")

_FIX = "fix the file (the fields are those of agentrl.envs.consult.conditions.schema.Condition)"
_FIELDS = {f.name: f for f in dataclasses.fields(Condition)}
_TYPES: dict[str, Any] = get_type_hints(Condition)
_REQUIRED = tuple(
    name for name, f in _FIELDS.items() if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
)


class ConditionDataError(ConditionError):
    """A condition data file that is missing or malformed; the message names the file, condition, field and fix."""


class _Object(dict[str, Any]):
    """A JSON object that remembers the keys it repeated (``json`` would silently keep the last)."""

    repeated: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    result = _Object(pairs)
    if len(result) < len(pairs):
        result.repeated = tuple(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
    return result


class _Mismatch(ConditionDataError):
    """A JSON value that does not have the type of its field; the message says where and what."""


def _mismatch(where: str, expected: str, value: object) -> _Mismatch:
    return _Mismatch(f"at {where}, expected {expected}, got {_kind(value)}")


def _kind(value: object) -> str:
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
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return ("lists" if plural else "a list") + f" of {_expected(args[0], plural=True)}"
    if origin is tuple and len(set(args)) == 1:
        return ("lists" if plural else "a list") + f" of {len(args)} {_expected(args[0], plural=True)}"
    if origin is Mapping:
        return ("objects" if plural else "an object") + f" of {_expected(args[1], plural=True)}"
    raise TypeError(f"the condition loader has no JSON form for {tp!r}; teach loader._expected and loader._convert")


def _convert(value: Any, tp: Any, where: str) -> Any:
    """``value`` read from JSON as type ``tp`` (lists become tuples); raises :class:`_Mismatch`."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is str:
        if not isinstance(value, str):
            raise _mismatch(where, "a string", value)
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _mismatch(where, "an integer", value)
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise _mismatch(where, _expected(tp), value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(item, args[0], f"{where}[{i}]") for i, item in enumerate(value))
        if len(value) != len(args):
            raise _mismatch(where, _expected(tp), value)
        return tuple(
            _convert(item, arg, f"{where}[{i}]") for i, (item, arg) in enumerate(zip(value, args, strict=True))
        )
    if origin is Mapping:
        if not isinstance(value, dict):
            raise _mismatch(where, _expected(tp), value)
        repeated = getattr(value, "repeated", ())
        if repeated:
            raise _Mismatch(f"at {where}, the key {repeated[0]!r} appears twice")
        return {key: _convert(item, args[1], f"{where}[{key!r}]") for key, item in value.items()}
    raise TypeError(f"the condition loader has no JSON form for {tp!r}; teach loader._expected and loader._convert")


def condition_from_record(record: object, *, source: str = "<record>", index: int = 0) -> Condition:
    """The :class:`Condition` a JSON record describes, its fields checked for type and presence.

    Raises :class:`ConditionDataError` listing every missing, unknown, repeated or mistyped field,
    each named with ``source`` (the file) and the condition.
    """
    key = record.get("key") if isinstance(record, dict) else None
    label = f"condition {key!r} (entry {index})" if isinstance(key, str) else f"condition entry {index} (no 'key')"
    if not isinstance(record, dict):
        raise ConditionDataError(f"{source}: {label}: expected an object of fields, got {_kind(record)}; {_FIX}")
    problems = [f"field {name!r} appears twice" for name in getattr(record, "repeated", ())]
    problems += [f"required field {name!r} is missing" for name in _REQUIRED if name not in record]
    problems += [f"unknown field {name!r}{did_you_mean(name, list(_FIELDS))}" for name in record if name not in _FIELDS]
    values: dict[str, Any] = {}
    for name, value in record.items():
        if name in _FIELDS:
            try:
                values[name] = _convert(value, _TYPES[name], name)
            except _Mismatch as exc:
                problems.append(f"field {name!r}: {exc}")
    if problems:
        raise ConditionDataError(f"{source}: {label}:\n  - " + "\n  - ".join(problems) + f"\n  {_FIX}")
    return Condition(**values)


def condition_to_record(condition: Condition) -> dict[str, Any]:
    """The JSON record of ``condition``, the inverse of :func:`condition_from_record`.

    Fields left at their default are left out; tuples become lists.

    >>> from agentrl.envs.consult.conditions import CONDITIONS
    >>> condition_from_record(condition_to_record(CONDITIONS["migraine"])) == CONDITIONS["migraine"]
    True
    """

    def plain(value: object) -> object:
        if isinstance(value, Mapping):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        return value

    record: dict[str, Any] = {}
    for name, f in _FIELDS.items():
        value = getattr(condition, name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if name in _REQUIRED or value != default:
            record[name] = plain(value)
    return record


def load_condition_file(path: str | Path) -> tuple[Condition, ...]:
    """The conditions of one data file, each checked (types, then :func:`validate_condition`).

    Raises :class:`ConditionDataError` for a missing file, invalid JSON, a record that does not fit the
    schema or a condition that breaks a rule; the message names the file and the condition.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConditionDataError(
            f"condition data file {path} is missing; restore it from the repository (git checkout -- {path}) "
            "or reinstall agentrl-gym (its wheel ships agentrl/envs/consult/conditions/data/*.json as package data)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConditionDataError(f"condition data file {path} cannot be read ({exc}); restore it") from exc
    try:
        document = json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise ConditionDataError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); {_FIX}"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("conditions"), list):
        raise ConditionDataError(f'{path}: expected an object {{"description": ..., "conditions": [...]}}; {_FIX}')
    extra = sorted(set(document) - {"description", "conditions"}) + list(getattr(document, "repeated", ()))
    if extra or not isinstance(document.get("description", ""), str):
        raise ConditionDataError(
            f'{path}: the top level takes "description" (a string) and "conditions" (a list), '
            f"once each; found {extra or 'a description that is not a string'}; {_FIX}"
        )
    conditions = []
    for index, record in enumerate(document["conditions"]):
        condition = condition_from_record(record, source=str(path), index=index)
        try:
            validate_condition(condition)
        except ConditionError as exc:
            raise ConditionDataError(f"{path}: entry {index}: {exc}\n  {_FIX}") from None
        conditions.append(condition)
    return tuple(conditions)


def load_conditions(directory: str | Path = DATA_DIR, files: Sequence[str] = DATA_FILES) -> dict[str, Condition]:
    """Every condition of ``files`` in ``directory``, by key, in file order; a key defined twice raises."""
    found: dict[str, Condition] = {}
    origin: dict[str, str] = {}
    for name in files:
        path = Path(directory) / name
        for condition in load_condition_file(path):
            if condition.key in found:
                raise ConditionDataError(
                    f"{path}: condition {condition.key!r} is already defined in {origin[condition.key]}; "
                    "give each condition a key of its own"
                )
            found[condition.key] = condition
            origin[condition.key] = str(path)
    return found
