"""Scores, verifiers and rubrics.

A verifier is a pure function ``(task, answer, state) -> Score``: importable and testable without a
sandbox or an LLM. :class:`Rubric` combines weighted items HealthBench-style: positive items earn
points, negative items (penalties) subtract, and the total is normalised by the positive points and
clipped to ``[0, 1]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentrl.core.task import Task

__all__ = ["Rubric", "RubricItem", "Score", "Verifier"]


@dataclass(frozen=True)
class Score:
    """A verifier's verdict.

    Attributes:
        value: the reward, usually in ``[0, 1]``.
        breakdown: named components (reported in ``info["reward_components"]``).
        detail: a short human-readable explanation.

    >>> Score(1.0, {"correct": 1.0}).success
    True
    """

    value: float
    breakdown: Mapping[str, float] = field(default_factory=dict)
    detail: str = ""

    @property
    def success(self) -> bool:
        """Whether the score counts as solving the task (full reward)."""
        return self.value >= 1.0


@runtime_checkable
class Verifier(Protocol):
    """Scores a final answer. Must not raise on any ``answer`` string."""

    def __call__(self, task: Task, answer: str, state: Mapping[str, Any]) -> Score:
        """Score ``answer`` for ``task``; ``state`` is the env's episode state (turns, transcript...)."""
        ...


@dataclass(frozen=True)
class RubricItem:
    """One criterion: ``check(task, answer, state)`` returns how much of it is met, in ``[0, 1]``.

    ``points`` may be negative for a penalty ("recommends a contraindicated drug": -5).
    """

    name: str
    points: float
    check: Callable[[Task, str, Mapping[str, Any]], float]


class Rubric:
    """A weighted rubric, scored HealthBench-style.

    ``value = clip(sum(points_i * met_i) / sum(positive points), 0, 1)``.

    >>> says_hello = RubricItem("greets", 2.0, lambda t, a, s: float("hello" in a.lower()))
    >>> rude = RubricItem("rude", -1.0, lambda t, a, s: float("idiot" in a.lower()))
    >>> asks = RubricItem("asks name", 2.0, lambda t, a, s: float("name" in a.lower()))
    >>> rubric = Rubric([says_hello, rude, asks])
    >>> task = Task("t", "greet", "")
    >>> rubric(task, "Hello! What is your name?", {}).value
    1.0
    >>> rubric(task, "Hello, idiot.", {}).value
    0.25
    """

    def __init__(self, items: Sequence[RubricItem]) -> None:
        if not items:
            raise ValueError("a Rubric needs at least one item")
        self.items = list(items)
        self._max_points = sum(item.points for item in self.items if item.points > 0)
        if self._max_points <= 0:
            raise ValueError("a Rubric needs at least one item with positive points")

    def __call__(self, task: Task, answer: str, state: Mapping[str, Any]) -> Score:
        """Score ``answer`` against every item."""
        breakdown: dict[str, float] = {}
        earned = 0.0
        for item in self.items:
            met = min(max(float(item.check(task, answer, state)), 0.0), 1.0)
            breakdown[item.name] = met * item.points
            earned += met * item.points
        value = min(max(earned / self._max_points, 0.0), 1.0)
        return Score(value, breakdown, f"{earned:g} of {self._max_points:g} points")
