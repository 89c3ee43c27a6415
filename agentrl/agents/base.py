"""The agent protocol: anything with ``reset(info)`` and ``act(observation, info)``."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """An agent for one episode at a time.

    ``reset(env, info)`` is called after ``env.reset()`` with the env (agents that need the system
    prompt, tool schemas or, for oracles, the privileged task read them from ``env.unwrapped``);
    ``act(observation, info)`` returns the next action.
    """

    name: str

    def reset(self, env: Any, info: dict[str, Any]) -> None:
        """Prepare for a new episode."""
        ...

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """Return the next action."""
        ...
