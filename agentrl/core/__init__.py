"""The few abstractions every domain shares."""

from __future__ import annotations

from agentrl.core.actions import Action, ActionSet, ParseError
from agentrl.core.env import AgentEnv
from agentrl.core.episode import INFO_KEYS, EpisodeEnv, Turn
from agentrl.core.errors import (
    AgentRLError,
    DependencyNotInstalled,
    EnvClosed,
    InvalidActionType,
    ResetNeeded,
    SandboxUnavailable,
    TaskFormatError,
    UnknownTask,
)
from agentrl.core.registry import register_domain, registered_domains, registered_envs
from agentrl.core.spaces import UnicodeText, rgb_image_space
from agentrl.core.task import JsonlTaskSource, ListTaskSource, Task, TaskSource
from agentrl.core.verify import Rubric, RubricItem, Score, Verifier

__all__ = [
    "INFO_KEYS",
    "Action",
    "ActionSet",
    "AgentEnv",
    "AgentRLError",
    "DependencyNotInstalled",
    "EnvClosed",
    "EpisodeEnv",
    "InvalidActionType",
    "JsonlTaskSource",
    "ListTaskSource",
    "ParseError",
    "ResetNeeded",
    "Rubric",
    "RubricItem",
    "SandboxUnavailable",
    "Score",
    "Task",
    "TaskFormatError",
    "TaskSource",
    "Turn",
    "UnicodeText",
    "UnknownTask",
    "Verifier",
    "register_domain",
    "registered_domains",
    "registered_envs",
    "rgb_image_space",
]
