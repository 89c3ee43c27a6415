"""The agent protocol: ``reset(info)``, ``act(observation, info)`` and its async twin ``aact``.

An agent plays one episode at a time. Agents that need more than observations (an LLM agent needs
the env's system prompt, tool schemas and stop sequences; an oracle needs the privileged task) get
the env once through ``bind(env)``, called by whoever pairs an agent with an env (the benchmark
runner, ``run_episode``) before the first ``reset``.

The protocol lives in the core layer: reference agents (:mod:`agentrl.agents`) and the games' built-in
opponents (:mod:`agentrl.envs.multiagent.opponents`) both build on it; :mod:`agentrl.agents.base`
re-exports it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, runtime_checkable

__all__ = ["Agent", "BaseAgent", "bind_agent"]


@runtime_checkable
class Agent(Protocol):
    """Anything that can play an episode.

    ``name`` labels results; ``reset(info)`` starts an episode (``info`` as returned by
    ``env.reset``); ``act`` returns the next action; ``aact`` is the same as a coroutine, so that a
    runner can play many episodes concurrently. An optional ``bind(env)`` receives the env first.
    """

    name: str

    def reset(self, info: dict[str, Any]) -> None:
        """Start a new episode."""
        ...

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """Return the next action."""
        ...

    async def aact(self, observation: Any, info: dict[str, Any]) -> Any:
        """Return the next action, without blocking the event loop."""
        ...


class BaseAgent:
    """Convenience base: stores the bound env and runs ``act`` in a thread for ``aact``.

    Subclasses implement :meth:`act` (and :meth:`reset` when they keep episode state); LLM agents
    override :meth:`aact` with a truly asynchronous version.
    """

    name = "agent"

    def __init__(self) -> None:
        self.env: Any = None

    def bind(self, env: Any) -> None:
        """Remember the env this agent plays in (its ``unwrapped`` carries prompts, schemas, the task)."""
        self.env = env

    def reset(self, info: dict[str, Any]) -> None:
        """Start a new episode (stateless agents need nothing)."""

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """Return the next action."""
        raise NotImplementedError

    async def aact(self, observation: Any, info: dict[str, Any]) -> Any:
        """Run :meth:`act` in a worker thread."""
        return await asyncio.to_thread(self.act, observation, info)


def bind_agent(agent: Any, env: Any) -> None:
    """Call ``agent.bind(env)`` when the agent has it (agents without it need no env)."""
    bind = getattr(agent, "bind", None)
    if callable(bind):
        bind(env)
