"""The 2048 browser game: the oracle wins by moves and by keys, illegal moves, determinism."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentrl.envs.games.harness import GameHarness, no_error
from agentrl.envs.games.oracles import g2048

pytestmark = pytest.mark.browser

NAME = "g2048"


@pytest.fixture(scope="module")
def game() -> Iterator[GameHarness]:
    with GameHarness.for_tests(NAME) as harness:
        yield harness


def by_key(move: str, event: dict[str, Any] | None, before: dict[str, Any], after: dict[str, Any]) -> None:
    assert event is not None and event["type"] == "key"


def test_spec() -> None:
    assert g2048.SPEC["name"] == NAME
    assert g2048.SPEC["env_name"] == "Game2048"
    assert g2048.SPEC["env_name"][0].isupper() and g2048.SPEC["env_name"].isalnum()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_wins_by_moves(game: GameHarness, seed: int) -> None:
    out, steps = game.play(seed, on_step=no_error)
    assert out["won"] and out["done"]
    assert out["reached"] == out["milestones"] == ["tile 16", "tile 32", "tile 64", "tile 128", "tile 256"]
    assert steps < g2048.SPEC["max_steps"]
    assert out["state"]["max_tile"] == 256


def test_oracle_wins_by_keys(game: GameHarness) -> None:
    out, steps = game.play(3, via="input", on_step=by_key)
    assert out["won"] and out["reached"] == out["milestones"]
    assert steps < g2048.SPEC["max_steps"]


def test_swipe_with_the_mouse(game: GameHarness) -> None:
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


def test_illegal_moves_change_nothing(game: GameHarness) -> None:
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


def test_game_over_refuses_moves(game: GameHarness) -> None:
    out, _ = game.play(0, on_step=no_error)
    assert out["done"]
    after = game.step("up")
    assert after["error"] and after["state"] == out["state"]


def test_frames_are_deterministic(game: GameHarness) -> None:
    assert game.oracle_frames(5, 6) == game.oracle_frames(5, 6)
    assert game.oracle_frames(5, 6) != game.oracle_frames(6, 6)


def test_describe_and_options(game: GameHarness) -> None:
    info = game.start(0, {"target": 64})
    assert info["milestones"] == ["tile 16", "tile 32", "tile 64"]
    out = game.step(frames=0, text=True)
    assert "2048" in out["text"] and "64" in out["text"]


def test_gym_env() -> None:
    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the envs)
    env_id = f"AgentRL/FlashGame-{g2048.SPEC['env_name']}-v0"
    env = gym.make(env_id)
    try:
        obs, _ = env.reset(seed=4)
        assert obs.shape == (84, 84, 3)
        for _ in range(g2048.SPEC["max_steps"]):
            _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            if terminated or truncated:
                break
        assert terminated and info["done_reason"] == "won"
        assert info["milestones_done"] == info["milestones_total"] == 5
    finally:
        env.close()
