"""OSWorld's value-against-rule match, shared by the general metrics and the app modules.

A rule is ``{"method": ..., "ref": ...}``, as in OSWorld's task files (``check_json``'s rules, Thunderbird's
prefs, VLC's ID3 tags). It sits in a module of its own so that the app modules can use it without importing
:mod:`~agentrl.envs.osworld.metrics`, which gathers them.
"""

from __future__ import annotations

import builtins
import functools
import operator
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["match_value_to_rule"]


def match_value_to_rule(value: Any, rule: Mapping[str, Any]) -> bool:
    """Match ``value`` against ``{"method": ..., "ref": ...}`` as OSWorld's ``_match_value_to_rule`` does.

    Methods: ``re[.FLAG...]`` (regex search), ``eq ne le lt ge gt``, ``approx:THRESHOLD``,
    ``range.XY`` (X, Y in ``e``/``t``: ``ref[0] <=/< value <=/< ref[1]``), ``str_list_eq``,
    ``str_set_eq`` (comma-separated string vs a list).

    >>> match_value_to_rule("Dark Theme", {"method": "re.I", "ref": "dark"})
    True
    >>> match_value_to_rule(4, {"method": "eq", "ref": 4})
    True
    >>> match_value_to_rule("3.1", {"method": "approx:0.2", "ref": 3})
    True
    >>> match_value_to_rule(5, {"method": "range.te", "ref": [4, 5]})
    True
    >>> match_value_to_rule("b,a", {"method": "str_set_eq", "ref": ["a", "b"]})
    True
    """
    method: str = rule["method"]
    ref = rule["ref"]
    if method.startswith("re"):
        flags = (getattr(re, name) for name in method.split(".")[1:])
        flag = functools.reduce(operator.or_, flags, re.RegexFlag(0))
        return re.search(ref, str(value), flag) is not None
    if method in {"eq", "ne", "le", "lt", "ge", "gt"}:
        return bool(getattr(operator, method)(value, ref))
    if method.startswith("approx"):
        threshold = float(method.split(":")[1])
        try:
            number = float(value)
        except (TypeError, ValueError):
            return False
        return abs(number - float(ref)) <= threshold
    if method.startswith("range."):
        left, right = method[6], method[7]
        return bool(getattr(operator, "l" + left)(ref[0], value) and getattr(operator, "l" + right)(value, ref[1]))
    if method in {"str_list_eq", "str_set_eq"}:
        container = getattr(builtins, method[4:-3])
        return bool(container(str(value).strip("\"'").split(",")) == container(ref))
    raise NotImplementedError(f"unknown rule method {method!r}")
