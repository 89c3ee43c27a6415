"""Reference agents that need no model: the oracle (privileged) and the random baseline."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from agentrl.agents.base import BaseAgent
from agentrl.core.episode import EpisodeEnv

__all__ = ["OracleAgent", "RandomAgent"]


class OracleAgent(BaseAgent):
    """Plays the env's privileged expert: proves a task is solvable.

    Every single-agent env is an :class:`~agentrl.core.episode.EpisodeEnv`, and its
    :meth:`~agentrl.core.episode.EpisodeEnv.oracle_action` is the expert's next action for the
    current state: the task's ``oracle_actions`` replayed turn by turn (repeating the last one once
    they run out, so an env that wants more turns than the oracle planned ends by its budget, which
    shows up as a failure, as it should), or a reactive expert (the games, a seat's best player).
    """

    name = "oracle"

    def __init__(self) -> None:
        super().__init__()
        self._episode_env: EpisodeEnv[Any, Any] | None = None

    def reset(self, info: dict[str, Any]) -> None:
        """Check that the bound env is on the episode contract (its oracle is then one call away)."""
        if self.env is None:
            raise RuntimeError("OracleAgent needs the env: call agent.bind(env) before reset()")
        base = self.env.unwrapped
        if not isinstance(base, EpisodeEnv):
            raise TypeError(
                f"OracleAgent needs an env on the episode contract (agentrl.core.episode.EpisodeEnv), "
                f"got {type(base).__name__}"
            )
        self._episode_env = base

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """The expert's next action (``env.unwrapped.oracle_action()``)."""
        if self._episode_env is None:
            raise RuntimeError("call agent.reset(info) after env.reset() before act()")
        return self._episode_env.oracle_action()


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
