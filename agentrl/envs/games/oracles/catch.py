"""Catch: the expert moves the paddle toward the falling ball's column.

>>> oracle({"ball": {"x": 2, "y": 3}, "paddle": 5}, ["left", "stay", "right"])
'left'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["SPEC", "oracle"]

SPEC: dict[str, Any] = {
    "name": "catch",
    "env_name": "Catch",
    "title": "Catch",
    "description": "Move the paddle under the falling balls; three misses end the game (the pixels say everything).",
    "max_steps": 400,
    "frames_per_step": 1,
    "options": {"lives": 3, "targets": [5, 10, 20, 30]},
    "reward": "score",
}


def oracle(state: dict[str, Any], moves: Sequence[str]) -> str:
    """Step toward the ball's column; stay under it."""
    ball, paddle = int(state["ball"]["x"]), int(state["paddle"])
    return "left" if ball < paddle else "right" if ball > paddle else "stay"
