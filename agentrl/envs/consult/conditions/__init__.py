"""The condition templates the case bank is generated from, by key.

>>> from agentrl.envs.consult.conditions import CONDITIONS
>>> CONDITIONS["acute_appendicitis"].specialty
'general surgery'
"""

from __future__ import annotations

from agentrl.envs.consult.conditions import core
from agentrl.envs.consult.conditions.schema import Condition, ConditionError, validate_condition

__all__ = ["CONDITIONS", "Condition", "ConditionError", "validate_condition"]


def _collect() -> dict[str, Condition]:
    import importlib

    modules = [core]
    for name in ("medicine", "surgery_neuro"):
        try:
            modules.append(importlib.import_module(f"agentrl.envs.consult.conditions.{name}"))
        except ModuleNotFoundError as exc:
            if exc.name != f"agentrl.envs.consult.conditions.{name}":
                raise
    found: dict[str, Condition] = {}
    for module in modules:
        for condition in module.CONDITIONS:
            if condition.key in found:
                raise ConditionError(f"two conditions share the key {condition.key!r}")
            found[condition.key] = condition
    return found


#: every condition template, by key
CONDITIONS: dict[str, Condition] = _collect()
