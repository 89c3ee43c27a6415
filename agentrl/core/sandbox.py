"""The sandbox protocol (core layer): the one place where untrusted actions run.

The code-running backends (Python workers, Docker, the remote sandbox server, SQLite) speak this
protocol, so a text environment never knows which one it has; the browser and the desktop are driven
through their own interfaces (see :mod:`agentrl.sandboxes.base`). A sandbox never raises because of
what the *agent* sent: bad code, timeouts and crashes come back as an :class:`ExecutionResult` with
``ok=False``. It raises only for our own misuse (:class:`agentrl.core.errors.SandboxMisuse`) or when it
cannot start at all (:class:`agentrl.core.errors.SandboxUnavailable`).

The protocol lives in ``core`` so that :class:`~agentrl.core.env.AgentEnv` can type against it without
importing the sandboxes layer; :mod:`agentrl.sandboxes.base` re-exports it with the backends' shared
:class:`~agentrl.sandboxes.base.FinalizedSandbox`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["ExecutionRequest", "ExecutionResult", "Sandbox"]


@dataclass(frozen=True)
class ExecutionRequest:
    """One unit of untrusted work.

    Attributes:
        code: the program text (Python source, SQL, a shell line... as the backend expects).
        timeout_s: wall-clock deadline for this call; ``None`` uses the sandbox default.
    """

    code: str
    timeout_s: float | None = None


@dataclass(frozen=True)
class ExecutionResult:
    """What came back from one :meth:`Sandbox.execute` call.

    Attributes:
        ok: the code ran to completion without raising.
        output: captured standard output (and for Python, the repr of a trailing expression),
            already capped by the sandbox; never ``None``.
        error: a one-paragraph description of what went wrong (traceback tail, "killed: out of
            memory", ...), or ``None`` when ``ok``.
        timed_out: the wall-clock deadline expired and the worker was killed.
        latency_s: wall-clock seconds the call took, as seen by the caller. For traces only:
            environments never put it in observations or ``info`` (determinism).
        truncated: ``output`` was cut to the sandbox's cap (a visible marker is in ``output``).
    """

    ok: bool
    output: str
    error: str | None = None
    timed_out: bool = False
    latency_s: float = 0.0
    truncated: bool = False


@runtime_checkable
class Sandbox(Protocol):
    """Where untrusted actions run.

    ``reset()`` drops all state from the previous episode, ``execute()`` runs one request under the
    sandbox's limits, ``close()`` releases every process and file (safe to call twice). Backends are
    context managers. ``isolation`` is a human-readable description of the isolation in force, for
    example ``"bubblewrap: no network, read-only root, ..."``, so that a user can see what protects them.
    """

    @property
    def isolation(self) -> str:
        """What isolation is in force, in words."""
        ...

    def reset(self) -> None:
        """Forget all state; the next ``execute`` starts from a clean interpreter/database/screen."""
        ...

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        """Run one request under the limits; never raises because of the request's content."""
        ...

    def close(self) -> None:
        """Release all resources; idempotent."""
        ...
