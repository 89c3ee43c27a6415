"""The Flash path: the SWF writer, the shipped .swf games in Ruffle, the ``swf`` game's oracle, and a real
third-party Flash game: Evader (Maurycy Zarzycki, code MIT, graphics CC0).

Evader is the author's own build, shipped unchanged in ``assets/games/thirdparty`` with its milestones JSON and
licence file; the oracle plays the JSON's ``solution``. One page (Ruffle's wasm is compiled once per page,
several seconds on a busy machine) plays every game. (Every game's checks, the env included: test_games.py.)
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

from agentrl.envs.games.page_driver import GamePageDriver
from agentrl.envs.games.ruffle import swf_size
from agentrl.envs.games.swf.games import (
    GAMES,
    THIRDPARTY,
    THIRDPARTY_DIR,
    build_games,
    game_bytes,
    game_options,
    milestones,
)

EVADER_SHA256 = "2a3e4a0ac10d59174d06906c33ae9d7e8e723d43d64911fc3de1d4948ffc50bc"


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


@pytest.mark.parametrize("name", THIRDPARTY)
def test_shipped_files_and_licence(name: str, tmp_path: Path) -> None:
    data = game_bytes(name)
    assert data[:3] in (b"FWS", b"CWS")
    spec = milestones(name)
    assert list(swf_size(data)) == spec["size"]
    assert spec["win"] in [m["name"] for m in spec["milestones"]]
    assert spec["solution"] and set(spec["solution"]) <= set(spec["actions"])
    licence = (THIRDPARTY_DIR / f"{name}.LICENSE").read_text()
    assert "MIT License" in licence and "github.com/" in licence
    assert game_options(name)["swf_url"] == f"/swf/{name}.swf"
    swf, meta = build_games(tmp_path)[name]
    assert swf.read_bytes() == data and meta.is_file()


def test_evader_is_the_authors_build() -> None:
    assert hashlib.sha256(game_bytes("evader")).hexdigest() == EVADER_SHA256
    licence = (THIRDPARTY_DIR / "evader.LICENSE").read_text()
    assert "Maurycy Zarzycki" in licence and "Creative Commons 0" in licence
    assert "EvidentlyCube/LegacyGames" in licence


@pytest.fixture(scope="module")
def game(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GamePageDriver]:
    folder = tmp_path_factory.mktemp("swf")
    build_games(folder)
    with GamePageDriver.for_tests("swf", roots={"swf": folder, "user": folder}) as driver:
        yield driver


def start(game: GamePageDriver, name: str) -> dict[str, Any]:
    """Start a shipped game (the driver steps single frames until Ruffle has loaded the movie): the writer's
    games are 240 x 180, a third-party one has its own size in its milestones JSON."""
    info = game.start(0, game_options(name))
    assert info["moves"] == list(milestones(name)["actions"])
    assert [info["width"], info["height"]] == milestones(name)["size"]
    out = game.step(frames=0)
    assert out["ready"] and out["reached"] == [] and not out["won"] and out["state"]["error"] is None
    return out


@pytest.mark.parametrize("name", [*sorted(GAMES), *THIRDPARTY])
@pytest.mark.parametrize("mouse", [False, True], ids=["moves", "mouse"])
def test_oracle_wins(game: GamePageDriver, name: str, mouse: bool) -> None:
    def check(move: str, target: dict[str, Any] | None, before: dict[str, Any], after: dict[str, Any]) -> None:
        assert not mouse or (target is not None and target["type"] == "click")
        assert after["error"] is None

    start(game, name)  # the movie loads and starts clean
    out, _ = game.play(0, options=game_options(name), via="input" if mouse else "moves", on_step=check)
    spec = milestones(name)
    assert out["won"] and out["done"]
    assert out["reached"] == [m["name"] for m in spec["milestones"]] and out["score"] == len(spec["milestones"])
    assert out["state"]["solution_index"] == len(spec["solution"])


def test_wrong_click_does_not_win(game: GamePageDriver) -> None:
    start(game, "keydoor")
    for _ in range(2):
        out = game.step("click door")
        assert out["error"] is None and out["reached"] == [] and not out["won"]
    assert out["state"]["solution_index"] == 0
    bad = game.step("click window", frames=1)
    assert "unknown move" in bad["error"] and bad["state"]["history"] == ["click door", "click door"]
    out = game.step("click key")
    assert out["reached"] == ["key picked up"] and not out["won"]


def test_frames_are_deterministic(game: GamePageDriver) -> None:
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


def test_evader_idle_and_stray_clicks_do_not_win(game: GamePageDriver) -> None:
    start(game, "evader")
    out = game.step(frames=120)  # the title screen waits for its button
    assert out["error"] is None and out["reached"] == [] and not out["won"]
    for _ in range(3):
        out = game.step("read the controls")  # a click on the text, not on the button
        assert out["error"] is None and out["reached"] == [] and not out["won"]
    assert out["state"]["solution_index"] == 0
