"""What sandbox backends share: the protocol (from :mod:`agentrl.core.sandbox`) and ``FinalizedSandbox``.

The protocol itself lives in the core layer so that environments type against it without importing
this package; ``from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult, Sandbox`` keeps working.

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
from typing import Any

from agentrl.core.errors import SandboxClosed
from agentrl.core.sandbox import ExecutionRequest, ExecutionResult, Sandbox

__all__ = ["ExecutionRequest", "ExecutionResult", "FinalizedSandbox", "Sandbox"]


class FinalizedSandbox:
    """What sandboxes that own processes share: an idempotent ``close()`` through a finalizer.

    A subclass sets ``self._lock`` (a ``threading.Lock``), ``self._closed = False`` and
    ``self._finalizer`` (a ``weakref.finalize`` that releases everything it made, so a sandbox that
    is garbage-collected without ``close()`` still cleans up).
    """

    _lock: threading.Lock | threading.RLock
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
