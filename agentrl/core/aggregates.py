"""How a domain's episodes add up to its benchmark's score, where a plain mean is not it.

A domain whose published benchmark aggregates episodes its own way registers an :class:`EpisodeAggregate` for
the reward component its episodes report (``info["reward_components"][component]``): HealthBench's score is
the *clipped* mean of *unclipped* per-example scores, with a bootstrap interval, so ``PatientConsult-v1``
registers ``healthbench_score``. The bench (``agentrl bench``'s summary, the sweeps' scores) looks aggregates up
here by component, so it never imports a domain.

>>> register_aggregate(EpisodeAggregate("demo_score", "Demo score", "statistics:fmean"))
>>> aggregate_for("demo_score").load()([1.0, 2.0])
1.5
>>> aggregate_for("no_such_component") is None
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["EpisodeAggregate", "aggregate_for", "register_aggregate", "registered_aggregates"]


@dataclass(frozen=True)
class EpisodeAggregate:
    """One reward component's aggregate over episodes.

    Attributes:
        component: the key in ``info["reward_components"]`` the episodes report.
        label: what reports call the score (``"HealthBench score"``).
        target: ``"module:function"``; the function takes the episodes' values (``None`` where an episode
            has none) and returns the aggregate: a number, or an object with ``score``, ``ci_low``,
            ``ci_high`` and ``n_samples`` (and, optionally, ``describe() -> str`` for the report's note).
    """

    component: str
    label: str
    target: str

    def load(self) -> Callable[[Sequence[float | None]], Any]:
        """The aggregate function (imported on first use: registering one imports nothing)."""
        module, _, name = self.target.partition(":")
        if not module or not name:
            raise ValueError(f"an aggregate's target is 'module:function', got {self.target!r}")
        function: Callable[[Sequence[float | None]], Any] = getattr(importlib.import_module(module), name)
        return function


_AGGREGATES: dict[str, EpisodeAggregate] = {}


def register_aggregate(aggregate: EpisodeAggregate) -> None:
    """Register ``aggregate`` for its component (again with the same target: a no-op; another target: an error)."""
    known = _AGGREGATES.get(aggregate.component)
    if known is not None and known != aggregate:
        raise ValueError(
            f"the reward component {aggregate.component!r} already aggregates with {known.target}; "
            f"not with {aggregate.target}"
        )
    _AGGREGATES[aggregate.component] = aggregate


def aggregate_for(component: str) -> EpisodeAggregate | None:
    """The aggregate registered for ``component``, if any."""
    return _AGGREGATES.get(component)


def registered_aggregates() -> list[EpisodeAggregate]:
    """Every registered aggregate, in registration order."""
    return list(_AGGREGATES.values())
