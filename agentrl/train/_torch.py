"""The one place the trainers import torch: a missing ``[train]`` extra names its install command."""

from __future__ import annotations

from typing import Any

from agentrl.core.errors import DependencyNotInstalled

__all__ = ["import_torch"]


def import_torch() -> Any:
    """The ``torch`` module, or :class:`~agentrl.core.errors.DependencyNotInstalled` naming ``agentrl[train]``."""
    try:
        import torch
    except ImportError as exc:
        raise DependencyNotInstalled("torch", extra="train") from exc
    return torch
