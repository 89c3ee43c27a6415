"""The condition templates the case bank is generated from, by key.

The templates are data: ``data/core.json``, ``data/medicine.json`` and ``data/surgery_neuro.json``
(:data:`~agentrl.envs.consult.conditions.loader.DATA_FILES`), read at import by
:mod:`~agentrl.envs.consult.conditions.loader`, which checks every field against
:class:`~agentrl.envs.consult.conditions.schema.Condition` and every template against
:func:`~agentrl.envs.consult.conditions.schema.validate_condition`. A missing or malformed file raises
:class:`~agentrl.envs.consult.conditions.loader.ConditionDataError` here, naming the file, the
condition and the field: the bank is never silently smaller.

>>> from agentrl.envs.consult.conditions import CONDITIONS
>>> CONDITIONS["acute_appendicitis"].specialty
'general surgery'
>>> len(CONDITIONS)
42
"""

from __future__ import annotations

from agentrl.envs.consult.conditions.loader import ConditionDataError, load_conditions
from agentrl.envs.consult.conditions.schema import Condition, ConditionError, validate_condition

__all__ = ["CONDITIONS", "Condition", "ConditionDataError", "ConditionError", "validate_condition"]

#: every condition template, by key, in the order of the data files
CONDITIONS: dict[str, Condition] = load_conditions()
