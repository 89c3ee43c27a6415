"""``key=value`` options: the one parser the ``agentrl`` command, ``agentrl train`` and the benchmarks share.

It lives in the core layer so that ``agentrl.train.cli`` and the benchmark scripts do not import the
top-level :mod:`agentrl.cli` (which itself imports ``agentrl.train.cli``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["parse_key_values"]


def parse_key_values(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs to keyword arguments; values are JSON when they parse, else strings.

    >>> parse_key_values(["max_turns=5", "domain=sql"])
    {'max_turns': 5, 'domain': 'sql'}

    Raises:
        ValueError: a pair without ``=`` or without a key.
    """
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected key=value, got {pair!r} (for example --env-kwarg max_turns=5)")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs
