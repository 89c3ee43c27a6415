"""The hidden-object browser game: the oracle finds everything by moves and by mouse, errors, determinism."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("playwright")

from agentrl.envs.games.harness import GameHarness, no_error
from agentrl.envs.games.oracles.hidden import SPEC

pytestmark = pytest.mark.browser

NAME = "hidden"


@pytest.fixture(scope="module")
def game() -> Iterator[GameHarness]:
    with GameHarness.for_tests(NAME) as harness:
        yield harness


def objects(out: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {o["id"]: o for o in out["state"]["objects"]}


def test_spec_and_scene(game: GameHarness) -> None:
    assert SPEC["name"] == NAME and SPEC["env_name"] == "HiddenObject"
    game.start(0)
    out = game.step(text=True)
    assert game.moves == [f"click {i}" for i in range(30)]
    for seed in range(6):
        game.start(seed)
        out = game.step(text=True)
        objs = objects(out)
        assert 20 <= len(objs) <= 30 and sorted(objs) == list(range(len(objs)))
        assert len({o["name"] for o in objs.values()}) == len(objs)
        assert len(out["milestones"]) == 6 and all(m.startswith("found ") for m in out["milestones"])
        covered = [t for t in out["state"]["targets"] if objs[t]["under"] is not None]
        assert len(covered) == 2 and not any(objs[t]["visible"] for t in covered)
        assert all(objs[t]["visible"] for t in out["state"]["targets"] if t not in covered)
        for t in covered:  # a covered target is absent from the player's description
            assert f"{t}: {objs[t]['name']}," not in out["text"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_wins_by_moves(game: GameHarness, seed: int) -> None:
    out, steps = game.play(seed, on_step=no_error)
    assert out["won"] and out["done"], (seed, out["score"])
    assert sorted(out["reached"]) == sorted(out["milestones"]) and out["score"] == 6
    assert steps == 8 and out["state"]["clicks"] == 8


def test_clue_is_shown_once(game: GameHarness) -> None:
    game.start(4)
    out = game.step(text=True)
    objs = objects(out)
    carrier, hidden = next(iter(out["state"]["clues"].items()))
    out = game.step(f"click {carrier}", text=True)
    note = f"the {objs[hidden]['name']} is under the {objs[objs[hidden]['under']]['name']}"
    assert note in out["text"] and out["score"] == 1
    out = game.step(f"click {objs[hidden]['under']}", text=True)  # lift the cover
    assert note not in out["text"] and objects(out)[hidden]["visible"]
    out = game.step(f"click {hidden}", text=True)
    assert out["score"] == 2 and out["reached"][-1] == f"found {objs[hidden]['name']}"


def test_oracle_wins_by_mouse(game: GameHarness) -> None:
    def check(move: str, inp: dict[str, Any] | None, before: dict[str, Any], after: dict[str, Any]) -> None:
        assert inp is not None and inp["type"] == "click", move
        assert after["state"]["clicks"] == before["state"]["clicks"] + 1

    out, steps = game.play(1, via="input", on_step=check)
    assert out["state"]["clicks"] == steps
    assert out["won"] and sorted(out["reached"]) == sorted(out["milestones"]) and steps == 8


def test_illegal_and_wrong_clicks(game: GameHarness) -> None:
    game.start(2)
    out = game.step(text=True)
    objs = objects(out)
    n = len(objs)
    for bad in ["click 30", "click -1", "jump", "click x"] + ([f"click {n}"] if n < 30 else []):
        after = game.step(bad, text=True)
        assert isinstance(after["error"], str) and after["error"], bad
        assert after["state"] == out["state"]
    # a wrong click (a visible non-target, or a covered target clicked blind) is legal and costs a click
    targets = out["state"]["targets"]
    wrong = next(o["id"] for o in objs.values() if o["visible"] and o["id"] not in targets and not o["cover"])
    after = game.step(f"click {wrong}", text=True)
    assert after["error"] is None and after["score"] == 0 and after["state"]["clicks"] == 1
    covered = next(t for t in out["state"]["targets"] if objs[t]["under"] is not None)
    after = game.step(f"click {covered}", text=True)
    assert after["error"] is None and after["score"] == 0 and after["state"]["clicks"] == 2
    # clicking a found target again is an error
    target = next(t for t in out["state"]["targets"] if objs[t]["under"] is None)
    assert game.step(f"click {target}", text=True)["score"] == 1
    again = game.step(f"click {target}", text=True)
    assert again["error"] and again["state"]["clicks"] == 3


def test_click_limit_ends_the_game(game: GameHarness) -> None:
    game.start(0, {"clicks": 6})
    out = game.step(text=True)
    wrong = next(
        o["id"]
        for o in out["state"]["objects"]
        if o["visible"] and o["id"] not in out["state"]["targets"] and not o["cover"]
    )
    for _ in range(6):
        out = game.step(f"click {wrong}", text=True)
    assert out["done"] and not out["won"]
    assert game.step(f"click {wrong}", text=True)["error"] == "the game is over"


def test_determinism(game: GameHarness) -> None:
    assert game.oracle_frames(7, 5) == game.oracle_frames(7, 5)
    assert game.oracle_frames(7, 5)[0] != game.oracle_frames(8, 5)[0]


def make_env(**kwargs: Any) -> Any:
    return gym.make(f"AgentRL/FlashGame-{SPEC['env_name']}-v0", **kwargs).unwrapped


@pytest.mark.parametrize(("action_mode", "seed"), [("text", 0), ("mouse_keyboard", 1)])
def test_env_oracle_wins(action_mode: str, seed: int) -> None:
    env = make_env(action_mode=action_mode, obs_type="pixels_text")
    try:
        obs, info = env.reset(seed=seed)
        assert obs["pixels"].shape == (84, 84, 3) and "Find:" in obs["text"]
        terminated = truncated = False
        while not (terminated or truncated):
            obs, _, terminated, truncated, info = env.step(env.oracle_action())
            assert info["action_error"] is None
        assert info["won"] and info["done_reason"] == "won" and info["milestones_done"] == 6
    finally:
        env.close()
