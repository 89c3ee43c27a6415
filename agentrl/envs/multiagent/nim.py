"""Nim: the rules for :class:`~agentrl.envs.multiagent.base.TextGameEnv`, and the perfect (nim-sum) opponent.

Several heaps of objects; a player takes one or more objects from one heap. Normal play: whoever
takes the last object wins. A move is written ``[h n]``, take ``n`` from heap ``h`` (heaps are
numbered from 1 as displayed); ``[2, 3]`` and ``[heap 2 take 3]`` are read the same way.
``player_0`` moves first unless ``random_first`` is set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import reduce
from operator import xor
from typing import Any

import numpy as np

from agentrl.envs.multiagent.base import IllegalMove, parse_bracketed
from agentrl.envs.multiagent.opponents import GameOpponent

__all__ = ["Nim", "NimPerfectOpponent", "nim_sum"]

_NUMBER = re.compile(r"[+-]?\d+")
_HEAP_WORD = re.compile(r"heap\s*#?\s*([+-]?\d+)")
_TAKE_WORD = re.compile(r"(?:take|remove)\s*([+-]?\d+)")


def nim_sum(heaps: Sequence[int]) -> int:
    """The XOR of the heap sizes: the player to move wins (with perfect play) iff it is not 0.

    Example:
        >>> nim_sum((3, 4, 5))
        2
    """
    return reduce(xor, heaps, 0)


class Nim:
    """Nim rules and state (normal play: taking the last object wins).

    Args:
        heaps: the starting heap sizes.
        random_heaps: draw 3-5 heaps of 1-7 objects from the reset's rng instead.
        random_first: draw who moves first from the reset's rng (else ``player_0``).

    Example:
        >>> game = Nim(heaps=(1, 2))
        >>> game.reset(np.random.default_rng(0))
        >>> game.apply(game.parse_move("[2 1]"))    # player_0 leaves (1, 1)
        >>> game.apply(game.parse_move("[1, 1]"))   # player_1 leaves (0, 1)
        >>> game.apply(game.parse_move("[heap 2 take 1]"))
        >>> game.is_over(), game.outcome()
        (True, {'player_0': 1.0, 'player_1': -1.0})
    """

    name = "nim"
    players = ("player_0", "player_1")

    def __init__(
        self, heaps: Sequence[int] = (3, 4, 5), *, random_heaps: bool = False, random_first: bool = False
    ) -> None:
        heaps = tuple(int(h) for h in heaps)
        if not heaps or any(h < 0 for h in heaps) or not any(heaps):
            raise ValueError(f"heaps must be non-negative sizes, at least one of them non-zero; got {heaps}")
        self.start = heaps
        self.random_heaps = random_heaps
        self.random_first = random_first
        self.heaps = list(heaps)
        self.to_move = 0
        self.last_mover: int | None = None  # seat index of the player who moved last

    def reset(self, rng: np.random.Generator) -> None:
        """Set up the heaps (drawn with ``random_heaps``); pick who starts."""
        if self.random_heaps:
            self.heaps = [int(h) for h in rng.integers(1, 8, size=int(rng.integers(3, 6)))]
        else:
            self.heaps = list(self.start)
        self.to_move = int(rng.integers(2)) if self.random_first else 0
        self.last_mover = None

    def current_player(self) -> str:
        """Whose turn it is."""
        return self.players[self.to_move]

    def legal_moves(self) -> list[str]:
        """Every (heap, count) that can be taken, as ``[h n]``."""
        return [f"[{h + 1} {n}]" for h, size in enumerate(self.heaps) for n in range(1, size + 1)]

    def parse_move(self, text: str) -> tuple[int, int]:
        """``(heap index, count)`` for ``text``; :class:`IllegalMove` for anything else."""
        token = parse_bracketed(text)
        heap_word, take_word = _HEAP_WORD.search(token), _TAKE_WORD.search(token)
        if heap_word and take_word:
            heap, count = int(heap_word.group(1)), int(take_word.group(1))
        else:
            numbers = _NUMBER.findall(token)
            if len(numbers) != 2:
                raise IllegalMove(
                    f"write the heap number and how many to take in brackets, like [2 3] (take 3 from heap 2); "
                    f"got {token[:40]!r}"
                )
            heap, count = int(numbers[0]), int(numbers[1])
        if not 1 <= heap <= len(self.heaps):
            raise IllegalMove(f"there is no heap {heap}; heaps are numbered 1 to {len(self.heaps)}")
        size = self.heaps[heap - 1]
        if size == 0:
            raise IllegalMove(f"heap {heap} is empty")
        if not 1 <= count <= size:
            raise IllegalMove(f"take from 1 to {size} objects from heap {heap}; got {count}")
        return heap - 1, count

    def apply(self, move: Any) -> None:
        """Take ``count`` objects from heap ``heap`` (``move = (heap index, count)``) for the current player."""
        heap, count = move
        self.heaps[int(heap)] -= int(count)
        self.last_mover = self.to_move
        self.to_move = 1 - self.to_move

    def is_over(self) -> bool:
        """Every heap is empty."""
        return not any(self.heaps)

    def outcome(self) -> dict[str, float]:
        """+1 for the player who took the last object, -1 for the other."""
        if not self.is_over() or self.last_mover is None:
            return dict.fromkeys(self.players, 0.0)
        return {p: (1.0 if seat == self.last_mover else -1.0) for seat, p in enumerate(self.players)}

    def observation(self, player: str) -> str:
        """The heaps (numbered from 1) and whose turn it is."""
        lines = [f"Heap {h + 1}: {size} " + "|" * size for h, size in enumerate(self.heaps)]
        turn = "your" if player == self.current_player() else "your opponent's"
        return f"You are {player}; it is {turn} turn.\n" + "\n".join(lines)

    def rules_text(self) -> str:
        """What a player is told at the start."""
        return (
            "Nim. Take turns removing one or more objects from a single heap; whoever takes the last object "
            "wins. Write your move as the heap number and how many to take in brackets, like [2 3] "
            "(take 3 from heap 2)."
        )

    def state_key(self) -> tuple[Any, ...]:
        """A hashable key of the position (for search caches)."""
        return (tuple(self.heaps), self.to_move)

    def clone(self) -> Nim:
        """An independent copy."""
        twin = Nim.__new__(Nim)
        twin.__dict__.update(self.__dict__)
        twin.heaps = list(self.heaps)
        return twin


class NimPerfectOpponent(GameOpponent):
    """Perfect Nim play by the nim-sum.

    When the nim-sum is not zero it moves to a position whose nim-sum is zero (a random one when
    several heaps allow it); when it is zero (a lost position) it takes one object from a random
    non-empty heap.

    Args:
        seed: the random choices.
    """

    name = "nim_perfect"

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The move, as ``[h n]``."""
        heap, count = self.choose(self.game.heaps)
        return f"[{heap + 1} {count}]"

    def choose(self, heaps: Sequence[int]) -> tuple[int, int]:
        """``(heap index, count)`` to take from ``heaps``."""
        total = nim_sum(heaps)
        if total:
            options = [(h, size - (size ^ total)) for h, size in enumerate(heaps) if size ^ total < size]
        else:
            options = [(h, 1) for h, size in enumerate(heaps) if size > 0]
        if not options:
            raise ValueError("no legal move: every heap is empty")
        return options[int(self.rng.integers(len(options)))]
