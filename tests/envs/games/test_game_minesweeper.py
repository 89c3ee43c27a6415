"""The Minesweeper browser game: double-click flags, a safe first reveal, mines, errors (all games: test_games.py)."""

from __future__ import annotations

from typing import Any

import pytest

from agentrl.envs.games.oracles import minesweeper
from agentrl.envs.games.page_driver import GamePageDriver, no_error
from tests.envs.games.game_fixtures import game_page

NAME = "minesweeper"
MILESTONES = ["first reveal", "25% cleared", "50% cleared", "75% cleared", "cleared"]
game = game_page(NAME)


def pointer(game: GamePageDriver, move: str) -> dict[str, Any]:
    """Play ``move`` with the mouse (its click / double-click), then one frame."""
    inp = game.input_for(move)
    assert inp is not None and inp["type"] in ("click", "dblclick")
    game.send_input(inp)
    return game.step()


def test_spec() -> None:
    assert minesweeper.SPEC["name"] == NAME
    assert minesweeper.SPEC["env_name"] == "Minesweeper"


def test_double_click_flags_without_revealing(game: GamePageDriver) -> None:
    game.start(0)
    out = pointer(game, "flag 0 0")
    assert out["state"]["flagged"][0][0] == 1 and out["score"] == 0 and out["state"]["mines"] is None
    out = pointer(game, "reveal 0 0")  # a flagged cell cannot be revealed
    assert out["score"] == 0 and out["state"]["revealed"][0][0] == 0
    out = pointer(game, "flag 0 0")
    assert out["state"]["flagged"][0][0] == 0
    out = pointer(game, "reveal 0 0")
    assert out["score"] > 0 and out["reached"][0] == "first reveal"


@pytest.mark.parametrize("seed", range(5))
def test_first_reveal_is_safe(game: GamePageDriver, seed: int) -> None:
    game.start(seed)
    r, c = [(0, 0), (8, 8), (4, 4), (0, 5), (7, 1)][seed]
    out = game.step(f"reveal {r} {c}")
    assert out["error"] is None and not out["done"] and out["score"] >= 1
    mines = out["state"]["mines"]
    assert sum(map(sum, mines)) == 10
    assert not any(
        mines[rr][cc] for rr in range(r - 1, r + 2) for cc in range(c - 1, c + 2) if 0 <= rr < 9 and 0 <= cc < 9
    )


def test_illegal_moves_change_nothing(game: GamePageDriver) -> None:
    info = game.start(1)
    assert len(info["moves"]) == 2 * 81 and info["moves"][0] == "reveal 0 0" and info["moves"][81] == "flag 0 0"
    out = game.step("reveal 4 4")
    for bad_move in ("jump", "reveal 9 0", "reveal 4 4", "flag 4 4"):
        bad = game.step(bad_move)
        assert bad["error"] and bad["state"] == out["state"], bad_move
    hidden = next((r, c) for r in range(9) for c in range(9) if not out["state"]["revealed"][r][c])
    out = game.step(f"flag {hidden[0]} {hidden[1]}")
    bad = game.step(f"reveal {hidden[0]} {hidden[1]}")
    assert bad["error"] and "flagged" in bad["error"] and bad["state"] == out["state"]


def test_a_mine_ends_the_game(game: GamePageDriver) -> None:
    game.start(2)
    out = game.step("reveal 4 4")
    mines = out["state"]["mines"]
    r, c = next((r, c) for r in range(9) for c in range(9) if mines[r][c])
    out = game.step(f"reveal {r} {c}", text=True)
    assert out["done"] and not out["won"] and out["state"]["exploded"] == [r, c]
    assert "game over" in out["text"]
    after = game.step("reveal 0 0")
    assert after["error"] and after["state"] == out["state"]


def test_options_and_describe(game: GamePageDriver) -> None:
    assert game.start(0)["milestones"] == MILESTONES
    info = game.start(0, {"rows": 16, "cols": 16, "mines": 40})
    assert len(info["moves"]) == 2 * 256 and info["milestones"] == MILESTONES
    out = game.step("reveal 8 8", text=True)
    assert sum(map(sum, out["state"]["mines"])) == 40
    assert "16x16" in out["text"] and "*" not in out["text"]
    out, _ = game.play(1, options={"rows": 16, "cols": 16, "mines": 40}, on_step=no_error)
    assert out["won"] and out["score"] == 216

