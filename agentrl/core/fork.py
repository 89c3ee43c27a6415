"""Keep torch usable in a process forked from one that already ran it (gymnasium's ``AsyncVectorEnv`` forks).

A child forked after its parent ran torch on several threads hangs in its first parallel op: the OpenMP pool
does not survive ``fork``. PyTorch's own ``DataLoader`` workers run on one thread for this reason, and so does
any child here: :func:`install` (run once by ``import agentrl``) registers a fork hook that sets one torch
thread in the child when the parent had imported torch. A process that never imported torch is left alone.
"""

from __future__ import annotations

import os
import sys

_installed = False


def one_torch_thread_in_child() -> None:
    """The fork hook: one torch thread, if torch was imported before the fork."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(1)


def install() -> None:
    """Register :func:`one_torch_thread_in_child` to run in every forked child (idempotent)."""
    global _installed
    if not _installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=one_torch_thread_in_child)
        _installed = True
