"""Asynchronous, vectorized multi-turn rollouts with exact token-level trajectories.

Start with :class:`RolloutEngine` (the engine), :class:`Trajectory` (what it returns) and
:class:`ChatTokenizer` (how turns become token ids without re-tokenising).
"""

from agentrl.rollout.chat import ChatTokenizer, TemplateNotIncremental
from agentrl.rollout.engine import EpisodeFailed, RolloutConfig, RolloutEngine, TokenPolicy, group_requests
from agentrl.rollout.trajectory import RolloutRequest, Trajectory, TurnRecord
from agentrl.rollout.workers import EnvWorker, ThreadWorkers, WorkerFactory

__all__ = [
    "ChatTokenizer",
    "EnvWorker",
    "EpisodeFailed",
    "RolloutConfig",
    "RolloutEngine",
    "RolloutRequest",
    "TemplateNotIncremental",
    "ThreadWorkers",
    "TokenPolicy",
    "Trajectory",
    "TurnRecord",
    "WorkerFactory",
    "group_requests",
]
