"""The Sokoban browser game: difficulties, clicks, walls, undo, deadlocks (every game's checks: test_games.py)."""

from __future__ import annotations

import random
from typing import Any

from agentrl.envs.games.oracles import sokoban
from agentrl.envs.games.page_driver import GamePageDriver, no_error
from tests.envs.games.game_fixtures import game_page

NAME = "sokoban"
CELL, HEADER, MAXN = 40, 40, 11  # the canvas layout of sokoban.js
DELTA = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
game = game_page(NAME)


def cell_of(state: dict[str, Any], index: int, direction: str) -> int:
    dr, dc = DELTA[direction]
    return index + dr * state["cols"] + dc


def test_spec() -> None:
    assert sokoban.SPEC["name"] == NAME
    assert sokoban.SPEC["env_name"] == "Sokoban"
    assert sokoban.SPEC["options"] == {"difficulty": 2}


def test_difficulties(game: GamePageDriver) -> None:
    for difficulty, boxes in zip(range(1, 6), (1, 2, 3, 3, 4), strict=True):
        info = game.start(7, {"difficulty": difficulty})
        state = game.step(frames=0)["state"]
        assert len(state["boxes"]) == len(state["goals"]) == boxes
        assert len(info["milestones"]) == boxes + 1 and info["score"] == 0 and not info["done"]
        out, steps = game.play(7, options={"difficulty": difficulty}, on_step=no_error)
        assert out["won"] and steps == len(out["state"]["solution"])


def test_click_moves_toward_the_click(game: GamePageDriver) -> None:
    game.start(0)
    state = game.step(frames=0)["state"]
    move = state["solution"][0]
    target = cell_of(state, state["player"], move)
    ox = (CELL * MAXN - state["cols"] * CELL) / 2
    oy = HEADER + (CELL * MAXN - state["rows"] * CELL) / 2
    x, y = ox + (target % state["cols"] + 0.5) * CELL, oy + (target // state["cols"] + 0.5) * CELL
    game.page.call(lambda p: p.mouse.click(x, y))
    after = game.step()["state"]
    assert after["history"] == [move] and after["player"] == target


def test_illegal_moves_change_nothing(game: GamePageDriver) -> None:
    info = game.start(1)
    assert info["moves"] == ["up", "down", "left", "right", "undo"]
    out = game.step(frames=0)
    for bad_move in ("jump", "undo"):
        bad = game.step(bad_move)
        assert bad["error"] and bad["state"] == out["state"]
    state = out["state"]
    walled = [m for m in DELTA if state["walls"][cell_of(state, state["player"], m)]]
    for _ in range(100):
        if walled:
            break
        out = game.step(sokoban.oracle(out["state"], info["moves"]))
        state = out["state"]
        walled = [m for m in DELTA if state["walls"][cell_of(state, state["player"], m)]]
    assert walled, "never next to a wall"
    bad = game.step(walled[0])
    assert bad["error"] and "wall" in bad["error"] and bad["state"] == out["state"]


def test_oracle_undoes_a_detour(game: GamePageDriver) -> None:
    info = game.start(2)
    out = game.step(frames=0)
    state = out["state"]
    detour = next(
        m
        for m in DELTA
        if m != state["solution"][0]
        and not state["walls"][cell_of(state, state["player"], m)]
        and cell_of(state, state["player"], m) not in state["boxes"]
    )
    out = game.step(detour)
    assert out["error"] is None
    assert sokoban.oracle(out["state"], info["moves"]) == "undo"
    out = game.step("undo")
    assert out["state"]["history"] == [] and out["state"]["player"] == state["player"]
    steps = 0
    while not out["done"] and steps < sokoban.SPEC["max_steps"]:
        out = game.step(sokoban.oracle(out["state"], info["moves"]))
        steps += 1
    assert out["won"]


def test_box_in_a_corner_ends_the_game(game: GamePageDriver) -> None:
    rng = random.Random(0)
    for seed in range(20):
        info = game.start(seed, {"difficulty": 1})
        out = game.step(frames=0)
        for _ in range(300):
            out = game.step(rng.choice(info["moves"][:4]))
            if out["done"]:
                break
        if out["done"] and not out["won"]:
            break
    assert out["done"] and not out["won"] and out["state"]["deadlock"]
    after = game.step("undo")
    assert after["error"] and after["state"] == out["state"]
    assert "corner" in game.step(frames=0, text=True)["text"]


def test_describe(game: GamePageDriver) -> None:
    assert game.start(0)["milestones"] == ["1 box on goal", "2 boxes on goal", "solved"]
    out = game.step(frames=0, text=True)
    text = out["text"]
    assert "Sokoban" in text and "@" in text and "$" in text and "0/2" in text
    assert "\n".join(out["state"]["grid"]) in text

