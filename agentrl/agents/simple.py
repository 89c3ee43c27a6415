"""Reference agents that need no model: the oracle (privileged) and the random baseline."""

from __future__ import annotations

from typing import Any

__all__ = ["OracleAgent", "RandomAgent"]


class OracleAgent:
    """Replays the task's privileged ``oracle_actions``: proves a task is solvable.

    After the oracle's actions run out it repeats the last one (an env that wants more turns than
    the oracle planned then ends by its turn budget, which shows up as a failure, as it should).
    """

    name = "oracle"

    def __init__(self) -> None:
        self._actions: list[str] = []

    def reset(self, env: Any, info: dict[str, Any]) -> None:
        """Read the privileged action sequence of the env's current task."""
        self._actions = list(env.unwrapped.task.oracle_actions)
        if not self._actions:
            raise ValueError(f"task {info.get('task_id')!r} has no oracle_actions")

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The next oracle action."""
        return self._actions.pop(0) if len(self._actions) > 1 else self._actions[0]


class RandomAgent:
    """Samples actions from the env's action space (a floor every agent must beat).

    >>> from agentrl.core.spaces import UnicodeText
    >>> class Env:
    ...     action_space = UnicodeText(20)
    ...     unwrapped = None
    >>> agent = RandomAgent(seed=0)
    >>> agent.reset(Env(), {})
    >>> isinstance(agent.act("obs", {}), str)
    True
    """

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        import numpy as np

        self._rng = np.random.default_rng(seed)
        self._space: Any = None

    def reset(self, env: Any, info: dict[str, Any]) -> None:
        """Seed a copy of the env's action space from this agent's generator."""
        import copy

        self._space = copy.deepcopy(env.action_space)
        self._space.seed(int(self._rng.integers(2**31)))

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """A uniformly random action."""
        return self._space.sample()
