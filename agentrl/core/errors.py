"""Typed errors. Each names the fix.

Only *our* bugs and misuse of the API raise. The agent's mistakes (bad code, unparsable actions)
never raise: they become observations. Every error here subclasses :class:`AgentRLError`.
"""

from __future__ import annotations

__all__ = [
    "AgentRLError",
    "DependencyNotInstalled",
    "InvalidActionType",
    "ResetNeeded",
    "SandboxClosed",
    "SandboxMisuse",
    "SandboxOptionError",
    "SandboxUnavailable",
    "TaskFormatError",
    "UnknownTask",
]


class AgentRLError(Exception):
    """Base class of every error AgentRL raises on purpose."""


class UnknownTask(AgentRLError, KeyError):
    """A task id or index that the task source does not have.

    >>> str(UnknownTask("gsm8k/7", known=["gsm8k/0", "gsm8k/1"]))
    "unknown task 'gsm8k/7'; known ids start with: gsm8k/0, gsm8k/1"
    """

    def __init__(self, task_id: object, known: list[str] | None = None, hint: str | None = None) -> None:
        self.task_id = task_id
        message = f"unknown task {task_id!r}"
        if known:
            message += "; known ids start with: " + ", ".join(known[:5])
        if hint:
            message += f"; {hint}"
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class TaskFormatError(AgentRLError, ValueError):
    """A task file (JSONL) that cannot be read; says which file, which line and what was expected."""


class SandboxUnavailable(AgentRLError, RuntimeError):
    """The sandbox backend cannot start on this machine (missing binary, engine not running...)."""


class SandboxMisuse(AgentRLError, RuntimeError):
    """A sandbox was called in a way it does not support; the message says what to call instead."""


class SandboxClosed(SandboxMisuse):
    """A sandbox was used after ``close()``, which released its workers for good.

    >>> str(SandboxClosed("PythonSandbox"))
    'PythonSandbox is closed; make a new PythonSandbox (or call reset() instead of close() between episodes)'
    """

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"{name} is closed; make a new {name} (or call reset() instead of close() between episodes)")


class SandboxOptionError(AgentRLError, ValueError):
    """A sandbox option with a value the backend does not take; the message names the allowed values."""


class DependencyNotInstalled(AgentRLError, ImportError):
    """An optional dependency is missing; the message carries the exact install command.

    >>> str(DependencyNotInstalled("math-verify", extra="math"))
    "math-verify is not installed; install with: pip install 'agentrl-gym[math]'"
    """

    def __init__(self, package: str, extra: str | None = None, command: str | None = None) -> None:
        self.package = package
        self.extra = extra
        if command is None:
            command = f"pip install 'agentrl-gym[{extra}]'" if extra else f"pip install {package}"
        self.command = command
        super().__init__(f"{package} is not installed; install with: {command}")


class ResetNeeded(AgentRLError, RuntimeError):
    """``step()`` was called before ``reset()`` or after the episode ended."""


class InvalidActionType(AgentRLError, TypeError):
    """The action is not of the type the action space holds (for text envs: ``str``)."""
