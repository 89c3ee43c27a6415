"""Errors of the rollout engine and its env workers; each is an ``AgentRLError`` that names the fix."""

from __future__ import annotations

from agentrl.core.errors import AgentRLError

__all__ = ["EnvWorkerError", "RolloutConfigError", "RolloutMisuse"]


class RolloutConfigError(AgentRLError, ValueError):
    """A rollout setting out of range (``num_envs=0``, an unknown ``mode``); the message names the range.

    >>> str(RolloutConfigError("num_envs must be at least 1, got 0"))
    'num_envs must be at least 1, got 0'
    """


class RolloutMisuse(AgentRLError, RuntimeError):
    """The engine used in a way it does not support (after ``close()``, two collections at once)."""


class EnvWorkerError(AgentRLError, RuntimeError):
    """An env running out of process failed: it raised, or its process or actor died.

    The message carries the remote exception's type and message (or how the process died), so
    a failed rollout can be told apart from an engine bug. ``remote_traceback`` holds the
    remote traceback as text when there is one.

    >>> str(EnvWorkerError("the env raised RuntimeError: boom"))
    'the env raised RuntimeError: boom'
    """

    def __init__(self, message: str, remote_traceback: str | None = None) -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback
