"""Strict-JSON values: :func:`json_safe` turns NaN and infinities into ``None``.

It lives in the core layer because trajectories, training logs, recorded episodes and benchmark
result lines all write JSON; :mod:`agentrl.bench.results` re-exports it.

>>> json_safe({"a": float("nan"), "b": (1.0, float("inf")), 3: "x"})
{'a': None, 'b': [1.0, None], '3': 'x'}
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["json_safe"]


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by ``None``: result lines must be strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
