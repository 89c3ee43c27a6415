"""The hidden-object browser game: the scene, clues, wrong clicks, the click limit (all games: test_games.py)."""

from __future__ import annotations

from typing import Any

from agentrl.envs.games.oracles.hidden import SPEC
from agentrl.envs.games.page_driver import GamePageDriver
from tests.envs.games.game_fixtures import game_page

NAME = "hidden"
game = game_page(NAME)


def objects(out: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {o["id"]: o for o in out["state"]["objects"]}


def test_spec_and_scene(game: GamePageDriver) -> None:
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


def test_clue_is_shown_once(game: GamePageDriver) -> None:
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


def test_illegal_and_wrong_clicks(game: GamePageDriver) -> None:
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


def test_click_limit_ends_the_game(game: GamePageDriver) -> None:
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

