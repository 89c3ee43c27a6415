"""Connect Four: the rules for :class:`~agentrl.envs.multiagent.base.TextGameEnv`, and a search opponent.

Six rows by seven columns; a piece dropped in a column falls to the lowest empty cell. Four in a
row (horizontally, vertically or diagonally) wins; a full board is a draw. Columns are numbered
1-7 as displayed; a move is written ``[4]``. ``player_0`` plays X and, unless ``random_first`` is
set, moves first.

The board is kept as two bitboards (one per player; seven bits per column, the bottom row in the
lowest bit, the seventh bit a sentinel), so cloning and win checks are cheap enough for search.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agentrl.envs.multiagent.base import IllegalMove, parse_bracketed
from agentrl.envs.multiagent.opponents import GameOpponent

__all__ = ["ConnectFour", "ConnectFourOpponent", "connect_four_heuristic"]

ROWS = 6
COLUMNS = 7
_STRIDE = ROWS + 1  # bits per column: six cells and a sentinel
_CELLS = ROWS * COLUMNS
_CENTRE_FIRST = (3, 2, 4, 1, 5, 0, 6)  # search order: central columns are usually best
_CENTRE_MASK = sum(1 << (3 * _STRIDE + r) for r in range(ROWS))


def _bit(column: int, row: int) -> int:
    return 1 << (column * _STRIDE + row)


def _windows() -> tuple[int, ...]:
    """Every four-cell line on the board (69 of them), as bit masks."""
    masks = []
    for c in range(COLUMNS):
        for r in range(ROWS):
            for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
                cells = [(c + i * dc, r + i * dr) for i in range(4)]
                if all(0 <= cc < COLUMNS and 0 <= rr < ROWS for cc, rr in cells):
                    masks.append(sum(_bit(cc, rr) for cc, rr in cells))
    return tuple(masks)


_WINDOWS = _windows()
_WINDOW_SCORE = (0, 0, 2, 5, 0)  # by pieces of one colour in an otherwise empty window
_PARITY_BONUS = 6  # a three whose empty cell lies on the owner's good row parity
_ODD_ROWS = sum(_bit(c, r) for c in range(COLUMNS) for r in range(0, ROWS, 2))  # rows 1, 3, 5 from the bottom
_EVEN_ROWS = sum(_bit(c, r) for c in range(COLUMNS) for r in range(1, ROWS, 2))


def _has_four(bits: int) -> bool:
    """Whether a player's bitboard holds four in a row (vertical, horizontal, both diagonals)."""
    for shift in (1, _STRIDE, _STRIDE - 1, _STRIDE + 1):
        pairs = bits & (bits >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def _evaluate(mine: int, theirs: int) -> int:
    """A static score of a position for the owner of ``mine`` (the player to move).

    Open two- and three-in-a-rows and pieces in the centre column count; so does the parity of a
    three's empty cell (the classic Connect Four zugzwang rule: the first player profits from
    threats on odd rows, counted from 1 at the bottom, the second from threats on even rows).
    """
    mine_first = mine.bit_count() == theirs.bit_count()  # equal counts: the mover moved first
    my_rows, their_rows = (_ODD_ROWS, _EVEN_ROWS) if mine_first else (_EVEN_ROWS, _ODD_ROWS)
    score = 0
    for window in _WINDOWS:
        a = window & mine
        b = window & theirs
        if a:
            if not b:
                n = a.bit_count()
                score += _WINDOW_SCORE[n]
                if n == 3 and (window ^ a) & my_rows:
                    score += _PARITY_BONUS
        elif b:
            n = b.bit_count()
            score -= _WINDOW_SCORE[n]
            if n == 3 and (window ^ b) & their_rows:
                score -= _PARITY_BONUS
    return score + 3 * ((mine & _CENTRE_MASK).bit_count() - (theirs & _CENTRE_MASK).bit_count())


class ConnectFour:
    """Connect Four rules and state.

    Example:
        >>> game = ConnectFour()
        >>> game.reset(np.random.default_rng(0))
        >>> for column in (4, 5, 4, 5, 4, 5, 4):
        ...     game.apply(game.parse_move(f"[{column}]"))
        >>> game.is_over(), game.outcome()
        (True, {'player_0': 1.0, 'player_1': -1.0})
    """

    name = "connect_four"
    players = ("player_0", "player_1")
    marks = {"player_0": "X", "player_1": "O"}

    def __init__(self, random_first: bool = False) -> None:
        self.random_first = random_first
        self.bits = [0, 0]  # one bitboard per seat
        self.heights = [0] * COLUMNS
        self.to_move = 0
        self.moves = 0
        self.winner: int | None = None  # seat index of the winner

    def reset(self, rng: np.random.Generator) -> None:
        """Empty the board; pick who starts."""
        self.bits = [0, 0]
        self.heights = [0] * COLUMNS
        self.moves = 0
        self.winner = None
        self.to_move = int(rng.integers(2)) if self.random_first else 0

    def current_player(self) -> str:
        """Whose turn it is."""
        return self.players[self.to_move]

    def legal_columns(self) -> list[int]:
        """The columns (0-6) that are not full; none once the game is over."""
        if self.is_over():
            return []
        return [c for c in range(COLUMNS) if self.heights[c] < ROWS]

    def legal_moves(self) -> list[str]:
        """The open columns, as ``[c]`` (1-7)."""
        return [f"[{c + 1}]" for c in self.legal_columns()]

    def parse_move(self, text: str) -> int:
        """The column index (0-6) ``text`` names; :class:`IllegalMove` for anything else."""
        token = parse_bracketed(text)
        if not token.isdigit() or not 1 <= int(token) <= COLUMNS:
            raise IllegalMove(f"write a column number from 1 to {COLUMNS} in brackets, like [4]; got {token[:40]!r}")
        column = int(token) - 1
        if self.is_over():
            raise IllegalMove("the game is over")
        if self.heights[column] >= ROWS:
            raise IllegalMove(f"column {column + 1} is full")
        return column

    def apply(self, move: Any) -> None:
        """Drop the current player's piece into column ``move`` (0-6)."""
        column = int(move)
        seat = self.to_move
        self.bits[seat] |= _bit(column, self.heights[column])
        self.heights[column] += 1
        self.moves += 1
        if _has_four(self.bits[seat]):
            self.winner = seat
        self.to_move = 1 - seat

    def cell(self, row: int, column: int) -> str | None:
        """The mark at ``row`` (0 = bottom) and ``column`` (0-6): ``"X"``, ``"O"`` or ``None``."""
        bit = _bit(column, row)
        for seat, player in enumerate(self.players):
            if self.bits[seat] & bit:
                return self.marks[player]
        return None

    def is_over(self) -> bool:
        """Four in a row, or the board is full."""
        return self.winner is not None or self.moves >= _CELLS

    def outcome(self) -> dict[str, float]:
        """+1 for four in a row, -1 for the other, 0 each for a full board."""
        if self.winner is None:
            return dict.fromkeys(self.players, 0.0)
        return {p: (1.0 if seat == self.winner else -1.0) for seat, p in enumerate(self.players)}

    def board_text(self) -> str:
        """The board, top row first (``.`` empty), with the column numbers underneath."""
        lines = []
        for row in reversed(range(ROWS)):
            lines.append(" ".join(self.cell(row, c) or "." for c in range(COLUMNS)))
        lines.append(" ".join(str(c + 1) for c in range(COLUMNS)))
        return "\n".join(lines)

    def observation(self, player: str) -> str:
        """The board, the column numbers and the player's mark."""
        return f"You play {self.marks[player]}.\n{self.board_text()}"

    def rules_text(self) -> str:
        """What a player is told at the start."""
        return (
            "Connect Four on a board of 6 rows and 7 columns. Take turns dropping a piece into a column; "
            "it falls to the lowest empty cell. Four of your pieces in a row (horizontally, vertically or "
            "diagonally) wins; a full board is a draw. Write your move as a column number (1-7) in brackets, "
            "like [4]."
        )

    def state_key(self) -> tuple[Any, ...]:
        """A hashable key of the position (for search caches)."""
        return (self.bits[0], self.bits[1], self.to_move)

    def clone(self) -> ConnectFour:
        """An independent copy."""
        twin = ConnectFour.__new__(ConnectFour)
        twin.random_first = self.random_first
        twin.bits = list(self.bits)
        twin.heights = list(self.heights)
        twin.to_move = self.to_move
        twin.moves = self.moves
        twin.winner = self.winner
        return twin


def connect_four_heuristic(game: ConnectFour, player: str) -> float:
    """A static score in (-1, 1) of ``game`` for ``player`` (open 2/3-in-a-rows, centre control).

    Usable as :class:`~agentrl.envs.multiagent.opponents.MinimaxOpponent`'s ``heuristic``;
    :class:`ConnectFourOpponent` searches faster on the bitboards directly.
    """
    seat = game.players.index(player)
    return 0.9 * math.tanh(_evaluate(game.bits[seat], game.bits[1 - seat]) / 50.0)


_WIN = 1_000_000  # beyond any static score


def _negamax(mine: int, theirs: int, heights: list[int], depth: int, alpha: float, beta: float) -> float:
    """The value for the player to move (owner of ``mine``): about ``±_WIN`` for a forced result, static below.

    Wins on the spot end the search; two open threats of the opponent lose; a single threat must be
    blocked, and that forced reply is searched without spending depth (so tactics past the depth
    limit are still seen).
    """
    open_columns = [c for c in _CENTRE_FIRST if heights[c] < ROWS]
    if not open_columns:
        return 0  # full board: draw
    for c in open_columns:  # a win on the spot ends the search (looked for even at depth 0)
        if _has_four(mine | _bit(c, heights[c])):
            return _WIN + depth
    forced = [c for c in open_columns if _has_four(theirs | _bit(c, heights[c]))]
    if len(forced) > 1:
        return -(_WIN + depth - 1)  # the opponent wins next move whatever we block
    if forced:
        open_columns = forced
    elif depth <= 0:
        return _evaluate(mine, theirs)
    else:
        depth -= 1
    best = -math.inf
    for c in open_columns:
        row = heights[c]
        heights[c] = row + 1
        value = -_negamax(theirs, mine | _bit(c, row), heights, depth, -beta, -alpha)
        heights[c] = row
        if value > best:
            best = value
            if value > alpha:
                alpha = value
                if alpha >= beta:
                    break
    return best


class ConnectFourOpponent(GameOpponent):
    """Alpha-beta search on bitboards with a static evaluation at the depth limit.

    It takes a win on the spot, blocks the opponent's immediate win, and otherwise plays the best
    move of a ``depth``-ply search (open two/three-in-a-rows, the row parity of threes and centre
    control score the leaves; forced blocks are searched past the depth limit; ties are broken at
    random). At the default depth a move takes a few milliseconds (at most about 10 ms seen) and it
    does not lose to random play; ``depth=6`` is stronger at up to about 0.1 s a move.

    Args:
        depth: plies to search (the move itself counts as one).
        seed: breaks ties between equally good moves.
    """

    name = "connect_four_search"

    def __init__(self, depth: int = 4, seed: int | None = None) -> None:
        super().__init__(seed)
        if depth < 1:
            raise ValueError(f"depth must be at least 1, got {depth}")
        self.depth = depth

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The chosen column, as ``[c]``."""
        return f"[{self.choose(self.game) + 1}]"

    def choose(self, game: ConnectFour) -> int:
        """The column (0-6) to play in ``game``."""
        columns = game.legal_columns()
        if not columns:
            raise ValueError("no legal move: the game is over")
        mine, theirs = game.bits[game.to_move], game.bits[1 - game.to_move]
        heights = list(game.heights)
        wins = [c for c in columns if _has_four(mine | _bit(c, heights[c]))]
        if wins:
            return self._pick(wins)
        threats = [c for c in columns if _has_four(theirs | _bit(c, heights[c]))]
        if threats:
            return self._pick(threats)  # with two threats the game is lost anyway
        order = [columns[i] for i in self.rng.permutation(len(columns))]
        return self._search_root(mine, theirs, heights, order, self.depth)[1]

    @staticmethod
    def _search_root(mine: int, theirs: int, heights: list[int], order: list[int], depth: int) -> tuple[float, int]:
        """The best value and column of a ``depth``-ply search (the first in ``order`` among equals)."""
        best_value, best_column = -math.inf, order[0]
        alpha = -math.inf
        for c in order:
            row = heights[c]
            heights[c] = row + 1
            value = -_negamax(theirs, mine | _bit(c, row), heights, depth - 1, -math.inf, -alpha)
            heights[c] = row
            if value > best_value:
                best_value, best_column = value, c
                alpha = max(alpha, value)
        return best_value, best_column

    def _pick(self, columns: list[int]) -> int:
        return columns[int(self.rng.integers(len(columns)))]
