"""Tool-integrated math: ``AgentRL/TIRMath-v0``."""

from __future__ import annotations

__all__: list[str] = []
