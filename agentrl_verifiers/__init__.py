"""The verifiers taskset ``agentrl-verifiers``: any AgentRL text env as a verifiers environment.

verifiers 0.4 resolves a taskset id to a top-level module (``agentrl-verifiers`` -> ``agentrl_verifiers``) whose
``__all__`` exports exactly one ``Taskset`` and at most one ``Env``; this package is that module. The classes
live in :mod:`agentrl.integrations.verifiers`, which documents them.
"""

from agentrl.integrations.verifiers import AgentRLEnv, AgentRLEnvConfig, AgentRLTaskset, AgentRLTasksetConfig

__all__ = ["AgentRLEnv", "AgentRLEnvConfig", "AgentRLTaskset", "AgentRLTasksetConfig"]
