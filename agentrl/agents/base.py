"""The agent protocol, re-exported from :mod:`agentrl.core.agent` (where it lives, below the envs).

``Agent``, ``BaseAgent`` and ``bind_agent`` are in the core layer so that the built-in game opponents
(:mod:`agentrl.envs.multiagent.opponents`) can be agents without importing this package;
``from agentrl.agents.base import BaseAgent`` keeps working.
"""

from __future__ import annotations

from agentrl.core.agent import Agent, BaseAgent, bind_agent

__all__ = ["Agent", "BaseAgent", "bind_agent"]
