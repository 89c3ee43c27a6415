"""The escape-room browser game: moves, difficulties, the code, errors (every game's checks: test_games.py)."""

from __future__ import annotations

import pytest

from agentrl.envs.games.oracles.escape import SPEC, oracle
from agentrl.envs.games.page_driver import GamePageDriver, no_error
from tests.envs.games.game_fixtures import game_page

NAME = "escape"
game = game_page(NAME)


def test_spec_and_moves(game: GamePageDriver) -> None:
    assert SPEC["name"] == NAME and SPEC["env_name"] == "EscapeRoom"
    moves = game.start(0)["moves"]
    out = game.step(text=True)
    assert len(game.moves) == len(set(game.moves)) == 50
    assert {"click door", "click safe", "select key", "select keycard", "enter 0", "enter 9", "back"} <= set(game.moves)
    for difficulty, count in ((1, 6), (2, 10), (3, 12)):
        game.start(5, {"difficulty": difficulty})
        o = game.step(text=True)
        assert game.moves == moves and len(o["milestones"]) == count and o["milestones"][-1] == "escaped"
        assert len(o["state"]["rooms"]) == difficulty
        for room in o["state"]["rooms"]:
            assert 7 <= len(room["slots"]) <= 10 and len(room["code"]) == 4
    assert out["score"] == 0 and out["reached"] == [] and not out["done"]
    assert "Objects:" in out["text"] and "safe" not in out["text"].split("Objects:")[1].split(".")[0]


@pytest.mark.parametrize("difficulty", [1, 3])
def test_oracle_wins_other_difficulties(game: GamePageDriver, difficulty: int) -> None:
    out, steps = game.play(4, options={"difficulty": difficulty}, on_step=no_error)
    assert out["won"] and sorted(out["reached"]) == sorted(out["milestones"])
    assert steps == 14 * difficulty


def test_code_is_shown_only_right_after_the_look(game: GamePageDriver) -> None:
    game.start(3)
    out = game.step(text=True)
    code = out["state"]["rooms"][0]["code"]
    out = game.step(oracle(out["state"], game.moves), text=True)  # the first move looks at the code holder
    spaced = " ".join(code)
    assert spaced in out["text"] and out["reached"] == ["room 1: found the code"]
    out = game.step(oracle(out["state"], game.moves), text=True)
    assert spaced not in out["text"]
    # the safe is hidden until the chain reveals it: clicking it now is an error
    assert game.step("click safe", text=True)["error"]


def test_illegal_moves_change_nothing(game: GamePageDriver) -> None:
    game.start(1)
    out = game.step(text=True)
    absent = next(m for m in game.moves if m.startswith("click ") and m[6:] not in out["state"]["rooms"][0]["slots"])
    for bad in [absent, "click safe", "select key", "select keycard", "enter 3", "jump", "click moon"]:
        after = game.step(bad, text=True)
        assert isinstance(after["error"], str) and after["error"], bad
        assert after["state"] == out["state"]
    # a useless click is legal: it shows a message and changes nothing else
    useless = game.step("click door", text=True)
    assert useless["error"] is None and useless["score"] == 0 and "door" in useless["text"].lower()

