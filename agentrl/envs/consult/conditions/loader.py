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

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentrl.envs.consult.conditions.schema import Condition, ConditionError, validate_condition
from agentrl.envs.consult.records import DataError, from_record, read_document, repeated_keys, to_record

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


class ConditionDataError(ConditionError, DataError):
    """A condition data file that is missing or malformed; the message names the file, condition, field and fix."""


def condition_from_record(record: object, *, source: str = "<record>", index: int = 0) -> Condition:
    """The :class:`Condition` a JSON record describes, its fields checked for type and presence.

    Raises :class:`ConditionDataError` listing every missing, unknown, repeated or mistyped field,
    each named with ``source`` (the file) and the condition.
    """
    try:
        return from_record(Condition, record, source=source, what="condition", fix=_FIX, index=index)
    except DataError as exc:
        raise ConditionDataError(str(exc)) from None


def condition_to_record(condition: Condition) -> dict[str, Any]:
    """The JSON record of ``condition``, the inverse of :func:`condition_from_record`.

    Fields left at their default are left out; tuples become lists.

    >>> from agentrl.envs.consult.conditions import CONDITIONS
    >>> condition_from_record(condition_to_record(CONDITIONS["migraine"])) == CONDITIONS["migraine"]
    True
    """
    return to_record(condition)


def load_condition_file(path: str | Path) -> tuple[Condition, ...]:
    """The conditions of one data file, each checked (types, then :func:`validate_condition`).

    Raises :class:`ConditionDataError` for a missing file, invalid JSON, a record that does not fit the
    schema or a condition that breaks a rule; the message names the file and the condition.
    """
    path = Path(path)
    restore = (
        f"restore it from the repository (git checkout -- {path}) or reinstall agentrl-gym (its wheel ships "
        "agentrl/envs/consult/conditions/data/*.json as package data)"
    )
    try:
        document = read_document(path, restore=restore, fix=_FIX, what="condition data file")
    except DataError as exc:
        raise ConditionDataError(str(exc)) from None
    if not isinstance(document, dict) or not isinstance(document.get("conditions"), list):
        raise ConditionDataError(f'{path}: expected an object {{"description": ..., "conditions": [...]}}; {_FIX}')
    extra = sorted(set(document) - {"description", "conditions"}) + list(repeated_keys(document))
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
