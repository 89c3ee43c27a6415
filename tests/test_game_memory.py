"""The Memory (concentration) browser game: the oracle wins by moves and by mouse, errors, determinism."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("playwright")

from agentrl.envs.games.harness import GameHarness, no_error
from agentrl.envs.games.oracles.memory import SPEC

pytestmark = pytest.mark.browser

NAME = "memory"


@pytest.fixture(scope="module")
def game() -> Iterator[GameHarness]:
    with GameHarness.for_tests(NAME) as harness:
        yield harness


def test_spec_and_moves(game: GameHarness) -> None:
    assert SPEC["name"] == NAME and SPEC["env_name"] == "Memory"
    game.start(0)
    out = game.step()
    assert game.moves == [f"flip {i}" for i in range(16)]
    assert out["milestones"] == ["2 pairs", "4 pairs", "6 pairs", "8 pairs"]
    assert sorted(out["state"]["layout"]) == sorted(list(range(8)) * 2)
    assert out["score"] == 0 and not out["done"]
    text = game.step(frames=0, state=False, text=True)["text"]
    assert "??" in text and "flips left 40" in text
    game.start(0, {"pairs": 12})
    out = game.step()
    assert len(out["state"]["layout"]) == 24 and out["milestones"] == ["3 pairs", "6 pairs", "9 pairs", "12 pairs"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_wins_by_moves(game: GameHarness, seed: int) -> None:
    out, steps = game.play(seed, on_step=no_error)
    assert out["won"] and out["reached"] == out["milestones"] and out["score"] == 8
    assert steps == 16


def test_oracle_wins_by_mouse(game: GameHarness) -> None:
    def check(move: str, inp: dict[str, Any] | None, before: dict[str, Any], after: dict[str, Any]) -> None:
        assert inp is not None and inp["type"] == "click"

    out, steps = game.play(3, via="input", on_step=check)
    assert out["won"] and steps == 16 and out["reached"] == out["milestones"]


def test_mismatch_turns_back_and_errors(game: GameHarness) -> None:
    game.start(4)
    out = game.step()
    layout = out["state"]["layout"]
    a = 0
    b = next(i for i in range(1, 16) if layout[i] != layout[a])
    partner = next(i for i in range(1, 16) if layout[i] == layout[a])
    out = game.step(f"flip {a}")
    again = game.step(f"flip {a}")  # the face-up first card of this turn
    assert isinstance(again["error"], str) and again["state"] == out["state"]
    out = game.step(f"flip {b}")
    assert out["state"]["open"] == [a, b] and out["score"] == 0  # a mismatch stays visible
    c = next(i for i in range(16) if i not in (a, b, partner))
    out = game.step(f"flip {c}")
    assert out["state"]["open"] == [c]  # ... until the next flip turns it back
    out = game.step(f"flip {next(i for i in range(16) if i != c and layout[i] == layout[c])}")
    assert out["score"] == 1 and out["state"]["open"] == []
    for bad in [f"flip {c}", "flip 16", "flip", "peek 3"]:
        after = game.step(bad)
        assert isinstance(after["error"], str) and after["error"], bad
        assert after["state"] == out["state"]


def test_flip_limit_ends_the_game(game: GameHarness) -> None:
    game.start(0, {"flips": 4})
    out = game.step()
    layout = out["state"]["layout"]
    wrong = next(i for i in range(1, 16) if layout[i] != layout[0])
    for move in ["flip 0", f"flip {wrong}", "flip 0", f"flip {wrong}"]:
        out = game.step(move)
        assert out["error"] is None
    assert out["done"] and not out["won"] and out["state"]["flipsLeft"] == 0
    assert game.step("flip 1")["error"] == "the game is over"


def frames(game: GameHarness, seed: int) -> list[str]:
    game.start(seed)
    outs = [game.step(capture=(84, 84))] + [game.step(f"flip {i}", capture=(84, 84)) for i in range(6)]
    return [hashlib.sha256(out["frame"].encode()).hexdigest() for out in outs]


def test_determinism(game: GameHarness) -> None:
    assert frames(game, 7) == frames(game, 7)
    assert frames(game, 7) != frames(game, 8)
    layouts = []
    for seed in (7, 8):
        game.start(seed)
        layouts.append(game.step()["state"]["layout"])
    assert layouts[0] != layouts[1]


def make_env(**kwargs: Any) -> Any:
    return gym.make(f"AgentRL/FlashGame-{SPEC['env_name']}-v0", **kwargs).unwrapped


@pytest.mark.parametrize(("action_mode", "seed"), [("text", 0), ("mouse_keyboard", 1)])
def test_env_oracle_wins(action_mode: str, seed: int) -> None:
    env = make_env(action_mode=action_mode, obs_type="pixels_text")
    try:
        obs, info = env.reset(seed=seed)
        assert obs["pixels"].shape == (84, 84, 3) and "Memory" in obs["text"]
        terminated = truncated = False
        steps = 0
        while not (terminated or truncated):
            obs, _, terminated, truncated, info = env.step(env.oracle_action())
            assert info["action_error"] is None
            steps += 1
        assert info["won"] and info["done_reason"] == "won" and steps == 16
    finally:
        env.close()
