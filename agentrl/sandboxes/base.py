"""What sandbox backends share: the protocol (from :mod:`agentrl.core.sandbox`) and ``FinalizedSandbox``.

The protocol itself lives in the core layer so that environments type against it without importing
this package; ``from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult, Sandbox`` keeps working.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from agentrl.core.sandbox import ExecutionRequest, ExecutionResult, Sandbox

__all__ = ["ExecutionRequest", "ExecutionResult", "FinalizedSandbox", "Sandbox"]


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
            raise RuntimeError(f"{type(self).__name__} is closed")

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
