"""The Flash path: the SWF writer, the shipped .swf games in Ruffle, the ``swf`` game's oracle.

One page (Ruffle's wasm is compiled once per page, several seconds on a busy machine) plays every game.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrl.envs.games.harness import GameHarness
from agentrl.envs.games.oracles.swf import SPEC
from agentrl.envs.games.swf.games import GAMES, build_games, game_bytes, game_options, milestones


@pytest.mark.browser
def test_writer_is_deterministic(tmp_path: Path) -> None:
    for name in GAMES:
        data = game_bytes(name)
        assert data[:3] == b"FWS" and data[3] == 8
        assert int.from_bytes(data[4:8], "little") == len(data)
        assert data == game_bytes(name)
        spec = milestones(name)
        assert spec["win"] in [m["name"] for m in spec["milestones"]]
        assert set(spec["solution"]) <= set(spec["actions"])
    first = build_games(tmp_path)
    stamps = {n: (s.stat().st_mtime_ns, m.stat().st_mtime_ns) for n, (s, m) in first.items()}
    time.sleep(0.01)
    second = build_games(tmp_path)
    assert stamps == {n: (s.stat().st_mtime_ns, m.stat().st_mtime_ns) for n, (s, m) in second.items()}
    assert json.loads(first["keydoor"][1].read_text()) == milestones("keydoor")


@pytest.fixture(scope="module")
def game(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GameHarness]:
    folder = tmp_path_factory.mktemp("swf")
    build_games(folder)
    with GameHarness.for_tests("swf", roots={"swf": folder, "user": folder}) as harness:
        yield harness


def start(game: GameHarness, name: str) -> dict[str, Any]:
    """Start a shipped game (the harness steps single frames until Ruffle has loaded the movie)."""
    info = game.start(0, game_options(name))
    assert info["moves"] == list(milestones(name)["actions"]) and (info["width"], info["height"]) == (240, 180)
    out = game.step(frames=0)
    assert out["ready"] and out["reached"] == [] and not out["won"] and out["state"]["error"] is None
    return out


@pytest.mark.browser
@pytest.mark.parametrize("name", sorted(GAMES))
@pytest.mark.parametrize("mouse", [False, True], ids=["moves", "mouse"])
def test_oracle_wins(game: GameHarness, name: str, mouse: bool) -> None:
    def check(move: str, target: dict[str, Any] | None, before: dict[str, Any], after: dict[str, Any]) -> None:
        assert not mouse or (target is not None and target["type"] == "click")
        assert after["error"] is None

    start(game, name)  # the movie loads and starts clean
    out, _ = game.play(0, options=game_options(name), via="input" if mouse else "moves", on_step=check)
    spec = milestones(name)
    assert out["won"] and out["done"]
    assert out["reached"] == [m["name"] for m in spec["milestones"]] and out["score"] == len(spec["milestones"])
    assert out["state"]["solution_index"] == len(spec["solution"])


@pytest.mark.browser
def test_wrong_click_does_not_win(game: GameHarness) -> None:
    start(game, "keydoor")
    for _ in range(2):
        out = game.step("click door")
        assert out["error"] is None and out["reached"] == [] and not out["won"]
    assert out["state"]["solution_index"] == 0
    bad = game.step("click window", frames=1)
    assert "unknown move" in bad["error"] and bad["state"]["history"] == ["click door", "click door"]
    out = game.step("click key")
    assert out["reached"] == ["key picked up"] and not out["won"]


@pytest.mark.browser
def test_frames_are_deterministic(game: GameHarness) -> None:
    def frames() -> list[str]:
        start(game, "clicker")
        hashes = []
        for move in (None, "click button"):
            out = game.step(move, capture=(84, 84))
            hashes.append(hashlib.sha256(base64.b64decode(out["frame"])).hexdigest())
        return hashes

    first, second = frames(), frames()
    assert first == second and first[0] != first[1]
    text = game.step(frames=1, text=True)["text"]
    assert "click button" in text and "bar 1" in text


@pytest.mark.browser
def test_gym_env_plays_clicker() -> None:
    pytest.importorskip("playwright")
    env_module = pytest.importorskip("agentrl.envs.games.env")
    import gymnasium as gym

    assert "AgentRL/FlashGame-SWF-v0" in gym.registry
    del env_module
    env = gym.make("AgentRL/FlashGame-SWF-v0", timeout_s=45)
    try:
        env.reset(seed=0)
        total, terminated = 0.0, False
        for _ in range(SPEC["max_steps"]):
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            total += float(reward)
            if terminated or truncated:
                break
        assert terminated and info["won"] and total == 4.0
    finally:
        env.close()
