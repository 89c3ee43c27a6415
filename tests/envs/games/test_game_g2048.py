"""The 2048 browser game: milestones, mouse swipes, illegal moves, game over (every game's checks: test_games.py)."""

from __future__ import annotations

from typing import Any

from agentrl.envs.games.oracles import g2048
from agentrl.envs.games.page_driver import GamePageDriver, no_error
from tests.envs.games.game_fixtures import game_page

NAME = "g2048"
game = game_page(NAME)


def test_spec() -> None:
    assert g2048.SPEC["name"] == NAME
    assert g2048.SPEC["env_name"] == "Game2048"
    assert g2048.SPEC["env_name"][0].isupper() and g2048.SPEC["env_name"].isalnum()


def test_swipe_with_the_mouse(game: GamePageDriver) -> None:
    game.start(0)
    before = game.step(frames=0)["state"]
    for direction in ("left", "up", "right", "down"):
        if g2048.apply(tuple(v for row in before["board"] for v in row), direction) is not None:
            break
    dx, dy = {"left": (-120, 0), "right": (120, 0), "up": (0, -120), "down": (0, 120)}[direction]

    async def swipe(p: Any) -> None:
        await p.mouse.move(200, 260)
        await p.mouse.down()
        await p.mouse.move(200 + dx, 260 + dy)
        await p.mouse.up()

    game.page.call(swipe)
    after = game.step()["state"]
    assert after["steps"] == 1 and after["board"] != before["board"]


def test_illegal_moves_change_nothing(game: GamePageDriver) -> None:
    info = game.start(1)
    out = game.step(frames=0)
    bad = game.step("jump")
    assert bad["error"] and bad["state"] == out["state"]
    for _ in range(200):
        board = tuple(v for row in out["state"]["board"] for v in row)
        stuck = [m for m in info["moves"] if g2048.apply(board, m) is None]
        if stuck:
            break
        out = game.step(g2048.oracle(out["state"], info["moves"]))
    assert stuck, "no position with a blocked direction"
    bad = game.step(stuck[0])
    assert bad["error"] and bad["state"] == out["state"] and bad["score"] == out["score"]


def test_game_over_refuses_moves(game: GamePageDriver) -> None:
    out, _ = game.play(0, on_step=no_error)
    assert out["done"]
    after = game.step("up")
    assert after["error"] and after["state"] == out["state"]


def test_describe_and_options(game: GamePageDriver) -> None:
    assert game.start(0)["milestones"] == ["tile 16", "tile 32", "tile 64", "tile 128", "tile 256"]
    info = game.start(0, {"target": 64})
    assert info["milestones"] == ["tile 16", "tile 32", "tile 64"]
    out = game.step(frames=0, text=True)
    assert "2048" in out["text"] and "64" in out["text"]

