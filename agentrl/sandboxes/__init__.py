"""Where untrusted actions run: one small protocol (:mod:`agentrl.sandboxes.base`), several backends.

``agentrl.sandboxes.python.PythonSandbox`` runs Python in isolated pre-forked workers.
"""

from __future__ import annotations

from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult, Sandbox

__all__ = ["ExecutionRequest", "ExecutionResult", "Sandbox"]
