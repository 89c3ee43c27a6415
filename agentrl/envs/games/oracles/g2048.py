"""The scripted expert of 2048: a depth-2 expectimax on a snake-gradient heuristic.

The board is read from the game's privileged state (``state["board"]``, 4 rows of 4 tile values, 0 = empty).
For each legal move the oracle averages, over every empty cell that the new tile may land on (a 2, or a 4
when few cells are free), the best heuristic value reachable by one more move. The heuristic rewards big
tiles along a snake path that starts in the top-left corner, plus free cells. Ties go to the first move in
``moves`` order, so the oracle is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

__all__ = ["SPEC", "oracle"]

SPEC: dict[str, Any] = {
    "name": "g2048",
    "env_name": "Game2048",
    "title": "2048",
    "description": "Slide the tiles of a 4x4 board so that equal tiles merge, up to the 256 tile.",
    "max_steps": 600,
    "frames_per_step": 1,
    "options": {"target": 256},
    "reward": "score",
}

Board = tuple[int, ...]
DIRECTIONS = ("up", "down", "left", "right")
# Snake weights: the biggest tile in the top-left corner, then along row 0, back along row 1, ...
_SNAKE = (15, 14, 13, 12, 8, 9, 10, 11, 7, 6, 5, 4, 0, 1, 2, 3)
WEIGHTS = tuple(4.0**s for s in _SNAKE)
EMPTY_BONUS = 4.0**3
LOST = -1e18


def _lines(direction: str) -> list[list[int]]:
    """The board indices of each line, ordered toward the side the tiles slide to."""
    out = []
    for i in range(4):
        if direction == "left":
            out.append([i * 4 + j for j in range(4)])
        elif direction == "right":
            out.append([i * 4 + 3 - j for j in range(4)])
        elif direction == "up":
            out.append([j * 4 + i for j in range(4)])
        else:
            out.append([(3 - j) * 4 + i for j in range(4)])
    return out


LINES = {d: _lines(d) for d in DIRECTIONS}


@cache
def _slide(line: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """One line slid toward index 0: the new line and the points of its merges."""
    tiles = [v for v in line if v]
    out: list[int] = []
    points = 0
    i = 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            out.append(tiles[i] * 2)
            points += tiles[i] * 2
            i += 2
        else:
            out.append(tiles[i])
            i += 1
    out += [0] * (4 - len(out))
    return tuple(out), points


def apply(board: Board, direction: str) -> Board | None:
    """The board after sliding ``direction`` (no new tile), or None if nothing moves."""
    new = list(board)
    for idx in LINES[direction]:
        out, _ = _slide(tuple(board[k] for k in idx))
        for k, v in zip(idx, out, strict=True):
            new[k] = v
    result = tuple(new)
    return None if result == board else result


def evaluate(board: Board) -> float:
    """The heuristic value of a board: snake-weighted tiles plus a bonus per free cell."""
    return sum(w * v for w, v in zip(WEIGHTS, board, strict=True)) + EMPTY_BONUS * board.count(0)


def _best_after(board: Board) -> float:
    best = LOST
    for d in DIRECTIONS:
        nxt = apply(board, d)
        if nxt is not None:
            best = max(best, evaluate(nxt))
    return best


def _chance(board: Board) -> float:
    empty = [i for i, v in enumerate(board) if v == 0]
    if not empty:
        return _best_after(board)
    spawns = ((2, 0.9), (4, 0.1)) if len(empty) <= 4 else ((2, 1.0),)
    total = 0.0
    for i in empty:
        for value, p in spawns:
            child = (*board[:i], value, *board[i + 1 :])
            total += p * _best_after(child)
    return total / len(empty)


def oracle(state: dict[str, Any], moves: Sequence[str]) -> str:
    """The next move: the legal direction with the best expectimax value (depth 2)."""
    board: Board = tuple(int(v) for row in state["board"] for v in row)
    best_move, best_value = None, LOST
    for name in moves:
        if name not in LINES:
            continue
        nxt = apply(board, name)
        if nxt is None:
            continue
        value = _chance(nxt)
        if best_move is None or value > best_value:
            best_move, best_value = name, value
    return best_move if best_move is not None else moves[0]
