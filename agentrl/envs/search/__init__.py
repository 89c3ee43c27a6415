"""Multi-hop knowledge QA with a local retriever: ``AgentRL/Search-v0``."""

from __future__ import annotations

__all__: list[str] = []
