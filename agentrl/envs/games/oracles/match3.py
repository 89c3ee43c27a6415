"""Match-3 oracle: a greedy expert over every legal swap.

For each swap that lines up 3+ tiles, the cascade is simulated on the board from ``state()``: runs
clear, tiles fall, and the cells that would be refilled from the game's rng stay unknown (they never
match). The swap with the most immediate points wins; ties go to the lower swap on the board (it
stirs more tiles and so tends to set off more cascades), then to the first in the move list.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SPEC", "oracle", "simulate"]

SPEC = {
    "name": "match3",
    "env_name": "Match3",
    "title": "Match-3",
    "description": "Swap neighbouring tiles to line up 3+ of a colour; reach the score targets within 30 moves.",
    "max_steps": 60,
    "frames_per_step": 1,
    "options": {"moves": 30, "colors": 6, "targets": [300, 600, 1000, 1500]},
    "reward": "score",
}

Board = list[list[int | None]]


def _parse(name: str, size: int) -> tuple[int, int, int, int] | None:
    parts = name.split()
    if len(parts) != 4 or parts[0] != "swap" or parts[3] not in ("right", "down"):
        return None
    r, c = int(parts[1]), int(parts[2])
    r2, c2 = (r + 1, c) if parts[3] == "down" else (r, c + 1)
    if max(r, c, r2, c2) >= size:
        return None
    return r, c, r2, c2


def _matches(board: Board) -> set[tuple[int, int]]:
    size = len(board)
    hit: set[tuple[int, int]] = set()
    for r in range(size):
        for c in range(size - 2):
            v = board[r][c]
            if v is not None and board[r][c + 1] == v and board[r][c + 2] == v:
                hit.update({(r, c), (r, c + 1), (r, c + 2)})
    for c in range(size):
        for r in range(size - 2):
            v = board[r][c]
            if v is not None and board[r + 1][c] == v and board[r + 2][c] == v:
                hit.update({(r, c), (r + 1, c), (r + 2, c)})
    return hit


def simulate(board: Board, move: str) -> int:
    """The points ``move`` scores from the known tiles (refills unknown); 0 when it lines up nothing."""
    size = len(board)
    parsed = _parse(move, size)
    if parsed is None:
        return 0
    r1, c1, r2, c2 = parsed
    b: Board = [list(row) for row in board]
    if b[r1][c1] == b[r2][c2]:
        return 0
    b[r1][c1], b[r2][c2] = b[r2][c2], b[r1][c1]
    points, chain = 0, 0
    while True:
        hit = _matches(b)
        if not hit:
            return points
        chain += 1
        points += 10 * len(hit)
        for r, c in hit:
            b[r][c] = None
        for c in range(size):
            column = [b[r][c] for r in range(size) if b[r][c] is not None]
            padding: list[int | None] = [None] * (size - len(column))
            column = padding + column
            for r in range(size):
                b[r][c] = column[r]


def oracle(state: dict, moves: Sequence[str]) -> str:
    """The legal swap with the highest simulated immediate score."""
    board: Board = state["board"]
    size = len(board)
    best, best_key = moves[0], (-1, -1)
    for name in moves:
        points = simulate(board, name)
        if points <= 0:
            continue
        parsed = _parse(name, size)
        assert parsed is not None
        key = (points, parsed[2])
        if key > best_key:
            best, best_key = name, key
    return best
