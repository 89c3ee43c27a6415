"""Tic-tac-toe: the rules for :class:`~agentrl.envs.multiagent.base.TextGameEnv`.

Cells are numbered 1-9, row by row; a move is written ``[5]``. ``player_0`` plays X and, unless
``random_first`` is set, moves first.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from agentrl.envs.multiagent.base import IllegalMove, parse_bracketed

__all__ = ["TicTacToe"]

_LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


class TicTacToe:
    """Tic-tac-toe rules and state.

    Example:
        >>> game = TicTacToe()
        >>> game.reset(np.random.default_rng(0))
        >>> for cell in (1, 4, 2, 5, 3):
        ...     game.apply(game.parse_move(f"[{cell}]"))
        >>> game.is_over(), game.outcome()
        (True, {'player_0': 1.0, 'player_1': -1.0})
    """

    name = "tictactoe"
    players = ("player_0", "player_1")
    marks = {"player_0": "X", "player_1": "O"}

    def __init__(self, random_first: bool = False) -> None:
        self.random_first = random_first
        self.board: list[str | None] = [None] * 9
        self.to_move = 0

    def reset(self, rng: np.random.Generator) -> None:
        """Empty the board; pick who starts."""
        self.board = [None] * 9
        self.to_move = int(rng.integers(2)) if self.random_first else 0

    def current_player(self) -> str:
        """Whose turn it is."""
        return self.players[self.to_move]

    def legal_moves(self) -> list[str]:
        """The empty cells, as ``[n]``."""
        return [f"[{i + 1}]" for i, cell in enumerate(self.board) if cell is None]

    def parse_move(self, text: str) -> int:
        """The cell index (0-8) ``text`` names; :class:`IllegalMove` for anything else."""
        token = parse_bracketed(text)
        if not token.isdigit() or not 1 <= int(token) <= 9:
            raise IllegalMove(f"write a cell number from 1 to 9 in brackets, like [5]; got {token[:40]!r}")
        index = int(token) - 1
        if self.board[index] is not None:
            raise IllegalMove(f"cell {index + 1} is taken")
        return index

    def apply(self, move: Any) -> None:
        """Mark the cell for the current player."""
        self.board[int(move)] = self.marks[self.current_player()]
        self.to_move = 1 - self.to_move

    def winner_mark(self) -> str | None:
        """``"X"``, ``"O"`` or ``None``."""
        for a, b, c in _LINES:
            if self.board[a] is not None and self.board[a] == self.board[b] == self.board[c]:
                return self.board[a]
        return None

    def is_over(self) -> bool:
        """A line is complete or the board is full."""
        return self.winner_mark() is not None or all(cell is not None for cell in self.board)

    def outcome(self) -> dict[str, float]:
        """+1 for three in a row, -1 for the other, 0 each for a full board."""
        mark = self.winner_mark()
        if mark is None:
            return dict.fromkeys(self.players, 0.0)
        return {p: (1.0 if self.marks[p] == mark else -1.0) for p in self.players}

    def observation(self, player: str) -> str:
        """The board (empty cells show their numbers) and the player's mark."""
        cells = [c if c is not None else str(i + 1) for i, c in enumerate(self.board)]
        rows = [" | ".join(cells[r * 3 : r * 3 + 3]) for r in range(3)]
        return f"You play {self.marks[player]}.\n" + "\n---------\n".join(rows)

    def rules_text(self) -> str:
        """What a player is told at the start."""
        return (
            "Tic-tac-toe. Take turns marking cells 1-9 (row by row); three in a row wins. "
            "Write your move as a cell number in brackets, like [5]."
        )

    def state_key(self) -> tuple[Any, ...]:
        """A hashable key of the position (for search caches)."""
        return (tuple(self.board), self.to_move)

    def clone(self) -> TicTacToe:
        """An independent copy."""
        twin = copy.copy(self)
        twin.board = list(self.board)
        return twin
