"""Text-to-SQL on real SQLite databases: ``AgentRL/SQL-v0``."""

from __future__ import annotations

__all__: list[str] = []
