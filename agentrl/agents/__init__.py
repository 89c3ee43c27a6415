"""Agents that act in AgentRL envs: the protocol and the simplest reference agents."""

from __future__ import annotations

from agentrl.agents.base import Agent
from agentrl.agents.simple import OracleAgent, RandomAgent

__all__ = ["Agent", "OracleAgent", "RandomAgent"]
