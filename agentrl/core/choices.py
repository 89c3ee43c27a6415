"""Validating named choices and difficulty knobs, with errors that suggest the fix."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import numpy as np

__all__ = ["check_choice", "check_level", "did_you_mean", "level_range"]


def did_you_mean(value: object, choices: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""``.

    >>> did_you_mean("modulr", ["modular", "series"])
    "; did you mean 'modular'?"
    """
    close = difflib.get_close_matches(str(value), list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_choice(kind: str, value: object, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError`` naming them.

    >>> check_choice("schema", "shop", ["shop", "school"])
    'shop'
    >>> check_choice("schema", "shoop", ["shop", "school"])
    Traceback (most recent call last):
    ...
    ValueError: unknown schema 'shoop'; choose from: shop, school; did you mean 'shop'?
    """
    if value in choices:
        return str(value)
    raise ValueError(f"unknown {kind} {value!r}; choose from: {', '.join(choices)}{did_you_mean(value, choices)}")


def check_level(value: object, levels: Sequence[int], kind: str = "difficulty") -> int:
    """Return ``value`` as an int if it is one of ``levels`` (bools refused), else raise ``ValueError``.

    >>> check_level(3, range(1, 6))
    3
    >>> check_level(9, range(1, 6))
    Traceback (most recent call last):
    ...
    ValueError: difficulty must be an integer from 1 to 5, got 9; choose from: 1, 2, 3, 4, 5
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value not in levels:
        raise ValueError(
            f"{kind} must be an integer from {min(levels)} to {max(levels)}, got {value!r}; "
            f"choose from: {', '.join(map(str, levels))}"
        )
    return int(value)


def level_range(value: int | Sequence[int], levels: Sequence[int], kind: str = "difficulty") -> tuple[int, int]:
    """An inclusive ``(low, high)`` from one level or a pair of levels.

    >>> level_range(2, range(1, 6)), level_range((1, 3), range(1, 6))
    ((2, 2), (1, 3))
    """
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{kind} range must be a pair (lo, hi), got {value!r}")
        low, high = (check_level(v, levels, kind) for v in value)
        if low > high:
            raise ValueError(f"{kind} range ({low}, {high}) is empty; use (lo, hi) with lo <= hi")
        return low, high
    level = check_level(value, levels, kind)
    return level, level
