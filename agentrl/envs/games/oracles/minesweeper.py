"""Minesweeper's scripted expert: reveal safe cells using the privileged mine layout.

The first reveal is the board's centre (always safe: mines are placed after it, away from it).
After that the oracle reveals, in row-major order, the first hidden safe cell with no adjacent
mine (its flood fill opens the most), else the first hidden safe cell; a safe cell flagged by
someone else is unflagged first. It never touches a mine, so it wins every seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["SPEC", "oracle"]

SPEC: dict[str, Any] = {
    "name": "minesweeper",
    "env_name": "Minesweeper",
    "title": "Minesweeper",
    "description": (
        "Reveal every safe cell of a 9x9 board with 10 mines (click reveals, double-click flags); "
        "the first reveal is always safe."
    ),
    "max_steps": 200,
    "frames_per_step": 1,
    "options": {"rows": 9, "cols": 9, "mines": 10},
    "reward": "score",
}


def oracle(state: dict[str, Any], moves: Sequence[str]) -> str:
    """The next move: a reveal of a hidden safe cell (zeros first), or an unflag of one."""
    rows, cols = int(state["rows"]), int(state["cols"])
    mines = state.get("mines")
    if mines is None:
        return f"reveal {rows // 2} {cols // 2}"
    revealed, flagged, counts = state["revealed"], state["flagged"], state["counts"]
    hidden = [(r, c) for r in range(rows) for c in range(cols) if not revealed[r][c] and not mines[r][c]]
    if not hidden:
        return moves[0]
    zeros = [rc for rc in hidden if counts[rc[0]][rc[1]] == 0]
    r, c = (zeros or hidden)[0]
    return f"flag {r} {c}" if flagged[r][c] else f"reveal {r} {c}"
