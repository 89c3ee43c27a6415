r"""Sandbox tiers by name: ``"process"``, ``"docker"`` and ``"remote"``.

``"process"`` is the Python sandbox (worker processes, bubblewrap when available), ``"docker"`` a warm
pool of locked-down containers, and ``"remote"`` a sandbox server (``agentrl serve-sandbox``) that runs
one of the local tiers. The same protocol and the same attack suite hold on every tier, so an env
takes ``sandbox="process" | "docker" | "remote"`` and nothing else changes.

>>> sorted(TIERS)
['docker', 'process', 'remote']
>>> box = make_sandbox("process", timeout_s=5.0)
>>> box.execute(ExecutionRequest("print(6 * 7)")).output
'42\n'
>>> box.close()
"""

from __future__ import annotations

from typing import Any

from agentrl.core.choices import check_choice
from agentrl.sandboxes.base import ExecutionRequest, Sandbox

__all__ = ["TIERS", "ExecutionRequest", "make_sandbox"]

#: tier name -> what it is
TIERS = {
    "process": "worker processes on this machine (bubblewrap namespaces when installed)",
    "docker": "a warm pool of containers: no network, read-only root, tmpfs scratch, limits, non-root",
    "remote": "a sandbox server (agentrl serve-sandbox) running one of the local tiers",
}


def make_sandbox(tier: str = "process", **options: Any) -> Sandbox:
    """Build a Python sandbox of ``tier`` with ``options`` (each tier's constructor arguments)."""
    check_choice("sandbox tier", tier, sorted(TIERS))
    if tier == "process":
        from agentrl.sandboxes.python import PythonSandbox

        return PythonSandbox(**options)
    if tier == "docker":
        from agentrl.sandboxes.docker import DockerSandbox

        return DockerSandbox(**options)
    from agentrl.sandboxes.remote import RemoteSandbox

    return RemoteSandbox(**options)
