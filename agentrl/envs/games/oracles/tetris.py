"""The scripted expert of Tetris: a one-piece placement search with Pierre Dellacherie's heuristic.

From the privileged state (the board, the falling piece's type, rotation and position, and the game's own
rotation table ``state["shapes"]``) the oracle lists every placement it can reach by rotating in place,
then sliding sideways at the current height, then hard-dropping. Each resulting board is scored with
Dellacherie's features (landing height, eroded cells, row and column transitions, holes, wells) and the best
placement is chosen, ties going to the lowest rotation, then the leftmost column. The move returned is the next
step toward it: "rotate" until the rotation matches, "left"/"right" until the column matches, then "hard drop".
The oracle re-plans after every step, so gravity moving the piece down in between is harmless.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["SPEC", "oracle"]

SPEC: dict[str, Any] = {
    "name": "tetris",
    "env_name": "Tetris",
    "title": "Tetris",
    "description": "Steer, rotate and drop falling tetrominoes in a 10x20 well to clear 20 lines.",
    "max_steps": 1500,
    "frames_per_step": 8,
    "options": {"target": 20},
    "reward": "score",
}

Cells = list[tuple[int, int]]
# Dellacherie's weights.
W_LANDING = -4.500158825082766
W_ERODED = 3.4181268101392694
W_ROW_TRANS = -3.2178882868487753
W_COL_TRANS = -9.348695305445199
W_HOLES = -7.899265427351652
W_WELLS = -3.3855972247263626


def _cells(shape: Sequence[Sequence[int]], x: int, y: int) -> Cells:
    return [(x + dx, y + dy) for dx, dy in shape]


def _fits(board: list[list[int]], cells: Cells) -> bool:
    height, width = len(board), len(board[0])
    return all(0 <= cx < width and 0 <= cy < height and not board[cy][cx] for cx, cy in cells)


def evaluate(board: list[list[int]], cells: Cells) -> float:
    """Dellacherie's value of locking ``cells`` into ``board``."""
    height, width = len(board), len(board[0])
    grid = [row[:] for row in board]
    for cx, cy in cells:
        grid[cy][cx] = 1
    full = [r for r in range(height) if all(grid[r])]
    eroded = len(full) * sum(1 for _, cy in cells if cy in full)
    # Landing height: the piece's middle, counted from the floor.
    landing = height - (min(cy for _, cy in cells) + max(cy for _, cy in cells)) / 2.0
    grid = [row for r, row in enumerate(grid) if r not in full]
    grid = [[0] * width for _ in full] + grid
    row_trans = 0
    for row in grid:
        prev = 1
        for v in row:
            filled = 1 if v else 0
            row_trans += filled != prev
            prev = filled
        row_trans += prev != 1
    col_trans = holes = wells = 0
    for c in range(width):
        prev = 0
        for r in range(height):
            filled = 1 if grid[r][c] else 0
            col_trans += filled != prev
            prev = filled
        col_trans += prev != 1
    for c in range(width):
        seen = False
        for r in range(height):
            if grid[r][c]:
                seen = True
            elif seen:
                holes += 1
    for c in range(width):
        depth = 0
        for r in range(height):
            left = grid[r][c - 1] if c > 0 else 1
            right = grid[r][c + 1] if c < width - 1 else 1
            if not grid[r][c] and left and right:
                depth += 1
                wells += depth
            else:
                depth = 0
    return (
        W_LANDING * landing
        + W_ERODED * eroded
        + W_ROW_TRANS * row_trans
        + W_COL_TRANS * col_trans
        + W_HOLES * holes
        + W_WELLS * wells
    )


def plan(state: dict[str, Any]) -> tuple[int, int] | None:
    """The best reachable placement of the falling piece as (rotation, x), or None if there is none."""
    piece = state.get("piece")
    if not piece:
        return None
    board: list[list[int]] = state["board"]
    shapes = state["shapes"][piece["type"]]
    n = len(shapes)
    rot0, x0, y0 = int(piece["rotation"]), int(piece["x"]), int(piece["y"])
    width = len(board[0])
    best: tuple[int, int] | None = None
    best_key = (float("-inf"), 0, 0)
    for k in range(n):
        rot = (rot0 + k) % n
        # Rotating in place must never be blocked on the way.
        if any(not _fits(board, _cells(shapes[(rot0 + j) % n], x0, y0)) for j in range(1, k + 1)):
            continue
        shape = shapes[rot]
        for step in (-1, 1):
            x = x0 if step == -1 else x0 + 1
            while -4 < x < width + 4:
                if not _fits(board, _cells(shape, x, y0)):
                    break
                y = y0
                while _fits(board, _cells(shape, x, y + 1)):
                    y += 1
                # Ties go to the lowest rotation, then the leftmost column: a choice that does not depend on
                # where the piece is now, so re-planning after each step keeps the same target.
                key = (evaluate(board, _cells(shape, x, y)), -rot, -x)
                if key > best_key:
                    best, best_key = (rot, x), key
                x += step
    return best


def oracle(state: dict[str, Any], moves: Sequence[str]) -> str:
    """The next move toward the best placement: rotate, then slide, then hard drop."""
    target = plan(state)
    piece = state.get("piece")
    if target is None or not piece:
        return "hard drop" if "hard drop" in moves else moves[0]
    rot, x = target
    if int(piece["rotation"]) != rot:
        return "rotate"
    if int(piece["x"]) < x:
        return "right"
    if int(piece["x"]) > x:
        return "left"
    return "hard drop"
