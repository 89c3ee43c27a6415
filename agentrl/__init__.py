"""AgentRL: Gymnasium and PettingZoo environments, agents and trainers for LLM agents.

``import agentrl`` registers every built-in environment with Gymnasium:

>>> import gymnasium as gym
>>> import agentrl
>>> "AgentRL/TIRMath-v0" in gym.registry
True
"""

from __future__ import annotations

from agentrl import envs as _envs  # noqa: F401  (registers every env id)
from agentrl.core import fork as _fork
from agentrl.core.registry import registered_domains, registered_envs
from agentrl.serving import remote_env as _remote_env  # noqa: F401  (gym.make(ID, remote=URL))

_fork.install()  # a forked child of a process that ran torch uses one torch thread (see agentrl/core/fork.py)

__version__ = "0.1.0"
__all__ = ["__version__", "registered_domains", "registered_envs"]
