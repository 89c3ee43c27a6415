"""Gymnasium wrappers for AgentRL envs (and any text env).

Each wrapper is a real :class:`gymnasium.Wrapper` subclass that forwards no attributes: reach the
env's own attributes through ``env.unwrapped``.

* :class:`ChatHistory`: observations become the chat so far (system, user, assistant messages).
* :class:`TokenBudget`: truncate an episode once its actions spend a token budget.
* :class:`TextToEmbedding`: text observations -> MiniLM vectors (``Box(384,)``), LRU-cached.
* :class:`DiscreteChoices`: a ``Discrete(n)`` action space over fixed moves or the env's legal moves.
* :class:`RecordTrajectory`: every step to a JSONL trace (with timings, which ``info`` never has).
* :class:`Curriculum`: move a difficulty knob with the recent success rate.

For Stable-Baselines3, :func:`agentrl.integrations.sb3.make_sb3_env` stacks the two it needs.
"""

from __future__ import annotations

from agentrl.wrappers.chat_history import ChatHistory
from agentrl.wrappers.curriculum import Curriculum
from agentrl.wrappers.discrete_choices import DiscreteChoices
from agentrl.wrappers.record_trajectory import RecordTrajectory
from agentrl.wrappers.text_to_embedding import TextEmbedder, TextToEmbedding
from agentrl.wrappers.token_budget import TokenBudget

__all__ = [
    "ChatHistory",
    "Curriculum",
    "DiscreteChoices",
    "RecordTrajectory",
    "TextEmbedder",
    "TextToEmbedding",
    "TokenBudget",
]
