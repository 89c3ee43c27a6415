"""Tiny Nim: one heap, take 1 to ``max_take`` objects, taking the last one wins (a subtraction game).

A game small enough for a tiny randomly initialised model to learn on a CPU in a test: with the
defaults (a heap of 9, takes of 1-9) the player to move wins at once by taking the whole heap,
and a random opponent wins only by taking all that is left. A move is a number, ``[3]``; a reply
without brackets is read by its first number (``"take 3"``), so a model that has not learnt the
bracket format yet can still play. Anything else is an invalid move (TextArena's rule: one retry,
then the game is lost).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from agentrl.envs.multiagent.base import IllegalMove, parse_bracketed

__all__ = ["TinyNim"]

_NUMBER = re.compile(r"\d+")


class TinyNim:
    """One-heap Nim with a take limit: rules and state.

    Args:
        heap: the heap's size at the start.
        max_take: the most objects one move may take.
        random_heap: draw the heap from 1..``heap`` at each reset instead.
        random_first: draw who moves first from the reset's rng (else ``player_0``).

    Example:
        >>> game = TinyNim(heap=5, max_take=3)
        >>> game.reset(np.random.default_rng(0))
        >>> game.apply(game.parse_move("[1]"))       # player_0 leaves 4
        >>> game.apply(game.parse_move("take 3"))    # player_1 leaves 1
        >>> game.apply(game.parse_move("1"))
        >>> game.is_over(), game.outcome()
        (True, {'player_0': 1.0, 'player_1': -1.0})
    """

    name = "tiny_nim"
    players = ("player_0", "player_1")

    def __init__(
        self, heap: int = 9, max_take: int = 9, *, random_heap: bool = False, random_first: bool = False
    ) -> None:
        if int(heap) < 1 or int(max_take) < 1:
            raise ValueError(f"heap and max_take must be at least 1, got heap={heap}, max_take={max_take}")
        self.start, self.max_take = int(heap), int(max_take)
        self.random_heap, self.random_first = random_heap, random_first
        self.heap = self.start
        self.to_move = 0
        self.last_mover: int | None = None

    def reset(self, rng: np.random.Generator) -> None:
        """Set up the heap (drawn with ``random_heap``); pick who starts."""
        self.heap = int(rng.integers(1, self.start + 1)) if self.random_heap else self.start
        self.to_move = int(rng.integers(2)) if self.random_first else 0
        self.last_mover = None

    def current_player(self) -> str:
        """Whose turn it is."""
        return self.players[self.to_move]

    def legal_moves(self) -> list[str]:
        """``[n]`` for every count that may be taken."""
        return [f"[{n}]" for n in range(1, min(self.heap, self.max_take) + 1)]

    def parse_move(self, text: str) -> int:
        """How many ``text`` takes (the bracketed number, else the first number); :class:`IllegalMove` otherwise."""
        found = _NUMBER.search(parse_bracketed(text))
        if found is None:
            raise IllegalMove(f"write how many objects to take in brackets, like [1]; got {text.strip()[:40]!r}")
        count = int(found.group(0)[:6])
        top = min(self.heap, self.max_take)
        if not 1 <= count <= top:
            raise IllegalMove(f"take from 1 to {top} objects; got {count}")
        return count

    def apply(self, move: Any) -> None:
        """Take ``move`` objects for the current player."""
        self.heap -= int(move)
        self.last_mover = self.to_move
        self.to_move = 1 - self.to_move

    def is_over(self) -> bool:
        """The heap is empty."""
        return self.heap == 0

    def outcome(self) -> dict[str, float]:
        """+1 for the player who took the last object, -1 for the other."""
        if self.heap or self.last_mover is None:
            return dict.fromkeys(self.players, 0.0)
        return {p: (1.0 if seat == self.last_mover else -1.0) for seat, p in enumerate(self.players)}

    def observation(self, player: str) -> str:
        """The heap and whose turn it is."""
        turn = "your" if player == self.current_player() else "your opponent's"
        return f"You are {player}; it is {turn} turn.\nHeap: {self.heap} " + "|" * self.heap

    def rules_text(self) -> str:
        """What a player is told at the start."""
        return (
            f"Tiny Nim. One heap; take turns removing 1 to {self.max_take} objects; whoever takes the last object "
            "wins. Write how many to take in brackets, like [2]."
        )

    def state_key(self) -> tuple[Any, ...]:
        """A hashable key of the position (for search caches)."""
        return (self.heap, self.to_move)

    def clone(self) -> TinyNim:
        """An independent copy."""
        twin = TinyNim.__new__(TinyNim)
        twin.__dict__.update(self.__dict__)
        return twin
