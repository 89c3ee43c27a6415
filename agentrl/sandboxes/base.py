"""The sandbox protocol: the one place where untrusted actions run.

The code-running backends speak this protocol, so an environment never knows which one it has:
:class:`~agentrl.sandboxes.python.PythonSandbox` (worker processes, under bubblewrap when installed),
:class:`~agentrl.sandboxes.docker.DockerSandbox` (containers),
:class:`~agentrl.sandboxes.remote.RemoteSandbox` (a sandbox server running one of those two) and
:class:`~agentrl.sandboxes.sqlite.SQLiteSandbox`. The first two share one implementation, the
pooled-interpreter protocol of :mod:`agentrl.sandboxes.pool` (warm workers, framed requests, deadlines);
they differ only in the transport to the worker. The browser (games) and the desktop (OSWorld) are not
``Sandbox`` objects: their envs drive them through their own interfaces.

A sandbox never raises because of what the *agent* sent: bad code, timeouts and crashes come back as
an :class:`ExecutionResult` with ``ok=False``. It raises only for our own misuse
(:class:`agentrl.core.errors.SandboxMisuse`, for example :class:`~agentrl.core.errors.SandboxClosed`
after :meth:`Sandbox.close`; :class:`~agentrl.core.errors.SandboxOptionError` for a bad option) or when
it cannot start at all (:class:`agentrl.core.errors.SandboxUnavailable`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agentrl.core.errors import SandboxClosed

__all__ = ["ExecutionRequest", "ExecutionResult", "FinalizedSandbox", "Sandbox"]


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

    isolation: str

    def reset(self) -> None:
        """Forget all state; the next ``execute`` starts from a clean interpreter/database/screen."""
        ...

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        """Run one request under the limits; never raises because of the request's content."""
        ...

    def close(self) -> None:
        """Release all resources; idempotent."""
        ...


class FinalizedSandbox:
    """What sandboxes that own processes share: an idempotent ``close()`` through a finalizer.

    A subclass sets ``self._lock`` (a ``threading.Lock``), ``self._closed = False`` and
    ``self._finalizer`` (a ``weakref.finalize`` that releases everything it made, so a sandbox that
    is garbage-collected without ``close()`` still cleans up).
    """

    _lock: threading.Lock
    _closed: bool
    _finalizer: Callable[[], Any]

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosed(type(self).__name__)

    def close(self) -> None:
        """Release every process, container and file this sandbox made; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer()

    def __enter__(self) -> Any:
        """Return the sandbox itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the sandbox."""
        self.close()
