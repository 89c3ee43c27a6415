"""Errors of the rollout engine's env workers."""

from __future__ import annotations

__all__ = ["EnvWorkerError"]


class EnvWorkerError(RuntimeError):
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
