"""Prioritized fictitious self-play (PFSP): how often to pick each opponent, from the learner's win rates.

AlphaStar (Vinyals et al., "Grandmaster level in StarCraft II using multi-agent reinforcement
learning", Nature 2019) samples league opponents with probability proportional to ``f(P[learner
beats opponent])``: ``f_hard(x) = (1 - x) ** p`` puts the weight on opponents the learner loses to,
``f_var(x) = x (1 - x)`` on opponents of about its level. Shared by the benchmark league and the
trainer's league of snapshots.

>>> [round(w, 3) for w in pfsp_weights([0.0, 0.5, 1.0], "hard")]
[0.8, 0.2, 0.0]
>>> [round(w, 3) for w in pfsp_weights([0.0, 0.5, 1.0], "even")]
[0.0, 1.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["PFSP_WEIGHTINGS", "draw_weighted", "pfsp_weights"]

#: The weightings: ``hard`` (1-x)^p, ``even`` x(1-x) (``variance`` is its AlphaStar name), ``uniform``.
PFSP_WEIGHTINGS = ("hard", "even", "variance", "uniform")


def pfsp_weights(win_rates: Sequence[float], weighting: str = "hard", *, power: float = 2.0) -> list[float]:
    """Sampling probabilities of the opponents, given the learner's win rate (in [0, 1]) against each.

    Weights sum to 1; when every raw weight is zero (``hard`` against opponents all beaten, ``even``
    against opponents all beaten or all unbeaten) they are uniform.

    >>> pfsp_weights([0.2, 0.9], "uniform")
    [0.5, 0.5]
    >>> pfsp_weights([1.0, 1.0])
    [0.5, 0.5]
    """
    rates = [float(x) for x in win_rates]
    bad = [x for x in rates if not 0.0 <= x <= 1.0]
    if bad:
        raise ValueError(f"win rates must be in [0, 1], got {bad}")
    if weighting == "hard":
        raw = [(1.0 - x) ** power for x in rates]
    elif weighting in ("even", "variance"):
        raw = [x * (1.0 - x) for x in rates]
    elif weighting == "uniform":
        raw = [1.0] * len(rates)
    else:
        raise ValueError(f"PFSP weighting must be one of {PFSP_WEIGHTINGS}, got {weighting!r}")
    total = math.fsum(raw)
    if total <= 0.0:
        return [1.0 / len(raw)] * len(raw) if raw else []
    return [w / total for w in raw]


def draw_weighted(weights: Mapping[str, float], rng: Any) -> str:
    """One name drawn with probability proportional to its weight (``rng``: a NumPy ``Generator``).

    >>> import numpy as np
    >>> draw_weighted({"a": 0.0, "b": 1.0}, np.random.default_rng(0))
    'b'
    """
    if not weights:
        raise ValueError("no opponent to draw from")
    names = list(weights)
    total = math.fsum(weights.values())
    if total <= 0.0:
        raise ValueError(f"the weights of {names} add up to {total}; at least one must be positive")
    return names[int(rng.choice(len(names), p=[weights[n] / total for n in names]))]
