"""Agents that act in AgentRL envs: the protocol and the simplest reference agents."""

from __future__ import annotations

from agentrl.agents.base import Agent, BaseAgent, bind_agent
from agentrl.agents.simple import OracleAgent, RandomAgent

__all__ = ["Agent", "BaseAgent", "OracleAgent", "RandomAgent", "bind_agent"]
