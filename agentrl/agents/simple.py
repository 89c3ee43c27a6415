"""Reference agents that need no model: the oracle (privileged) and the random baseline."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from agentrl.agents.base import BaseAgent

__all__ = ["OracleAgent", "RandomAgent"]


class OracleAgent(BaseAgent):
    """Replays the task's privileged ``oracle_actions``: proves a task is solvable.

    After the oracle's actions run out it repeats the last one (an env that wants more turns than
    the oracle planned then ends by its turn budget, which shows up as a failure, as it should).
    """

    name = "oracle"

    def __init__(self) -> None:
        super().__init__()
        self._actions: list[str] = []
        self._policy: Any = None

    def reset(self, info: dict[str, Any]) -> None:
        """Read the privileged action sequence of the bound env's current task.

        Envs whose expert reacts to the state (the game envs) offer ``oracle_action()`` instead,
        which the agent asks at every step.
        """
        if self.env is None:
            raise RuntimeError("OracleAgent needs the env: call agent.bind(env) before reset()")
        self._policy = getattr(self.env.unwrapped, "oracle_action", None)
        if self._policy is not None:
            return
        self._actions = list(self.env.unwrapped.task.oracle_actions)
        if not self._actions:
            raise ValueError(f"task {info.get('task_id')!r} has no oracle_actions")

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """The next oracle action."""
        if self._policy is not None:
            return self._policy()
        return self._actions.pop(0) if len(self._actions) > 1 else self._actions[0]


class RandomAgent(BaseAgent):
    """Samples actions from the env's action space (a floor every agent must beat).

    >>> import gymnasium as gym, agentrl
    >>> env = gym.make("AgentRL/TIRMath-v0")
    >>> agent = RandomAgent(seed=0)
    >>> agent.bind(env)
    >>> agent.reset({})
    >>> isinstance(agent.act("obs", {}), str)
    True
    >>> env.close()
    """

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__()
        self._rng = np.random.default_rng(seed)
        self._space: Any = None

    def bind(self, env: Any) -> None:
        """Take a private copy of the env's action space to sample from."""
        super().bind(env)
        self._space = copy.deepcopy(env.action_space)

    def reset(self, info: dict[str, Any]) -> None:
        """Reseed the action space from this agent's generator."""
        if self._space is None:
            raise RuntimeError("RandomAgent needs the env's action space: call agent.bind(env) before reset()")
        self._space.seed(int(self._rng.integers(2**31)))

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """A uniformly random action."""
        return self._space.sample()
