"""The Tetris browser game: the state, gravity, illegal moves, game over (every game's checks: test_games.py)."""

from __future__ import annotations

from agentrl.envs.games.oracles import tetris
from agentrl.envs.games.page_driver import GamePageDriver
from tests.envs.games.game_fixtures import game_page

NAME = "tetris"
game = game_page(NAME)


def test_spec() -> None:
    assert tetris.SPEC["name"] == NAME and tetris.SPEC["env_name"] == "Tetris"
    assert tetris.SPEC["frames_per_step"] == 8


def test_state_and_gravity(game: GamePageDriver) -> None:
    game.start(0)
    out = game.step(frames=0)
    state = out["state"]
    assert len(state["board"]) == 20 and len(state["board"][0]) == 10
    assert state["piece"]["type"] in state["shapes"] and state["next"] in state["shapes"]
    assert (state["piece"]["rotation"], state["piece"]["x"], state["piece"]["y"]) == (0, 3, 0)
    # 500 ms a row at level 1: 30 frames of 1/60 s move the piece down one row, noops included.
    out = game.step("noop", frames=30)
    assert out["error"] is None and out["state"]["piece"]["y"] == 1
    out = game.step("soft drop", frames=0)
    assert out["state"]["piece"]["y"] == 2
    out = game.step("hard drop", frames=0)
    assert out["state"]["pieces"] == 2 and out["state"]["piece"]["type"] == state["next"]
    assert sum(v != 0 for row in out["state"]["board"] for v in row) == 4


def test_illegal_moves_change_nothing(game: GamePageDriver) -> None:
    game.start(1)
    out = game.step(frames=0)
    bad = game.step("teleport", frames=0)
    assert bad["error"] and bad["state"] == out["state"]
    for _ in range(12):
        nxt = game.step("left", frames=0)
        if nxt["error"]:
            break
        out = nxt
    assert nxt["error"] and "left" in nxt["error"] and nxt["state"] == out["state"]
    # A rotation into the wall is refused: the vertical I pushed to the right wall cannot turn flat there.
    for seed in range(2, 40):
        game.start(seed)
        out = game.step(frames=0)
        if out["state"]["piece"]["type"] == "I":
            break
    assert out["state"]["piece"]["type"] == "I"
    out = game.step("rotate", frames=0)
    while not (nxt := game.step("right", frames=0))["error"]:
        out = nxt
    bad = game.step("rotate", frames=0)
    assert bad["error"] and "rotate" in bad["error"] and bad["state"] == out["state"]


def test_game_over_refuses_moves(game: GamePageDriver) -> None:
    game.start(0)
    out = game.step(frames=0)
    for _ in range(100):
        out = game.step("hard drop", frames=0)
        if out["done"]:
            break
    assert out["done"] and not out["won"]
    after = game.step("left", frames=0)
    assert after["error"] and after["state"] == out["state"]


def test_describe_and_options(game: GamePageDriver) -> None:
    assert game.start(0)["milestones"] == ["1 line", "5 lines", "10 lines", "20 lines"]
    info = game.start(0, {"target": 40})
    assert info["milestones"] == ["1 line", "5 lines", "10 lines", "20 lines", "30 lines", "40 lines"]
    out = game.step(frames=0, text=True)
    assert "Next piece" in out["text"] and "@" in out["text"]

