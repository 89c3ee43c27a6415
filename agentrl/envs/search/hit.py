"""A retrieved passage, the one record every retriever and both wire protocols share.

It has a module of its own so that the protocol modules (:mod:`~agentrl.envs.search.searchr1`) and the
retrievers (:mod:`~agentrl.envs.search.retrieval`, which re-exports it) can both use it without importing
each other.

>>> Hit("7", "Ada", "Ada was a mathematician.", 0.5).to_dict()["title"]
'Ada'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Hit"]


@dataclass(frozen=True)
class Hit:
    """One retrieved passage and its score (higher is better; scales differ between retrievers)."""

    id: str
    title: str
    text: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        """The hit as a JSON-ready dict."""
        return {"id": self.id, "title": self.title, "text": self.text, "score": self.score}
