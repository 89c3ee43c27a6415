"""Typed errors. Each names the fix.

Only *our* bugs and misuse of the API raise. The agent's mistakes (bad code, unparsable actions)
never raise: they become observations. Every error class the package defines subclasses
:class:`AgentRLError` (``tests/core/test_errors.py`` walks every module to check it), keeping a builtin
base where one fits (``except ValueError`` still works). Where Gymnasium has the same error, ours
subclasses Gymnasium's too, so ``except gymnasium.error.X`` catches it:

======================== ===========================================
ours                     Gymnasium's
======================== ===========================================
``ResetNeeded``          ``gymnasium.error.ResetNeeded``
``EnvClosed``            ``gymnasium.error.ClosedEnvironmentError``
``DependencyNotInstalled`` ``gymnasium.error.DependencyNotInstalled``
``InvalidActionType``    ``gymnasium.error.InvalidAction``
``UnknownEnvId``         ``gymnasium.error.UnregisteredEnv``
``RegistrationError``    ``gymnasium.error.RegistrationError``
======================== ===========================================
"""

from __future__ import annotations

import gymnasium.error as _gym_error

__all__ = [
    "AgentRLError",
    "DependencyNotInstalled",
    "EnvClosed",
    "InvalidActionType",
    "RegistrationError",
    "ResetNeeded",
    "SandboxClosed",
    "SandboxMisuse",
    "SandboxOptionError",
    "SandboxUnavailable",
    "TaskFormatError",
    "UnknownEnvId",
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


class DependencyNotInstalled(AgentRLError, _gym_error.DependencyNotInstalled, ImportError):
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


class ResetNeeded(AgentRLError, _gym_error.ResetNeeded, RuntimeError):
    """``step()`` was called before ``reset()`` or after the episode ended."""


class EnvClosed(ResetNeeded, _gym_error.ClosedEnvironmentError):
    """``reset()`` or ``step()`` was called on an env after ``close()``; make a new one."""


class InvalidActionType(AgentRLError, _gym_error.InvalidAction, TypeError):
    """The action is not of the type the action space holds (for text envs: ``str``)."""


class UnknownEnvId(AgentRLError, _gym_error.UnregisteredEnv):
    """An env id that AgentRL did not register; the message suggests close matches."""


class RegistrationError(AgentRLError, _gym_error.RegistrationError, ValueError):
    """An env id that cannot be registered (a malformed name, or an id already bound to another entry point)."""
