"""Memory oracle: reads the privileged layout in ``state()`` and flips the pairs in order.

With one card of the current turn face up it flips that card's partner; otherwise it flips the
lowest-numbered unmatched card. It never mismatches, so it wins in exactly ``2 * pairs`` flips.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SPEC", "oracle"]

SPEC = {
    "name": "memory",
    "env_name": "Memory",
    "title": "Memory",
    "description": "Concentration: flip two face-down cards per turn to find all the matching pairs.",
    "max_steps": 60,
    "frames_per_step": 1,
    "options": {"pairs": 8, "flips": 40},
    "reward": "score",
}


def oracle(state: dict, moves: Sequence[str]) -> str:
    """The next flip of a perfect player who knows where every card lies."""
    layout: list[int] = state["layout"]
    matched: list[bool] = state["matched"]
    open_cards: list[int] = state["open"]
    if len(open_cards) == 1:
        first = open_cards[0]
        for i, symbol in enumerate(layout):
            if i != first and symbol == layout[first] and not matched[i]:
                return f"flip {i}"
    for i in range(len(layout)):
        if not matched[i]:
            return f"flip {i}"
    return moves[0]
